package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rebootwatch/rebootwatch/internal/testenv/gobuild"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// craneModule is the crane the docs push with (docs/agent.md#install).
const craneModule = "github.com/google/go-containerregistry/cmd/crane@v0.22.1"

// imageBlockMarker precedes, in docs/agent.md and the README, the shell
// block that builds, pushes and installs the image; this test runs it.
const imageBlockMarker = "<!-- deploy/image_test.go runs the next block -->"

// docBlock returns the fenced block that follows imageBlockMarker in path.
func docBlock(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, imageBlockMarker)
	if i < 0 {
		t.Fatalf("%s: no %q", path, imageBlockMarker)
	}
	s = s[i+len(imageBlockMarker):]
	open := strings.Index(s, "```sh\n")
	if open < 0 || strings.TrimSpace(s[:open]) != "" {
		t.Fatalf("%s: no ```sh block right after the marker", path)
	}
	s = s[open+len("```sh\n"):]
	end := strings.Index(s, "```")
	if end < 0 {
		t.Fatalf("%s: the block after the marker does not end", path)
	}
	return s[:end]
}

// ociDescriptor, ociIndex, ociManifest and ociConfig are the parts of the
// OCI image spec this test reads, declared here so that the test shares no
// code, and no assumption, with hack/image.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []ociDescriptor   `json:"manifests"`
	Annotations   map[string]string `json:"annotations"`
}

type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        ociDescriptor     `json:"config"`
	Layers        []ociDescriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// layoutFile is one regular file of an image's layers, as unpacked.
type layoutFile struct {
	mode     int64
	uid, gid int
	body     []byte
}

// ociLayout reads an OCI image layout directory, checking every blob it
// reads against its digest and size.
type ociLayout struct {
	t   *testing.T
	dir string
}

func (l ociLayout) blob(d ociDescriptor) []byte {
	l.t.Helper()
	algo, hexd, ok := strings.Cut(d.Digest, ":")
	if !ok || algo != "sha256" {
		l.t.Fatalf("digest %q: want sha256:…", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(l.dir, "blobs", "sha256", hexd))
	if err != nil {
		l.t.Fatalf("blob %s: %v", d.Digest, err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexd || int64(len(b)) != d.Size {
		l.t.Fatalf("blob %s: sha256 %x, %d bytes; descriptor says %d bytes", d.Digest, sum, len(b), d.Size)
	}
	return b
}

func (l ociLayout) json(d ociDescriptor, v any) {
	l.t.Helper()
	if err := json.Unmarshal(l.blob(d), v); err != nil {
		l.t.Fatalf("%s %s: %v", d.MediaType, d.Digest, err)
	}
}

// files unpacks a gzipped tar layer, checking its diff ID (the sha256 of
// the uncompressed tar), into the regular files it holds, by path.
func (l ociLayout) files(d ociDescriptor, diffID string, into map[string]layoutFile) {
	l.t.Helper()
	if d.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		l.t.Errorf("layer %s: media type %s, want an OCI gzip layer", d.Digest, d.MediaType)
	}
	gz, err := gzip.NewReader(bytes.NewReader(l.blob(d)))
	if err != nil {
		l.t.Fatalf("layer %s: %v", d.Digest, err)
	}
	// The tar is read as it is decompressed, and hashed as it is read (the
	// diff ID is the uncompressed layer's digest): no copy of the whole
	// layer, each file's body read once into a buffer of its size (under
	// -race every copy is checked byte by byte; issue 35 §3).
	sum := sha256.New()
	stream := io.TeeReader(gz, sum)
	tr := tar.NewReader(stream)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			l.t.Fatalf("layer %s: %v", d.Digest, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size < 0 || h.Size > 1<<30 {
			l.t.Fatalf("layer %s: %s is %d bytes", d.Digest, h.Name, h.Size)
		}
		body := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, body); err != nil {
			l.t.Fatalf("layer %s: %s: %v", d.Digest, h.Name, err)
		}
		into["/"+strings.TrimPrefix(h.Name, "./")] = layoutFile{mode: h.Mode, uid: h.Uid, gid: h.Gid, body: body}
	}
	// What follows the tar's end (its zero blocks and padding) is part of
	// the layer too.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		l.t.Fatalf("layer %s: %v", d.Digest, err)
	}
	if got := "sha256:" + hex.EncodeToString(sum.Sum(nil)); got != diffID {
		l.t.Errorf("layer %s: uncompressed %s, config's diff ID %s", d.Digest, got, diffID)
	}
}

// imageBuild is what one run of the docs' block left in dist/.
type imageBuild struct {
	tag        string
	top        ociDescriptor // index.json's one entry: the multi-arch index
	tarSHA256  string
	layoutDir  string
	layoutTar  string
	renderedTo string
}

// TestImageFromTheDocs (issue 34 §1) follows docs/agent.md#install in a
// tree like a fresh clone (the repository's files, no dist/ or bin/): it
// runs the block that builds the agent's image with `make image`, pushes it
// with crane to a registry (crane's own, on loopback) and installs the
// chart from it (`helm install` rendered with `helm template`). Then:
//   - the Deployment runs $REGISTRY/rebootwatch-agent:<the tag make image
//     wrote>, pulled IfNotPresent (a version tag, built by the user);
//   - the registry serves under that tag the index make image built;
//   - the image, read here with encoding/json, archive/tar and
//     compress/gzip only: an index of linux/amd64 and linux/arm64, each
//     running /rebootwatch-agent as 65532:65532, static, with CA
//     certificates and a nonroot user, labelled and annotated with the
//     source, version and revision; the binary of this machine's
//     architecture, taken from its layer, prints the tag on --version;
//   - the tar holds the layout byte for byte, and a second `make image`
//     gives the same digests.
//
// The README shows the same block. Run only under REBOOTWATCH_INTEGRATION:
// it cross-builds the agent twice and builds crane.
func TestImageFromTheDocs(t *testing.T) {
	if !testcluster.Integration() {
		t.Skip("builds the image (two cross-builds) and crane: set " + testcluster.EnvIntegration + "=1")
	}
	// The package's longest test (about half its time): it runs beside
	// TestIntegrationFleetBrakeFires once the package's other tests are
	// done, so that deploy, whose tests otherwise run one after another, is
	// not the last package of make test to end. It touches no cluster.
	t.Parallel()
	helm := helmBin(t)
	block := docBlock(t, "../docs/agent.md")
	if readme := docBlock(t, "../README.md"); readme != block {
		t.Errorf("README.md's install block differs from docs/agent.md's:\n%s\nvs\n%s", readme, block)
	}
	for _, want := range []string{"make image", "crane@v0.22.1 push", "helm install", "image.repository=", "image.tag="} {
		if !strings.Contains(block, want) {
			t.Errorf("docs/agent.md's install block has no %q:\n%s", want, block)
		}
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	work := filepath.Join(tmp, "clone")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "dist" && n != "bin" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(work, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := []string{"HELM_CACHE_HOME=" + filepath.Join(tmp, "helm", "cache"), "HELM_CONFIG_HOME=" + filepath.Join(tmp, "helm", "config"),
		"HELM_DATA_HOME=" + filepath.Join(tmp, "helm", "data"), "GOFLAGS=-buildvcs=false", "VERSION=", "SOURCE_DATE_EPOCH=",
		"PATH=" + filepath.Dir(helm) + string(os.PathListSeparator) + os.Getenv("PATH")}

	// The registry: crane's, in memory, on a loopback port of its choosing.
	// crane is installed into a GOBIN kept between runs (gobuild.Dir): the
	// go command leaves an up-to-date crane there as it is, where a fresh
	// GOBIN would link it again on every run (about 4 CPU-seconds).
	craneDir := filepath.Join(gobuild.Dir(t), "crane")
	install := exec.Command("go", "install", craneModule)
	install.Env = append(os.Environ(), "GOBIN="+craneDir)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", craneModule, err, out)
	}
	serve := exec.Command(filepath.Join(craneDir, "crane"), "registry", "serve", "--address", "127.0.0.1:0")
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`serving on port (\d+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	var registryHost string
	select {
	case p := <-port:
		registryHost = "127.0.0.1:" + p
	case <-time.After(2 * time.Minute):
		t.Fatal("crane registry serve: no port announced in 2m")
	}
	registry := registryHost + "/test"

	// The docs' block, as written, in the clone; `helm install` renders
	// with `helm template` into a file, the same flags.
	run := func(what, rendered string, extraEnv ...string) imageBuild {
		t.Helper()
		script := "set -euo pipefail\n" +
			`helm() { if [ "$1" = install ]; then shift; command helm template "$@" >"$RENDERED"; else command helm "$@"; fi; }` + "\n" +
			block
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = work
		cmd.Env = append(append(append(os.Environ(), env...), "REGISTRY="+registry, "RENDERED="+rendered), extraEnv...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("%s: %s", what, time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		tag, err := os.ReadFile(filepath.Join(work, "dist", "rebootwatch-agent-image.tag"))
		if err != nil {
			t.Fatal(err)
		}
		b := imageBuild{tag: strings.TrimSpace(string(tag)), renderedTo: rendered,
			layoutDir: filepath.Join(work, "dist", "rebootwatch-agent-image"), layoutTar: filepath.Join(work, "dist", "rebootwatch-agent-image.tar")}
		var top ociIndex
		raw, err := os.ReadFile(filepath.Join(b.layoutDir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatalf("index.json: %v", err)
		}
		if len(top.Manifests) != 1 {
			t.Fatalf("index.json names %d manifests, want the one multi-arch index", len(top.Manifests))
		}
		b.top = top.Manifests[0]
		tb, err := os.ReadFile(b.layoutTar)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(tb)
		b.tarSHA256 = hex.EncodeToString(sum[:])
		return b
	}
	// The first build may take its two cross-built agents from the link
	// cache of make test (bin/linkcache as the go command's -toolexec, when
	// make built it): each is then the output of an earlier link of the
	// same inputs. The second build links both afresh, so equal digests
	// still compare two links of the agent made apart (issue 35 §3: a link
	// is about 4.5 CPU-seconds).
	var linked []string
	if dir, err := testcluster.BinDir(); err == nil {
		if lc := filepath.Join(dir, "linkcache"); !strings.ContainsAny(lc, " \t'\"") {
			if _, err := os.Stat(lc); err == nil {
				linked = append(linked, "GOFLAGS=-buildvcs=false -toolexec="+lc)
			}
		}
	}
	first := run("the docs' block", filepath.Join(tmp, "rendered-1.yaml"), linked...)

	// The chart names the image pushed.
	want := registry + "/rebootwatch-agent:" + first.tag
	rendered, err := os.ReadFile(first.renderedTo)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode("helm template from the docs", rendered)
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	if dep == nil {
		t.Fatalf("the docs' helm install renders no Deployment:\n%s", rendered)
	}
	if c := dep.Spec.Template.Spec.Containers[0]; c.Image != want || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("Deployment runs %s pull %s, want %s pull IfNotPresent", c.Image, c.ImagePullPolicy, want)
	}

	// The registry serves the layout's index under the tag.
	l := ociLayout{t: t, dir: first.layoutDir}
	indexBytes := l.blob(first.top)
	req, err := http.NewRequest(http.MethodGet, "http://"+registryHost+"/v2/test/rebootwatch-agent/manifests/"+first.tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(pushed, indexBytes) {
		t.Errorf("registry's %s: %s (%v), %d bytes; want the layout's index %s", want, resp.Status, err, len(pushed), first.top.Digest)
	}

	// The image, read from the layout.
	revision := gitOut(t, root, "rev-parse", "HEAD")
	if m := regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-snapshot-([0-9a-f]{7,})$`).FindStringSubmatch(first.tag); m == nil || !strings.HasPrefix(revision, m[1]) {
		t.Errorf("tag %q: want v<last tag>-snapshot-<HEAD's short commit> (HEAD %s)", first.tag, revision)
	}
	labels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/rebootwatch/rebootwatch",
		"org.opencontainers.image.version":  first.tag,
		"org.opencontainers.image.revision": revision,
	}
	hasLabels := func(what string, got map[string]string) {
		t.Helper()
		for k, v := range labels {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
			}
		}
	}
	if first.top.MediaType != "application/vnd.oci.image.index.v1+json" || first.top.Annotations["org.opencontainers.image.ref.name"] != first.tag {
		t.Errorf("index.json's entry: %s ref.name %q, want an OCI index named %s", first.top.MediaType, first.top.Annotations["org.opencontainers.image.ref.name"], first.tag)
	}
	var idx ociIndex
	if err := json.Unmarshal(indexBytes, &idx); err != nil {
		t.Fatal(err)
	}
	hasLabels("index annotations", idx.Annotations)
	var platforms []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("index entry %s has no platform", m.Digest)
		}
		arch := m.Platform.Architecture
		platforms = append(platforms, m.Platform.OS+"/"+arch)
		var man ociManifest
		l.json(m, &man)
		hasLabels(arch+" manifest annotations", man.Annotations)
		if man.MediaType != "application/vnd.oci.image.manifest.v1+json" || man.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
			t.Errorf("%s: manifest %s, config %s; want OCI media types", arch, man.MediaType, man.Config.MediaType)
		}
		var cfg ociConfig
		l.json(man.Config, &cfg)
		hasLabels(arch+" config labels", cfg.Config.Labels)
		if cfg.OS != m.Platform.OS || cfg.Architecture != arch {
			t.Errorf("%s: config says %s/%s", arch, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/rebootwatch-agent"}) || len(cfg.Config.Cmd) != 0 {
			t.Errorf("%s: user %q entrypoint %q cmd %q; want 65532:65532, [/rebootwatch-agent], none", arch, cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Cmd)
		}
		if len(cfg.RootFS.DiffIDs) != len(man.Layers) {
			t.Fatalf("%s: %d layers, %d diff IDs", arch, len(man.Layers), len(cfg.RootFS.DiffIDs))
		}
		files := map[string]layoutFile{}
		for i, layer := range man.Layers {
			l.files(layer, cfg.RootFS.DiffIDs[i], files)
		}
		bin, ok := files["/rebootwatch-agent"]
		if !ok || bin.mode&0o111 == 0 {
			t.Fatalf("%s: no executable /rebootwatch-agent in the layers", arch)
		}
		f, err := elf.NewFile(bytes.NewReader(bin.body))
		if err != nil {
			t.Fatalf("%s: /rebootwatch-agent: %v", arch, err)
		}
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		if f.Machine != machine || f.FileHeader.OSABI != elf.ELFOSABI_NONE && f.FileHeader.OSABI != elf.ELFOSABI_LINUX {
			t.Errorf("%s: /rebootwatch-agent is for %v %v", arch, f.Machine, f.FileHeader.OSABI)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: /rebootwatch-agent is dynamically linked: the image has no libc", arch)
			}
		}
		if ca := files["/etc/ssl/certs/ca-certificates.crt"].body; bytes.Count(ca, []byte("-----BEGIN CERTIFICATE-----")) < 10 {
			t.Errorf("%s: /etc/ssl/certs/ca-certificates.crt holds %d certificates", arch, bytes.Count(ca, []byte("-----BEGIN CERTIFICATE-----")))
		}
		if !regexp.MustCompile(`(?m)^nonroot:x:65532:65532:[^:]*:[^:]*:[^:]*$`).Match(files["/etc/passwd"].body) ||
			!regexp.MustCompile(`(?m)^nonroot:x:65532:`).Match(files["/etc/group"].body) {
			t.Errorf("%s: /etc/passwd %q, /etc/group %q: no nonroot 65532", arch, files["/etc/passwd"].body, files["/etc/group"].body)
		}
		if arch == runtime.GOARCH && runtime.GOOS == "linux" {
			exe := filepath.Join(tmp, "rebootwatch-agent-"+arch)
			if err := os.WriteFile(exe, bin.body, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(exe, "--version").Output()
			if got := string(out); err != nil || !strings.HasPrefix(got, "rebootwatch-agent "+first.tag+" ") {
				t.Errorf("the image's %s binary --version: %q (%v), want rebootwatch-agent %s …", arch, got, err, first.tag)
			}
		}
	}
	if slices.Sort(platforms); !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("the index's platforms %v, want linux/amd64 and linux/arm64", platforms)
	}

	// The tar is the layout.
	compareTarToDir(t, first.layoutTar, first.layoutDir)

	// Deterministic: the same tree builds the same image, byte for byte.
	second := run("the docs' block again", filepath.Join(tmp, "rendered-2.yaml"))
	if second.top.Digest != first.top.Digest || second.tarSHA256 != first.tarSHA256 || second.tag != first.tag {
		t.Errorf("a second build differs: index %s tar %s tag %s, first %s %s %s",
			second.top.Digest, second.tarSHA256, second.tag, first.top.Digest, first.tarSHA256, first.tag)
	}
}

// compareTarToDir checks that the tar at path holds exactly the regular
// files under dir, with the same bytes.
func compareTarToDir(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inTar := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			inTar[h.Name] = b
		}
	}
	inDir := map[string][]byte{}
	if err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		inDir[filepath.ToSlash(rel)] = b
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(inTar) != len(inDir) {
		t.Errorf("%s holds %d files, %s %d", path, len(inTar), dir, len(inDir))
	}
	for n, b := range inDir {
		if !bytes.Equal(inTar[n], b) {
			t.Errorf("%s: %s differs from the layout's", path, n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		t.Errorf("the layout has no oci-layout file: %v", err)
	}
}

// gitOut runs git in dir and returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
