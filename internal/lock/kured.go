package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// KuredAnnotation is the DaemonSet annotation that holds kured's lock.
const KuredAnnotation = "weave.works/kured-node-lock"

// ManualHolder is the nodeID kured's documentation uses for a lock an
// operator sets by hand to pause all reboots.
const ManualHolder = "manual"

// KuredEntry is one holder of a kured lock.
type KuredEntry struct {
	NodeID string
	// Created is when the lock was taken; zero when absent (old kured).
	Created time.Time
	// TTL is the lock's time to live; 0 never expires.
	TTL time.Duration
	// Unschedulable is metadata.unschedulable: the node was already
	// cordoned before kured took the lock, so kured leaves it cordoned.
	Unschedulable bool
	// HasCreated says whether the created field was present and non-zero.
	HasCreated bool
}

// Expired reports whether the entry's TTL has passed at now. It follows
// kured: a TTL > 0 expires once now-created >= TTL.
func (e KuredEntry) Expired(now time.Time) bool {
	return e.TTL > 0 && now.Sub(e.Created) >= e.TTL
}

// KuredLock is a parsed kured lock annotation.
type KuredLock struct {
	// Multi is true for the multi-lock form {"maxOwners":N,"locks":[...]}.
	Multi     bool
	MaxOwners int
	Entries   []KuredEntry
}

// rawEntry mirrors kured's lock annotation value; fields are raw so that
// every type error is reported, never silently zeroed.
type rawEntry struct {
	NodeID   *string         `json:"nodeID"`
	Metadata json.RawMessage `json:"metadata"`
	Created  json.RawMessage `json:"created"`
	TTL      json.RawMessage `json:"TTL"`
}

// ParseKured parses the value of weave.works/kured-node-lock: the single
// form, the multi-lock form, the legacy form without created/TTL, and the
// manual {"nodeID":"manual"}. It never panics; anything malformed is an error
// saying what is wrong.
func ParseKured(value string) (KuredLock, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return KuredLock{}, errors.New("annotation value is empty")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &top); err != nil {
		return KuredLock{}, fmt.Errorf("annotation is not a JSON object: %v", err)
	}
	if top == nil {
		return KuredLock{}, errors.New("annotation is JSON null, not an object")
	}
	_, hasLocks := top["locks"]
	_, hasMax := top["maxOwners"]
	if hasLocks || hasMax {
		return parseMulti(top)
	}
	e, err := parseEntry([]byte(v))
	if err != nil {
		return KuredLock{}, err
	}
	return KuredLock{Entries: []KuredEntry{e}}, nil
}

func parseMulti(top map[string]json.RawMessage) (KuredLock, error) {
	l := KuredLock{Multi: true}
	if raw, ok := top["maxOwners"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &l.MaxOwners); err != nil {
			return KuredLock{}, fmt.Errorf("multi-lock maxOwners is not an integer: %s", clip(string(raw)))
		}
		if l.MaxOwners < 0 {
			return KuredLock{}, fmt.Errorf("multi-lock maxOwners is negative: %d", l.MaxOwners)
		}
	}
	var entries []json.RawMessage
	if raw, ok := top["locks"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &entries); err != nil {
			return KuredLock{}, fmt.Errorf("multi-lock locks is not a list: %s", clip(string(raw)))
		}
	}
	seen := map[string]bool{}
	for i, raw := range entries {
		e, err := parseEntry(raw)
		if err != nil {
			return KuredLock{}, fmt.Errorf("multi-lock entry %d: %v", i, err)
		}
		if seen[e.NodeID] {
			return KuredLock{}, fmt.Errorf("multi-lock lists node %q more than once", e.NodeID)
		}
		seen[e.NodeID] = true
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

func parseEntry(raw []byte) (KuredEntry, error) {
	var r rawEntry
	if err := json.Unmarshal(raw, &r); err != nil {
		return KuredEntry{}, fmt.Errorf("lock is not a JSON object: %v", err)
	}
	if r.NodeID == nil {
		return KuredEntry{}, errors.New("lock has no nodeID")
	}
	e := KuredEntry{NodeID: *r.NodeID}
	if strings.TrimSpace(e.NodeID) == "" {
		return KuredEntry{}, errors.New("lock has an empty nodeID")
	}
	if len(r.Created) > 0 && !isNull(r.Created) {
		if err := json.Unmarshal(r.Created, &e.Created); err != nil {
			return KuredEntry{}, fmt.Errorf("lock created is not an RFC3339 time: %s", clip(string(r.Created)))
		}
		e.HasCreated = !e.Created.IsZero()
	}
	if len(r.TTL) > 0 && !isNull(r.TTL) {
		var ns int64
		if err := json.Unmarshal(r.TTL, &ns); err != nil {
			return KuredEntry{}, fmt.Errorf("lock TTL is not an integer number of nanoseconds: %s", clip(string(r.TTL)))
		}
		if ns < 0 {
			return KuredEntry{}, fmt.Errorf("lock TTL is negative: %d", ns)
		}
		e.TTL = time.Duration(ns)
	}
	if len(r.Metadata) > 0 && !isNull(r.Metadata) {
		var m struct {
			Unschedulable *bool `json:"unschedulable"`
		}
		if err := json.Unmarshal(r.Metadata, &m); err != nil {
			return KuredEntry{}, fmt.Errorf("lock metadata is malformed: %s", clip(string(r.Metadata)))
		}
		if m.Unschedulable != nil {
			e.Unschedulable = *m.Unschedulable
		}
	}
	return e, nil
}

// RemoveKuredEntry returns the multi-lock annotation value without the entry
// of nodeID, keeping every other field and entry exactly as they were. It is
// an error when the value is not a multi-lock or has no such entry.
func RemoveKuredEntry(value, nodeID string) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &top); err != nil || top == nil {
		return "", fmt.Errorf("annotation is not a JSON object")
	}
	raw, ok := top["locks"]
	if !ok {
		return "", errors.New("annotation is not a multi-lock (no locks list)")
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return "", fmt.Errorf("multi-lock locks is not a list")
	}
	kept := make([]json.RawMessage, 0, len(entries))
	removed := 0
	for _, e := range entries {
		var id struct {
			NodeID string `json:"nodeID"`
		}
		if json.Unmarshal(e, &id) == nil && id.NodeID == nodeID {
			removed++
			continue
		}
		kept = append(kept, e)
	}
	if removed != 1 {
		return "", fmt.Errorf("multi-lock has %d entries for %q, want exactly 1", removed, nodeID)
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return "", err
	}
	top["locks"] = b
	out, err := json.Marshal(top)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
