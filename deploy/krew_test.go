package deploy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest (v1alpha2) the checks need.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// The krew manifest template renders as krew-release-bot renders it (the tag,
// and each addURIAndSha replaced by the archive's uri and sha256) into a
// manifest that keeps krew's rules: the plugin's name, a semver version,
// one platform per os/arch with an archive named for it and the binary
// kubectl-rebootwatch (.exe on Windows), and no duplicate platform.
func TestKrewManifestTemplate(t *testing.T) {
	b, err := os.ReadFile("krew/rebootwatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const tag = "v1.2.3"
	funcs := template.FuncMap{"addURIAndSha": func(uri, tagName string) (string, error) {
		// The bot renders the tag inside the uri first.
		u, err := template.New("uri").Parse(uri)
		if err != nil {
			return "", err
		}
		var out bytes.Buffer
		if err := u.Execute(&out, map[string]string{"TagName": tagName}); err != nil {
			return "", err
		}
		// A stand-in for the archive's sha256: the bot downloads it.
		return fmt.Sprintf("uri: %s\n    sha256: %x", out.String(), sha256.Sum256(out.Bytes())), nil
	}}
	tpl, err := template.New("krew").Funcs(funcs).Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tpl.Execute(&out, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(out.Bytes(), &p); err != nil {
		t.Fatalf("rendered manifest: %v\n%s", err, out.String())
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "rebootwatch" ||
		p.Spec.Version != tag || p.Spec.ShortDescription == "" || len(p.Spec.ShortDescription) > 80 || !strings.HasPrefix(p.Spec.Homepage, "https://") {
		t.Fatalf("manifest head: %+v", p)
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+`).MatchString(p.Spec.Version) {
		t.Fatalf("version %q is not semver", p.Spec.Version)
	}
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		key := os + "/" + arch
		if os == "" || arch == "" || seen[key] {
			t.Fatalf("platform %q: empty or duplicate", key)
		}
		seen[key] = true
		ext, bin := ".tar.gz", "kubectl-rebootwatch"
		if os == "windows" {
			ext, bin = ".zip", "kubectl-rebootwatch.exe"
		}
		wantURI := "https://github.com/rebootwatch/rebootwatch/releases/download/" + tag + "/kubectl-rebootwatch_" + tag + "_" + os + "_" + arch + ext
		if pl.URI != wantURI || pl.Bin != bin || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(pl.Sha256) {
			t.Fatalf("platform %s: uri %q bin %q sha256 %q; want uri %q bin %q", key, pl.URI, pl.Bin, pl.Sha256, wantURI, bin)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		if !seen[want] {
			t.Errorf("no platform %s", want)
		}
	}
}
