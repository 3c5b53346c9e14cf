// Package sources holds what the adapters that fill the model share: the
// Sink they report to, the per-source health Reporter (ok / stale / error /
// forbidden / not-installed / disabled, DESIGN §7 and issue 3), and a
// ListWatch wrapper that bounds every list with a timeout and reports list and
// watch failures as health, and the watch Audit with the streaming reader of
// the protobuf metadata-only lists it compares against (metalist.go), on
// the one protobuf wire reader the node decoder of sources/kube shares
// (pbwire.go).
//
// The adapters live in sub-packages: kube (Nodes, fleetlock Leases, kured's
// DaemonSet), longhorn (volumes.longhorn.io), prometheus
// (kured_reboot_required and firing alerts) and sim (the demo cluster).
//
// Sources only read: nothing here writes to a cluster. They never hand out
// pointers into an informer cache: events carry model values. One failing
// source must never stop another.
package sources
