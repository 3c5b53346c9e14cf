//go:build tools

// Package testcluster only records the commands this module builds, so
// `go mod tidy` keeps their dependencies. It is never compiled into a test.
package testcluster

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
