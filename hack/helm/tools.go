//go:build tools

// Package helm only records the command this module builds, so `go mod tidy`
// keeps its dependencies. It is never compiled into a test.
package helm

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
