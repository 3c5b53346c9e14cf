// Package kuredtest writes kured's reboot lock exactly as kured writes it,
// for tests: its DaemonSet annotation, byte for byte (JSON field order, the
// fields written). kured's module is not served by the Go module proxy, so
// this reproduces — never copies — what was read in kubereboot/kured
// pkg/daemonsetlock/daemonsetlock.go (LockAnnotationValue,
// multiLockAnnotationValue, DaemonSetSingleLock.Acquire,
// DaemonSetMultiLock.Acquire via canAcquireMultiple), at commit
// 51220cc778a4c8cc5bdd35617697a2844887f8c7 (1.23.0-32-g51220cc).
//
// It is test support: it must never be imported by production code (the
// scale fixture aside).
package kuredtest

import (
	"encoding/json"
	"time"
)

// Value mirrors kured's LockAnnotationValue as json.Marshal writes it:
// field order nodeID, metadata, created, TTL; metadata's omitempty has no
// effect on a struct, so it is always there; created is time.Now().UTC()
// (RFC3339 with nanoseconds); TTL is a time.Duration in nanoseconds.
type Value struct {
	NodeID   string        `json:"nodeID"`
	Metadata NodeMeta      `json:"metadata,omitempty"`
	Created  time.Time     `json:"created"`
	TTL      time.Duration `json:"TTL"`
}

// NodeMeta mirrors kured's NodeMeta.
type NodeMeta struct {
	Unschedulable bool `json:"unschedulable"`
}

// Single is a single-lock annotation value as kured's
// DaemonSetSingleLock.Acquire writes it.
func Single(holder string, created time.Time, ttl time.Duration, unschedulable bool) string {
	return marshal(Value{NodeID: holder, Metadata: NodeMeta{unschedulable}, Created: created.UTC(), TTL: ttl})
}

// Multi is a multi-lock annotation value as DaemonSetMultiLock.Acquire
// writes it ({"maxOwners":N,"locks":[...]}, entries in acquisition order;
// with a TTL, a node whose own entry expired appends a second entry).
func Multi(maxOwners int, entries ...Value) string {
	for i := range entries {
		entries[i].Created = entries[i].Created.UTC()
	}
	if entries == nil {
		entries = []Value{}
	}
	return marshal(struct {
		MaxOwners int     `json:"maxOwners"`
		Locks     []Value `json:"locks"`
	}{maxOwners, entries})
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
