// Command krew renders the krew manifest of `kubectl rebootwatch` from the
// archives `make release` built, and checks it against them:
//
//	go run ./hack/krew [-dist dist] [-template deploy/krew/rebootwatch.yaml]
//
// It reads the release's version from dist/metadata.json and each archive's
// sha256 from dist/checksums.txt (GoReleaser's), renders the template as
// krew-release-bot would on the release tag, writes dist/rebootwatch-krew.yaml
// and checks that every platform's uri names an archive in dist/ with that
// sha256 holding that platform's bin, an executable for its os/arch. It
// prints the release tag (v<version>) on stdout for the Makefile. It must not
// download, publish or write outside dist/.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hack/krew:", err)
		os.Exit(1)
	}
}

func run() error {
	dist := flag.String("dist", "dist", "GoReleaser's output directory")
	tplPath := flag.String("template", "deploy/krew/rebootwatch.yaml", "the krew manifest template")
	flag.Parse()

	meta, err := os.ReadFile(filepath.Join(*dist, "metadata.json"))
	if err != nil {
		return err
	}
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(meta, &m); err != nil || m.Version == "" {
		return fmt.Errorf("%s/metadata.json: no version (%v)", *dist, err)
	}
	tag := "v" + m.Version

	f, err := os.Open(filepath.Join(*dist, "checksums.txt"))
	if err != nil {
		return err
	}
	sums, err := ReadChecksums(f)
	f.Close()
	if err != nil {
		return err
	}
	tpl, err := os.ReadFile(*tplPath)
	if err != nil {
		return err
	}
	manifest, err := Render(tpl, tag, sums)
	if err != nil {
		return err
	}
	platforms, err := Validate(manifest, *dist)
	if err != nil {
		return err
	}
	out := filepath.Join(*dist, "rebootwatch-krew.yaml")
	if err := os.WriteFile(out, manifest, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "hack/krew: %s: %d platforms, each archive's checksum and binary checked\n", out, len(platforms))
	fmt.Println(tag)
	return nil
}
