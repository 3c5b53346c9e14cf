// Package kubeconfigtest holds the kubeconfig fixtures that the kubeconfig
// loader's tests and the kubectl-flag tests share. It is for tests only and
// must not be imported by production code.
package kubeconfigtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TwoClusters is a kubeconfig with two clusters (a, b), a context for each
// (alpha, current; beta) and two users (u, v).
const TwoClusters = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:6443"}
- name: b
  cluster: {server: "https://127.0.0.2:6443"}
contexts:
- name: alpha
  context: {cluster: a, user: u}
- name: beta
  context: {cluster: b, user: u}
current-context: alpha
users:
- name: u
  user: {token: t}
- name: v
  user: {token: other}
`

// Write writes body to dir/config and returns its path.
func Write(t testing.TB, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "config")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Env is a getenv over vars.
func Env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}
