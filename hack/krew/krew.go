package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// Plugin is the part of krew's Plugin manifest (v1alpha2) rendered and checked.
type Plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Platforms        []Platform `json:"platforms"`
	} `json:"spec"`
}

// Platform is one os/arch of the manifest.
type Platform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	Sha256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

// OSArch is the platform's os/arch selector.
func (p Platform) OSArch() (string, string) {
	return p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
}

// ReadChecksums parses GoReleaser's checksums file ("<sha256>  <file>" per
// line) into file name -> sha256.
func ReadChecksums(r io.Reader) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 || !sha256Hex.MatchString(f[0]) {
			return nil, fmt.Errorf("checksums: malformed line %q", sc.Text())
		}
		sums[f[1]] = f[0]
	}
	return sums, sc.Err()
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Render renders the manifest template (krew-release-bot's syntax: the tag
// as {{ .TagName }}, each platform's archive as {{addURIAndSha "<uri>"
// .TagName}}) for tag, taking each archive's sha256 from sums by the uri's
// file name, as the bot takes it from the downloaded archive.
func Render(tpl []byte, tag string, sums map[string]string) ([]byte, error) {
	funcs := template.FuncMap{"addURIAndSha": func(uri, tagName string) (string, error) {
		u, err := template.New("uri").Parse(uri)
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		if err := u.Execute(&b, map[string]string{"TagName": tagName}); err != nil {
			return "", err
		}
		name := path.Base(b.String())
		sum, ok := sums[name]
		if !ok {
			return "", fmt.Errorf("the manifest names %s, which the checksums do not list (not built?)", name)
		}
		return fmt.Sprintf("uri: %s\n    sha256: %s", b.String(), sum), nil
	}}
	t, err := template.New("krew").Funcs(funcs).Option("missingkey=error").Parse(string(tpl))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Validate checks a rendered manifest against the archives in dist: every
// platform's uri names an archive there, whose sha256 is the manifest's,
// that holds the platform's bin at its root, and that bin is an executable
// for the platform's os and arch. It returns the manifest's platforms.
func Validate(manifest []byte, dist string) ([]Platform, error) {
	var p Plugin
	if err := yaml.UnmarshalStrict(manifest, &p); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if len(p.Spec.Platforms) == 0 {
		return nil, errors.New("manifest: no platforms")
	}
	var errs []error
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		goos, goarch := pl.OSArch()
		key := goos + "/" + goarch
		if goos == "" || goarch == "" || seen[key] {
			errs = append(errs, fmt.Errorf("platform %q: empty or duplicate", key))
			continue
		}
		seen[key] = true
		if err := validatePlatform(pl, dist); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return p.Spec.Platforms, errors.Join(errs...)
}

func validatePlatform(pl Platform, dist string) error {
	goos, goarch := pl.OSArch()
	name := path.Base(pl.URI)
	b, err := os.ReadFile(filepath.Join(dist, name))
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != pl.Sha256 {
		return fmt.Errorf("archive %s has sha256 %s, the manifest says %s", name, got, pl.Sha256)
	}
	if !strings.Contains(name, "_"+goos+"_"+goarch+".") {
		return fmt.Errorf("archive %s is not named for %s/%s", name, goos, goarch)
	}
	bin, err := extract(name, b, pl.Bin)
	if err != nil {
		return err
	}
	gotOS, gotArch, err := executableFor(bin)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", pl.Bin, name, err)
	}
	if gotOS != goos || gotArch != goarch {
		return fmt.Errorf("%s in %s is a %s/%s executable", pl.Bin, name, gotOS, gotArch)
	}
	return nil
}

// extract returns the file bin at the root of the archive (tar.gz or zip).
func extract(name string, archive []byte, bin string) ([]byte, error) {
	switch {
	case strings.HasSuffix(name, ".tar.gz"):
		gz, err := gzip.NewReader(bytes.NewReader(archive))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if path.Clean(h.Name) == bin && h.Typeflag == tar.TypeReg {
				if h.Mode&0o111 == 0 {
					return nil, fmt.Errorf("%s in %s is not executable (mode %o)", bin, name, h.Mode)
				}
				return io.ReadAll(tr)
			}
		}
	case strings.HasSuffix(name, ".zip"):
		zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, f := range zr.File {
			if path.Clean(f.Name) == bin {
				rc, err := f.Open()
				if err != nil {
					return nil, err
				}
				defer rc.Close()
				return io.ReadAll(rc)
			}
		}
	default:
		return nil, fmt.Errorf("%s is neither .tar.gz nor .zip", name)
	}
	return nil, fmt.Errorf("%s holds no %s at its root", name, bin)
}

// executableFor reads an executable's header: ELF (linux), Mach-O (darwin)
// or PE (windows), on amd64 or arm64.
func executableFor(b []byte) (goos, goarch string, err error) {
	r := bytes.NewReader(b)
	if f, err := elf.NewFile(r); err == nil {
		switch f.Machine {
		case elf.EM_X86_64:
			return "linux", "amd64", nil
		case elf.EM_AARCH64:
			return "linux", "arm64", nil
		}
		return "linux", f.Machine.String(), nil
	}
	if f, err := macho.NewFile(r); err == nil {
		switch f.Cpu {
		case macho.CpuAmd64:
			return "darwin", "amd64", nil
		case macho.CpuArm64:
			return "darwin", "arm64", nil
		}
		return "darwin", f.Cpu.String(), nil
	}
	if f, err := pe.NewFile(r); err == nil {
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			return "windows", "amd64", nil
		case pe.IMAGE_FILE_MACHINE_ARM64:
			return "windows", "arm64", nil
		}
		return "windows", fmt.Sprintf("machine %#x", f.Machine), nil
	}
	return "", "", errors.New("not an ELF, Mach-O or PE executable")
}
