package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/rebootwatch/rebootwatch/internal/buildinfo"
)

const (
	goreleaserFile = "../../.goreleaser.yaml"
	templateFile   = "../../deploy/krew/rebootwatch.yaml"
)

// goreleaserConfig is the part of .goreleaser.yaml the checks read.
type goreleaserConfig struct {
	Version  int `json:"version"`
	Builds   []goreleaserBuild
	Archives []struct {
		ID              string   `json:"id"`
		IDs             []string `json:"ids"`
		NameTemplate    string   `json:"name_template"`
		Formats         []string `json:"formats"`
		FormatOverrides []struct {
			GOOS    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
	}
	Checksum struct {
		NameTemplate string `json:"name_template"`
		Algorithm    string `json:"algorithm"`
	}
}

type goreleaserBuild struct {
	ID      string   `json:"id"`
	Main    string   `json:"main"`
	Binary  string   `json:"binary"`
	GOOS    []string `json:"goos"`
	GOARCH  []string `json:"goarch"`
	Ldflags []string `json:"ldflags"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	b, err := os.ReadFile(goreleaserFile)
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return c
}

// archiveName renders an archive's name template (GoReleaser's template
// fields .Version, .Os, .Arch) and adds the format's extension.
func archiveName(t *testing.T, nameTemplate, format, version, goos, goarch string) string {
	t.Helper()
	tpl, err := template.New("name").Option("missingkey=error").Parse(nameTemplate)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, map[string]string{"Version": version, "Os": goos, "Arch": goarch}); err != nil {
		t.Fatalf("name_template %q: %v", nameTemplate, err)
	}
	return b.String() + "." + format
}

// releaseArchives is every archive .goreleaser.yaml builds for version:
// file name -> the binary at its root and its os/arch.
type releaseArchive struct{ bin, goos, goarch string }

func releaseArchives(t *testing.T, c goreleaserConfig, version string) map[string]releaseArchive {
	t.Helper()
	builds := map[string]goreleaserBuild{}
	for _, b := range c.Builds {
		builds[b.ID] = b
	}
	out := map[string]releaseArchive{}
	for _, a := range c.Archives {
		if len(a.IDs) != 1 {
			t.Fatalf("archive %s packs builds %v: want one binary per archive", a.ID, a.IDs)
		}
		b, ok := builds[a.IDs[0]]
		if !ok {
			t.Fatalf("archive %s packs build %s, which is not defined", a.ID, a.IDs[0])
		}
		for _, goos := range b.GOOS {
			for _, goarch := range b.GOARCH {
				formats := a.Formats
				for _, o := range a.FormatOverrides {
					if o.GOOS == goos {
						formats = o.Formats
					}
				}
				if len(formats) != 1 {
					t.Fatalf("archive %s %s: formats %v", a.ID, goos, formats)
				}
				bin := b.Binary
				if goos == "windows" {
					bin += ".exe"
				}
				out[archiveName(t, a.NameTemplate, formats[0], version, goos, goarch)] = releaseArchive{bin, goos, goarch}
			}
		}
	}
	return out
}

// TestGoreleaserMatrix: .goreleaser.yaml builds the three binaries for
// linux, darwin and windows on amd64 and arm64, each with the release
// version in internal/buildinfo, one archive per binary and platform, and a
// sha256 checksums file named as hack/krew reads it.
func TestGoreleaserMatrix(t *testing.T) {
	c := readGoreleaser(t)
	if c.Version != 2 {
		t.Errorf("config version %d, want 2 (GoReleaser v2)", c.Version)
	}
	var ids []string
	for _, b := range c.Builds {
		ids = append(ids, b.ID)
		if b.Main != "./cmd/"+b.Binary || b.ID != b.Binary {
			t.Errorf("build %s: main %s binary %s", b.ID, b.Main, b.Binary)
		}
		if !slices.Equal(b.GOOS, []string{"linux", "darwin", "windows"}) || !slices.Equal(b.GOARCH, []string{"amd64", "arm64"}) {
			t.Errorf("build %s: goos %v goarch %v", b.ID, b.GOOS, b.GOARCH)
		}
		if !slices.ContainsFunc(b.Ldflags, func(f string) bool { return strings.Contains(f, "-X "+buildinfo.LdflagsVar+"=v{{ .Version }}") }) {
			t.Errorf("build %s: ldflags %v do not set %s", b.ID, b.Ldflags, buildinfo.LdflagsVar)
		}
	}
	sort.Strings(ids)
	if !slices.Equal(ids, []string{"kubectl-rebootwatch", "rebootwatch", "rebootwatch-agent"}) {
		t.Errorf("builds %v", ids)
	}
	if n := len(releaseArchives(t, c, "1.2.3")); n != 18 {
		t.Errorf("%d archives, want 3 binaries × 6 platforms", n)
	}
	if c.Checksum.NameTemplate != "checksums.txt" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v", c.Checksum)
	}
	// The image's build sets the same variable.
	if b, err := os.ReadFile("../../deploy/Dockerfile"); err != nil || !strings.Contains(string(b), "-X "+buildinfo.LdflagsVar+"=$VERSION") {
		t.Errorf("deploy/Dockerfile does not set %s (%v)", buildinfo.LdflagsVar, err)
	}
}

// TestKrewManifestNamesReleaseArchives: rendered for a release, the krew
// manifest's platforms are exactly the platforms .goreleaser.yaml builds
// kubectl-rebootwatch for, each uri naming the archive GoReleaser writes
// for it, and each bin the binary at that archive's root.
func TestKrewManifestNamesReleaseArchives(t *testing.T) {
	archives := releaseArchives(t, readGoreleaser(t), "1.2.3")
	tpl, err := os.ReadFile(templateFile)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for name := range archives {
		sums[name] = fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	}
	manifest, err := Render(tpl, "v1.2.3", sums)
	if err != nil {
		t.Fatal(err)
	}
	var p Plugin
	if err := yaml.UnmarshalStrict(manifest, &p); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, pl := range p.Spec.Platforms {
		goos, goarch := pl.OSArch()
		name := path.Base(pl.URI)
		a, ok := archives[name]
		if !ok {
			t.Errorf("%s/%s: uri %s names no archive .goreleaser.yaml builds", goos, goarch, pl.URI)
			continue
		}
		if a.goos != goos || a.goarch != goarch || a.bin != pl.Bin || pl.Sha256 != sums[name] {
			t.Errorf("%s/%s: archive %s is %s/%s with %s; manifest bin %s sha256 %s", goos, goarch, name, a.goos, a.goarch, a.bin, pl.Bin, pl.Sha256)
		}
		got = append(got, goos+"/"+goarch)
	}
	for _, a := range archives {
		if a.bin == "kubectl-rebootwatch" || a.bin == "kubectl-rebootwatch.exe" {
			want = append(want, a.goos+"/"+a.goarch)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("krew platforms %v, kubectl-rebootwatch built for %v", got, want)
	}
}

// fakeExecutable is the header of an executable for goos/goarch: all
// Validate reads of a binary.
func fakeExecutable(t *testing.T, goos, goarch string) []byte {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	switch goos {
	case "linux":
		m := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
		h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: uint32(elf.EV_CURRENT), Ehsize: 64}
		copy(h.Ident[:], []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
		_ = binary.Write(&b, le, h)
	case "darwin":
		cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[goarch]
		_ = binary.Write(&b, le, macho.FileHeader{Magic: macho.Magic64, Cpu: cpu, Type: macho.TypeExec})
		_ = binary.Write(&b, le, uint32(0))
	case "windows":
		m := map[string]uint16{"amd64": pe.IMAGE_FILE_MACHINE_AMD64, "arm64": pe.IMAGE_FILE_MACHINE_ARM64}[goarch]
		dos := make([]byte, 128) // debug/pe reads 96 bytes of DOS header
		copy(dos, "MZ")
		le.PutUint32(dos[0x3c:], 128)
		b.Write(dos)
		b.WriteString("PE\x00\x00")
		_ = binary.Write(&b, le, pe.FileHeader{Machine: m, Characteristics: 0x22})
	}
	if goos2, goarch2, err := executableFor(b.Bytes()); err != nil || goos2 != goos || goarch2 != goarch {
		t.Fatalf("fake %s/%s executable reads as %s/%s (%v)", goos, goarch, goos2, goarch2, err)
	}
	return b.Bytes()
}

// writeArchive writes an archive in GoReleaser's layout: the files at its root.
func writeArchive(t *testing.T, file string, files map[string][]byte) {
	t.Helper()
	var b bytes.Buffer
	if strings.HasSuffix(file, ".zip") {
		zw := zip.NewWriter(&b)
		for name, data := range files {
			w, err := zw.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		gz := gzip.NewWriter(&b)
		tw := tar.NewWriter(gz)
		for name, data := range files {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(data); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeDist writes the archives .goreleaser.yaml builds for version, each
// with its binary's header and a README, and checksums.txt, as GoReleaser
// lays out dist/; mutate may change an archive's files first.
func fakeDist(t *testing.T, version string, mutate func(name string, files map[string][]byte)) (string, map[string]string) {
	t.Helper()
	dist := t.TempDir()
	var sums bytes.Buffer
	for name, a := range releaseArchives(t, readGoreleaser(t), version) {
		files := map[string][]byte{a.bin: fakeExecutable(t, a.goos, a.goarch), "README.md": []byte("# rebootwatch\n")}
		if mutate != nil {
			mutate(name, files)
		}
		writeArchive(t, filepath.Join(dist, name), files)
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(b), name)
	}
	if err := os.WriteFile(filepath.Join(dist, "checksums.txt"), sums.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	parsed, err := ReadChecksums(&sums)
	if err != nil {
		t.Fatal(err)
	}
	return dist, parsed
}

// TestRenderAndValidate runs the renderer and the validator `make release`
// runs on archives in GoReleaser's layout: a good dist passes, and each way
// the manifest and the archives can disagree is caught.
func TestRenderAndValidate(t *testing.T) {
	tpl, err := os.ReadFile(templateFile)
	if err != nil {
		t.Fatal(err)
	}
	dist, sums := fakeDist(t, "1.2.3", nil)
	manifest, err := Render(tpl, "v1.2.3", sums)
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := Validate(manifest, dist)
	if err != nil || len(platforms) != 6 {
		t.Fatalf("good dist: %d platforms, %v", len(platforms), err)
	}
	if !strings.Contains(string(manifest), "version: v1.2.3") {
		t.Errorf("manifest version:\n%s", manifest)
	}

	// An archive changed after the checksums were taken.
	victim := filepath.Join(dist, "kubectl-rebootwatch_v1.2.3_darwin_arm64.tar.gz")
	if err := os.WriteFile(victim, []byte("not the archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(manifest, dist); err == nil || !strings.Contains(err.Error(), "darwin/arm64: archive kubectl-rebootwatch_v1.2.3_darwin_arm64.tar.gz has sha256") {
		t.Errorf("changed archive: %v", err)
	}
	// An archive missing from dist/.
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(manifest, dist); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing archive: %v", err)
	}
	// An archive the checksums do not list (not built).
	delete(sums, "kubectl-rebootwatch_v1.2.3_windows_arm64.zip")
	if _, err := Render(tpl, "v1.2.3", sums); err == nil || !strings.Contains(err.Error(), "kubectl-rebootwatch_v1.2.3_windows_arm64.zip, which the checksums do not list") {
		t.Errorf("unlisted archive: %v", err)
	}

	for _, tc := range []struct {
		name   string
		mutate func(name string, files map[string][]byte)
		want   string
	}{
		{"binary missing", func(name string, files map[string][]byte) {
			if name == "kubectl-rebootwatch_v1.2.3_linux_arm64.tar.gz" {
				delete(files, "kubectl-rebootwatch")
			}
		}, "linux/arm64: kubectl-rebootwatch_v1.2.3_linux_arm64.tar.gz holds no kubectl-rebootwatch at its root"},
		{"binary in a directory", func(name string, files map[string][]byte) {
			if name == "kubectl-rebootwatch_v1.2.3_windows_amd64.zip" {
				files["kubectl-rebootwatch/kubectl-rebootwatch.exe"] = files["kubectl-rebootwatch.exe"]
				delete(files, "kubectl-rebootwatch.exe")
			}
		}, "windows/amd64: kubectl-rebootwatch_v1.2.3_windows_amd64.zip holds no kubectl-rebootwatch.exe at its root"},
		{"another platform's binary", func(name string, files map[string][]byte) {
			if name == "kubectl-rebootwatch_v1.2.3_darwin_amd64.tar.gz" {
				files["kubectl-rebootwatch"] = fakeExecutable(t, "darwin", "arm64")
			}
		}, "darwin/amd64: kubectl-rebootwatch in kubectl-rebootwatch_v1.2.3_darwin_amd64.tar.gz is a darwin/arm64 executable"},
	} {
		dist, sums := fakeDist(t, "1.2.3", tc.mutate)
		manifest, err := Render(tpl, "v1.2.3", sums)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, err := Validate(manifest, dist); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
