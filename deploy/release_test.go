package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// chartImage renders the chart and returns its container's image and pull
// policy and the Deployment's app.kubernetes.io/version label.
func chartImage(t *testing.T, chart string, set ...string) (image string, policy corev1.PullPolicy, version string) {
	t.Helper()
	v := defaultValues
	v.set = set
	out, err := runHelm(t, append([]string{"template", v.release, chart}, v.args()...)...)
	if err != nil {
		t.Fatalf("helm template %s %v: %v\n%s", chart, set, err, out)
	}
	objs, err := Decode("helm template", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			c := d.Spec.Template.Spec.Containers[0]
			return c.Image, c.ImagePullPolicy, d.Labels["app.kubernetes.io/version"]
		}
	}
	t.Fatalf("helm template %s %v: no Deployment", chart, set)
	return "", "", ""
}

// TestHelmImageFollowsVersion (issue 23 §2): the image tag is the chart's
// appVersion unless image.tag is set; the pull policy follows the tag
// (IfNotPresent for a version tag, which never moves; Always for latest,
// dev or a branch, which do) unless image.pullPolicy is set; and the chart
// `make release` packages (hack/package-chart.sh) has the release version
// as its appVersion, so its image is the release's.
func TestHelmImageFollowsVersion(t *testing.T) {
	const repo = "ghcr.io/rebootwatch/rebootwatch-agent"
	for _, tc := range []struct {
		set    []string
		image  string
		policy corev1.PullPolicy
	}{
		{nil, repo + ":latest", corev1.PullAlways},
		{[]string{"image.tag=dev"}, repo + ":dev", corev1.PullAlways},
		{[]string{"image.tag=v1.2.3"}, repo + ":v1.2.3", corev1.PullIfNotPresent},
		{[]string{"image.tag=v1.3.0-rc.1"}, repo + ":v1.3.0-rc.1", corev1.PullIfNotPresent},
		{[]string{"image.tag=1.2.3"}, repo + ":1.2.3", corev1.PullIfNotPresent},
		{[]string{"image.tag=v1.2.3", "image.pullPolicy=Always"}, repo + ":v1.2.3", corev1.PullAlways},
		{[]string{"image.pullPolicy=Never"}, repo + ":latest", corev1.PullNever},
	} {
		image, policy, _ := chartImage(t, chartDir, tc.set...)
		if image != tc.image || policy != tc.policy {
			t.Errorf("--set %v: image %s pull %s, want %s pull %s", tc.set, image, policy, tc.image, tc.policy)
		}
	}

	dir := t.TempDir()
	cmd := exec.Command("bash", "../hack/package-chart.sh", "v1.2.3", dir)
	cmd.Env = append(os.Environ(), "HELM="+helmBin(t), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/package-chart.sh: %v\n%s", err, out)
	}
	pkg := filepath.Join(dir, "rebootwatch-agent-1.2.3.tgz")
	image, policy, version := chartImage(t, pkg)
	if image != repo+":v1.2.3" || policy != corev1.PullIfNotPresent || version != "v1.2.3" {
		t.Errorf("packaged chart: image %s pull %s version label %q; want %s:v1.2.3, IfNotPresent, v1.2.3", image, policy, version, repo)
	}
}

// dockerignored reports whether .dockerignore's patterns exclude path
// (slash-separated, relative to the build context): as Docker matches, a
// pattern excludes a path it matches or any parent directory of it, and the
// last matching pattern wins ("!" re-includes).
func dockerignored(t *testing.T, patterns []string, path string) bool {
	t.Helper()
	excluded := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"), "/")
		for prefix := path; ; {
			ok, err := filepath.Match(p, prefix)
			if err != nil {
				t.Fatalf(".dockerignore pattern %q: %v", p, err)
			}
			if ok {
				excluded = !neg
				break
			}
			i := strings.LastIndex(prefix, "/")
			if i < 0 {
				break
			}
			prefix = prefix[:i]
		}
	}
	return excluded
}

// TestDockerignore (issue 23 §2): the image's build context (the repository
// root, deploy/Dockerfile) leaves out the built binaries (bin/, hundreds of
// MB of kube-apiserver and etcd), the release archives (dist/), .git and the
// screenshots, and keeps every file the agent's build reads (go list).
func TestDockerignore(t *testing.T) {
	f, err := os.Open("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var patterns []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, p := range []string{"bin/kube-apiserver", "bin/rebootwatch", "dist/checksums.txt", ".git", ".git/HEAD",
		"screenshots/dashboard.png", "rebootwatch-agent", "agent.test", "cover.out"} {
		if !dockerignored(t, patterns, p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
	// Every file of the module the agent's build reads stays in.
	out, err := exec.Command("go", "list", "-deps", "-json=Module,Dir,GoFiles,EmbedFiles", "../cmd/rebootwatch-agent").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	need := []string{"go.mod", "go.sum", "deploy/Dockerfile"}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			Module *struct {
				Main bool
			}
			Dir                 string
			GoFiles, EmbedFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range append(p.GoFiles, p.EmbedFiles...) {
			need = append(need, filepath.ToSlash(filepath.Join(rel, g)))
		}
	}
	if len(need) < 20 {
		t.Fatalf("go list found only %v", need)
	}
	for _, p := range need {
		if dockerignored(t, patterns, p) {
			t.Errorf(".dockerignore excludes %s, which the agent's build needs", p)
		}
	}
}
