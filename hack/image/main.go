// Command image builds rebootwatch-agent's OCI image without a Docker
// daemon and without pulling a base image (`make image`, `make release`):
//
//	cd hack/image && go run . -root ../.. -out ../../dist [-version v1.2.3]
//
// It cross-builds cmd/rebootwatch-agent for linux/amd64 and linux/arm64 as
// the release does (CGO_ENABLED=0, -trimpath, -ldflags "-s -w -X
// …/internal/buildinfo.Version=VERSION", .goreleaser.yaml) and assembles,
// on an empty base, one image per architecture: a layer of /etc/passwd and
// /etc/group with the non-root user nonroot (65532), the CA bundle of the
// build machine (Debian's ca-certificates, /etc/ssl/certs/ca-certificates.crt)
// and /home/nonroot, then a layer holding the static /rebootwatch-agent. The
// config runs it as 65532:65532 with that entrypoint and carries the OCI
// labels source, version, revision and created (also as annotations of the
// manifests and of the index of both architectures). It writes, in -out:
//
//	rebootwatch-agent-image/      an OCI image layout; index.json names the
//	                              multi-arch index, ref.name VERSION
//	rebootwatch-agent-image.tar   the same layout as a tar (oci-archive)
//	rebootwatch-agent-image.tag   VERSION, the tag to push it under
//
// Every time in the image is the commit's (SOURCE_DATE_EPOCH, else the
// commit time of HEAD), so the same tree and version give the same digests.
// VERSION defaults to the snapshot version `make release` gives a tree
// without a tag at HEAD: v<last tag, else 0.0.0>-snapshot-<short commit>.
//
// It lives in its own module so that go-containerregistry never enters the
// product's dependency graph. It must not push, pull or write outside -out
// (and a temporary directory for the binaries).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// name is the image's, and the stem of what it writes in -out.
	name = "rebootwatch-agent"
	// ldflagsVar is internal/buildinfo.LdflagsVar (a separate module cannot
	// import an internal package; hack/image's test keeps them equal).
	ldflagsVar = "github.com/rebootwatch/rebootwatch/internal/buildinfo.Version"
	// source is org.opencontainers.image.source.
	source = "https://github.com/rebootwatch/rebootwatch"
	// uid and gid of the user the image runs as (distroless's nonroot).
	uid = 65532
	gid = 65532
)

// arches are the image's platforms, all linux.
var arches = []string{"amd64", "arm64"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hack/image:", err)
		os.Exit(1)
	}
}

// options are the command line's.
type options struct {
	root, out, version, revision, caFile, goBin string
	epoch                                       time.Time
}

func run() error {
	var o options
	flag.StringVar(&o.root, "root", "../..", "the repository's root (the main module)")
	flag.StringVar(&o.out, "out", "../../dist", "where to write the layout, the tar and the tag")
	flag.StringVar(&o.version, "version", "", "the version stamped in the binary, labels and tag (default: the snapshot version of HEAD)")
	flag.StringVar(&o.revision, "revision", "", "the commit (default: git rev-parse HEAD)")
	flag.StringVar(&o.caFile, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the PEM bundle of CA certificates to put in the image (Debian's ca-certificates)")
	flag.StringVar(&o.goBin, "go", "go", "the go command that builds the binaries")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	var err error
	if o.root, err = filepath.Abs(o.root); err != nil {
		return err
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	if err := o.fromGit(); err != nil {
		return err
	}
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return fmt.Errorf("the image's CA certificates: %w (install Debian's ca-certificates: make deps, or name a PEM bundle with -ca-certificates)", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return fmt.Errorf("%s holds no PEM certificate", o.caFile)
	}

	tmp, err := os.MkdirTemp("", "rebootwatch-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	base, err := baseLayer(ca, o.epoch)
	if err != nil {
		return err
	}
	annotations := map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
		"org.opencontainers.image.created":  o.epoch.UTC().Format(time.RFC3339),
		"org.opencontainers.image.title":    name,
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range arches {
		bin := filepath.Join(tmp, arch, name)
		if err := o.build(arch, bin); err != nil {
			return err
		}
		img, err := o.image(arch, bin, base, annotations)
		if err != nil {
			return fmt.Errorf("%s image: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: "linux", Architecture: arch},
			},
		})
	}
	idx, ok := mutate.Annotations(idx, annotations).(v1.ImageIndex)
	if !ok {
		return fmt.Errorf("annotating the index: not an index")
	}
	return o.write(idx)
}

// git runs git in the repository and returns its trimmed output.
func (o *options) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", o.root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// fromGit fills in what the flags left unset: the revision, the time
// (SOURCE_DATE_EPOCH, else HEAD's commit time) and the snapshot version.
func (o *options) fromGit() error {
	var err error
	if o.revision == "" {
		if o.revision, err = o.git("rev-parse", "HEAD"); err != nil {
			return fmt.Errorf("the image's revision (or set -revision): %w", err)
		}
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = o.git("log", "-1", "--format=%ct", o.revision); err != nil {
			return fmt.Errorf("the image's time (or set SOURCE_DATE_EPOCH): %w", err)
		}
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", epoch, err)
	}
	o.epoch = time.Unix(sec, 0).UTC()
	if o.version == "" {
		short, err := o.git("rev-parse", "--short", o.revision)
		if err != nil {
			return fmt.Errorf("the snapshot version (or set -version): %w", err)
		}
		last := "v0.0.0"
		if tag, err := o.git("describe", "--tags", "--abbrev=0", o.revision); err == nil && tag != "" {
			last = tag
		}
		o.version = last + "-snapshot-" + short
	}
	if strings.ContainsAny(o.version, " /:@") || !strings.HasPrefix(o.version, "v") {
		return fmt.Errorf("version %q: want vX.Y.Z[-suffix], usable as an image tag", o.version)
	}
	return nil
}

// build cross-builds the agent for linux/arch as the release does.
func (o *options) build(arch, bin string) error {
	cmd := exec.Command(o.goBin, "build", "-trimpath",
		"-ldflags", "-s -w -X "+ldflagsVar+"="+o.version,
		"-o", bin, "./cmd/rebootwatch-agent")
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build linux/%s: %w", arch, err)
	}
	return nil
}

// entry is one file or directory of a layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	body     []byte
	dir      bool
}

// layer is a gzipped tar of entries, every time set to mtime: the same
// entries give the same bytes (compress/gzip writes no time or name).
// gzip's default level, not its best: for the agent's two binaries the
// best compression took 6.2 s of CPU against 1.8 s for a layer 0.35%
// larger (docs/release.md).
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// baseLayer is what the image holds besides the binary, the same for every
// architecture: the users, the CA bundle and the non-root user's home.
func baseLayer(ca []byte, mtime time.Time) (v1.Layer, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid)
	return layer([]entry{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: ca},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, uid: uid, gid: gid, dir: true},
	}, mtime)
}

// image is the agent's image for linux/arch: the base layer, the binary
// layer and the config that runs it as nonroot.
func (o *options) image(arch, bin string, base v1.Layer, annotations map[string]string) (v1.Image, error) {
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	binLayer, err := layer([]entry{{name: name, mode: 0o755, body: body}}, o.epoch)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.epoch}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "hack/image: /etc/passwd, /etc/group (nonroot 65532), CA certificates, /home/nonroot",
		}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "hack/image: /" + name + " " + o.version + " (CGO_ENABLED=0 go build -trimpath)",
		}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, created
	labels := map[string]string{}
	for k, v := range annotations {
		labels[k] = v
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", uid, gid),
		Entrypoint:   []string{"/" + name},
		WorkingDir:   "/",
		Env:          []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8081/tcp": {}},
		Labels:       labels,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	ann, ok := mutate.Annotations(img, annotations).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("annotating the manifest: not an image")
	}
	return ann, nil
}

// write replaces -out's layout, tar and tag with idx's, writing each beside
// its final name first so that a failed build leaves the previous one.
func (o *options) write(idx v1.ImageIndex) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	dir := filepath.Join(o.out, name+"-image")
	tmpDir := dir + ".tmp"
	if err := os.RemoveAll(tmpDir); err != nil {
		return err
	}
	p, err := layout.Write(tmpDir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.version,
	})); err != nil {
		return err
	}
	tarPath := filepath.Join(o.out, name+"-image.tar")
	if err := tarDir(tmpDir, tarPath+".tmp", o.epoch); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmpDir, dir); err != nil {
		return err
	}
	if err := os.Rename(tarPath+".tmp", tarPath); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, name+"-image.tag"), []byte(o.version+"\n"), 0o644); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(o.root, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	fmt.Printf("%s %s: index %s\n", name, o.version, d)
	for _, desc := range m.Manifests {
		fmt.Printf("  %s/%s %s\n", desc.Platform.OS, desc.Platform.Architecture, desc.Digest)
	}
	fmt.Printf("wrote %s/ (OCI layout), %s (its tar), %s\n", rel(dir), rel(tarPath), rel(filepath.Join(o.out, name+"-image.tag")))
	return nil
}

// tarDir writes the files under dir into a tar at path, in name order, every
// time set to mtime and owned by root: the same files give the same bytes.
func tarDir(dir, path string, mtime time.Time) error {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, n := range names {
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			f.Close()
			return err
		}
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: mtime, Typeflag: tar.TypeReg, Size: fi.Size(), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = n+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return err
		}
		if !fi.IsDir() {
			body, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				f.Close()
				return err
			}
			if _, err := tw.Write(body); err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
