// Package scalebench is rebootwatch's scale benchmark (issue 14): it seeds a
// real kube-apiserver + etcd (internal/testenv/testcluster) with 1,000 nodes and
// 3,000 Longhorn volumes, then grows it to 5,000 and 10,000, and measures per
// case the first full picture of `rebootwatch --snapshot -o json` (the built
// binary, as a subprocess), of the dashboard's model and of
// `rebootwatch-agent` (the built binary), their CPU time, memory and the
// requests they made (the apiserver's apiserver_request_total), and the
// requests per minute the dashboard and the agent make once they hold the
// picture. See scale_test.go for the command (`make bench-scale`).
//
// The package has no code of its own besides its benchmark: nothing may
// import it.
package scalebench
