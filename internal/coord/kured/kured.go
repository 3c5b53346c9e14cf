// Package kured is the kured coordinator (kubereboot/kured): its lock (an
// annotation of kured's DaemonSet), parsed and read exactly as kured reads
// it; kured's settings read from its DaemonSet's pod template; the lock
// driver the lock engine judges and writes through (coord.LockDriver:
// parse, resolve, the write that frees an entry, its apply and its
// verification as kured reads the result); and what kured's source reads
// (source.go: discovery, the informer's transform, the one-shot read), and
// its release sequence with how its own pod on a node is seen (cycle.go),
// which answers the lock engine's questions about a rebooted holder
// (afterreboot.go: coord.AfterReboot).
// Its fixtures are in kuredtest.
//
// It must not import the lock engine, a source or the TUI (they import
// it), judge a lock from a value kured would read otherwise, or start
// goroutines; its only I/O is the driver's Apply and the one-shot read.
package kured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/internal/timewindow"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the kured lock kind, as kured writes it in
// kubereboot/kured pkg/daemonsetlock/daemonsetlock.go (read at kured
// 1.23.0-32-g51220cc, commit 51220cc778a4c8cc5bdd35617697a2844887f8c7):
// DaemonSetSingleLock and DaemonSetMultiLock Acquire/Release, which read the
// DaemonSet, change one annotation and Update it carrying the read
// resourceVersion.

// Annotation is the DaemonSet annotation that holds kured's lock by
// default (kured's --lock-annotation changes it).
const Annotation = "weave.works/kured-node-lock"

// Spec is the kured kind's shape of a lock object: one annotation of
// kured's DaemonSet.
type Spec struct {
	// Annotation is the annotation key kured uses (its --lock-annotation,
	// default Annotation).
	Annotation string
	// Value is the annotation's raw value; Present says whether the key
	// exists at all.
	Value   string
	Present bool
	// Config is kured's configuration read from its DaemonSet; nil when the
	// DaemonSet's pod template was not read.
	Config *Config
	// Named: the user named this DaemonSet (--kured-daemonset), so only
	// the DaemonSets named are read: another node pool's kured may run
	// unseen, and a node none of the named ones runs on is not told it has
	// no kured (internal/explain).
	Named bool
}

// LockKind implements model.LockSpec.
func (*Spec) LockKind() model.LockKind { return model.LockKured }

// annotationKey is the annotation the lock lives in.
func (s *Spec) annotationKey() string {
	if s == nil || s.Annotation == "" {
		return Annotation
	}
	return s.Annotation
}

// ManualHolder is the nodeID kured's documentation uses for a lock an
// operator sets by hand to pause all reboots.
const ManualHolder = "manual"

// Entry is one holder of a kured lock.
type Entry struct {
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
func (e Entry) Expired(now time.Time) bool {
	return e.TTL > 0 && now.Sub(e.Created) >= e.TTL
}

// Lock is a parsed kured lock annotation.
type Lock struct {
	// Multi is true for the multi-lock form {"maxOwners":N,"locks":[...]}.
	Multi     bool
	MaxOwners int
	// Entries in the annotation's order. kured's multi-lock can list the
	// same node twice: with a TTL, a node whose own entry expired acquires
	// again and canAcquireMultiple appends a second entry while the first
	// is still there (there is room below maxOwners).
	Entries []Entry
}

// kuredNodeMeta, kuredValue and kuredMultiValue are kured's own structs
// (pkg/daemonsetlock NodeMeta, LockAnnotationValue and
// multiLockAnnotationValue), field for field and tag for tag: decoding into
// them with encoding/json is exactly what kured does with its annotation
// (key names match case-insensitively, the last of duplicate keys wins,
// unknown keys are ignored, null leaves a field as it was).
type kuredNodeMeta struct {
	Unschedulable bool `json:"unschedulable"`
}

type kuredValue struct {
	NodeID   string        `json:"nodeID"`
	Metadata kuredNodeMeta `json:"metadata,omitempty"`
	Created  time.Time     `json:"created"`
	TTL      time.Duration `json:"TTL"`
}

type kuredMultiValue struct {
	MaxOwners       int          `json:"maxOwners"`
	LockAnnotations []kuredValue `json:"locks"`
}

func (v kuredValue) entry() Entry {
	return Entry{NodeID: v.NodeID, Created: v.Created, TTL: v.TTL, Unschedulable: v.Metadata.Unschedulable, HasCreated: !v.Created.IsZero()}
}

// Reading is what kured itself reads from its lock annotation: kured
// with --concurrency 1 decodes it into its single-lock struct, with a
// higher concurrency into its multi-lock struct, whatever the value's shape.
type Reading struct {
	// Concurrency is the kured --concurrency the value was read with.
	Concurrency int
	// Absent: there is no annotation (both of kured's modes read it as free).
	Absent bool
	// Err is kured's decoding error: kured's Acquire, Holding and Release
	// then fail on every node.
	Err error
	// MaxOwners is the multi-lock's maxOwners field (kured itself uses its
	// own --concurrency instead).
	MaxOwners int
	// Entries are the holders kured reads: the single lock's one entry
	// (nodeID "" included: kured reads that as held by nobody it knows,
	// until its TTL passes), or the multi-lock's entries in order.
	Entries []Entry
	// unsure: kured's concurrency is a guess (the words say only the mode).
	unsure bool
}

// Multi reports whether kured reads the value with its multi-lock struct.
func (r Reading) Multi() bool { return r.Concurrency > 1 }

// Reads decodes an annotation value (present says whether the
// annotation exists) as kured with the given --concurrency does.
func Reads(value string, present bool, concurrency int) Reading {
	r := Reading{Concurrency: concurrency, Absent: !present}
	if !present {
		return r
	}
	if r.Multi() {
		var m kuredMultiValue
		if err := json.Unmarshal([]byte(value), &m); err != nil {
			r.Err = err
			return r
		}
		r.MaxOwners = m.MaxOwners
		for _, v := range m.LockAnnotations {
			r.Entries = append(r.Entries, v.entry())
		}
		return r
	}
	var v kuredValue
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		r.Err = err
		return r
	}
	r.Entries = []Entry{v.entry()}
	return r
}

// count is how many of the entries kured reads equal e.
func (r Reading) count(e Entry) int {
	n := 0
	for _, x := range r.Entries {
		if x.NodeID == e.NodeID && x.Created.Equal(e.Created) && x.TTL == e.TTL && x.Unschedulable == e.Unschedulable {
			n++
		}
	}
	return n
}

// equal reports whether two readings read the same holders.
func (r Reading) equal(o Reading) bool {
	if r.Absent != o.Absent || (r.Err == nil) != (o.Err == nil) || r.Multi() != o.Multi() || len(r.Entries) != len(o.Entries) {
		return false
	}
	for i := range r.Entries {
		a, b := r.Entries[i], o.Entries[i]
		if a.NodeID != b.NodeID || !a.Created.Equal(b.Created) || a.TTL != b.TTL || a.Unschedulable != b.Unschedulable {
			return false
		}
	}
	return true
}

// String says in words what kured reads, for reasons and errors.
func (r Reading) String() string {
	mode := fmt.Sprintf("kured (--concurrency %d)", r.Concurrency)
	switch {
	case r.unsure && r.Multi():
		mode = "kured with --concurrency > 1"
	case r.unsure:
		mode = "kured with --concurrency 1"
	}
	switch {
	case r.Absent:
		return mode + " reads no annotation: free"
	case r.Err != nil:
		return fmt.Sprintf("%s cannot decode it (%s): its Acquire, Holding and Release fail on every node, so no node reboots until the value is fixed", mode, coord.Clip(r.Err.Error()))
	case !r.Multi():
		e := r.Entries[0]
		if e.NodeID == "" {
			w := "until its TTL passes"
			if e.TTL <= 0 {
				w = "forever (no TTL)"
			}
			return mode + ` reads it as held by nodeID "", which is no node: no node can take the lock ` + w
		}
		return fmt.Sprintf("%s reads it as held by %q", mode, coord.Clip(e.NodeID))
	case len(r.Entries) == 0:
		return mode + " reads it as a multi-lock with no holders: free"
	}
	var hs []string
	for _, e := range r.Entries {
		hs = append(hs, fmt.Sprintf("%q", coord.Clip(e.NodeID)))
	}
	return fmt.Sprintf("%s reads it as held by %s", mode, model.FirstFew(hs, 5))
}

// kuredForm is an error of a value that is not in the form kured writes.
type kuredForm struct{ what string }

func (e *kuredForm) Error() string { return e.what }

// Parse parses the value of weave.works/kured-node-lock in the forms
// kured writes (json.Marshal of its structs): the single form, the
// multi-lock form, the legacy single form without created/TTL, and the
// manual {"nodeID":"manual"}. The form is judged on the keys, never on
// spacing, key order or how a number or string is spelled (those read the
// same for kured and here): every key must be one of kured's, spelled as
// kured spells it (kured's encoding/json would also take "Locks" or
// "NODEID"), listed once at every level (kured's reader takes the last of
// duplicates), and no other key may appear; every value must have the type
// kured's struct gives it, and no value may be null (kured never writes one,
// except a multi-lock's locks). Whatever it accepts, kured's own reading
// (Reads, with the concurrency of the value's shape) reads the same
// (FuzzKuredReadsAgree). It never panics; anything else is an error saying
// what is odd.
func Parse(value string) (Lock, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return Lock{}, errors.New("annotation value is empty")
	}
	keys, vals, err := strictObject([]byte(v), "")
	if err != nil {
		return Lock{}, err
	}
	multi := false
	for _, k := range keys {
		if strings.EqualFold(k, "locks") || strings.EqualFold(k, "maxOwners") {
			multi = true
		}
	}
	if multi {
		return parseMulti(keys, vals)
	}
	e, err := parseEntry(keys, vals, "")
	if err != nil {
		return Lock{}, err
	}
	return Lock{Entries: []Entry{e}}, nil
}

// strictObject reads a JSON object's keys in order with each value's bytes,
// refusing a duplicate key (where names the object for the message).
func strictObject(raw []byte, where string) ([]string, map[string]json.RawMessage, error) {
	subject := where
	if subject == "" {
		subject = "annotation "
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, nil, &kuredForm{subject + "is JSON null, not an object"}
		}
		return nil, nil, &kuredForm{subject + "is not a JSON object"}
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return nil, nil, &kuredForm{subject + "is not a JSON object"}
		}
		var rv json.RawMessage
		if err := dec.Decode(&rv); err != nil {
			return nil, nil, &kuredForm{fmt.Sprintf("%sis not valid JSON: %v", subject, err)}
		}
		if _, dup := vals[k]; dup {
			return nil, nil, &kuredForm{fmt.Sprintf("%sduplicate key %q (kured reads the last one)", where, coord.Clip(k))}
		}
		keys, vals[k] = append(keys, k), rv
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, nil, &kuredForm{subject + "is not a JSON object"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, &kuredForm{subject + "has data after the JSON object"}
	}
	return keys, vals, nil
}

// onlyKeys checks that every key is one of kured's, spelled as kured does.
func onlyKeys(keys []string, where string, allowed ...string) error {
	for _, k := range keys {
		if slices.Contains(allowed, k) {
			continue
		}
		for _, a := range allowed {
			if strings.EqualFold(k, a) {
				return &kuredForm{fmt.Sprintf("%skey %q is not kured's %q (kured's reader matches it all the same)", where, coord.Clip(k), a)}
			}
		}
		return &kuredForm{fmt.Sprintf("%sextra key %q (kured writes only %s)", where, coord.Clip(k), strings.Join(allowed, ", "))}
	}
	return nil
}

func parseMulti(keys []string, vals map[string]json.RawMessage) (Lock, error) {
	if err := onlyKeys(keys, "", "maxOwners", "locks"); err != nil {
		return Lock{}, err
	}
	l := Lock{Multi: true}
	raw, ok := vals["maxOwners"]
	switch {
	case !ok:
		return Lock{}, &kuredForm{"multi-lock has no maxOwners (kured always writes it)"}
	case isNull(raw):
		return Lock{}, &kuredForm{"multi-lock maxOwners is null"}
	}
	if err := json.Unmarshal(raw, &l.MaxOwners); err != nil {
		return Lock{}, fmt.Errorf("multi-lock maxOwners is not an integer: %s", coord.Clip(string(raw)))
	}
	if l.MaxOwners < 0 {
		return Lock{}, fmt.Errorf("multi-lock maxOwners is negative: %d", l.MaxOwners)
	}
	raw, ok = vals["locks"]
	if !ok {
		return Lock{}, &kuredForm{"multi-lock has no locks list (kured always writes it)"}
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return Lock{}, fmt.Errorf("multi-lock locks is not a list: %s", coord.Clip(string(raw)))
	}
	for i, raw := range entries {
		where := fmt.Sprintf("multi-lock entry %d: ", i)
		ks, vs, err := strictObject(raw, where)
		if err != nil {
			return Lock{}, err
		}
		e, err := parseEntry(ks, vs, where)
		if err != nil {
			return Lock{}, err
		}
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

func parseEntry(keys []string, vals map[string]json.RawMessage, where string) (Entry, error) {
	if err := onlyKeys(keys, where, "nodeID", "metadata", "created", "TTL"); err != nil {
		return Entry{}, err
	}
	for _, k := range keys {
		if isNull(vals[k]) {
			return Entry{}, &kuredForm{fmt.Sprintf("%slock %s is null", where, k)}
		}
	}
	raw, ok := vals["nodeID"]
	if !ok {
		return Entry{}, fmt.Errorf("%slock has no nodeID", where)
	}
	var e Entry
	if err := json.Unmarshal(raw, &e.NodeID); err != nil {
		return Entry{}, fmt.Errorf("%slock nodeID is not a string: %s", where, coord.Clip(string(raw)))
	}
	if strings.TrimSpace(e.NodeID) == "" {
		return Entry{}, fmt.Errorf("%slock has an empty nodeID", where)
	}
	if raw, ok := vals["created"]; ok {
		if err := json.Unmarshal(raw, &e.Created); err != nil {
			return Entry{}, fmt.Errorf("%slock created is not an RFC3339 time: %s", where, coord.Clip(string(raw)))
		}
		e.HasCreated = !e.Created.IsZero()
	}
	if raw, ok := vals["TTL"]; ok {
		var ns int64
		if err := json.Unmarshal(raw, &ns); err != nil {
			return Entry{}, fmt.Errorf("%slock TTL is not an integer number of nanoseconds: %s", where, coord.Clip(string(raw)))
		}
		if ns < 0 {
			return Entry{}, fmt.Errorf("%slock TTL is negative: %d", where, ns)
		}
		e.TTL = time.Duration(ns)
	}
	if raw, ok := vals["metadata"]; ok {
		mw := where + "metadata: "
		ks, vs, err := strictObject(raw, mw)
		if err != nil {
			return Entry{}, err
		}
		if err := onlyKeys(ks, mw, "unschedulable"); err != nil {
			return Entry{}, err
		}
		if raw, ok := vs["unschedulable"]; ok {
			if isNull(raw) {
				return Entry{}, &kuredForm{mw + "unschedulable is null"}
			}
			if err := json.Unmarshal(raw, &e.Unschedulable); err != nil {
				return Entry{}, fmt.Errorf("%sunschedulable is not a boolean: %s", mw, coord.Clip(string(raw)))
			}
		}
	}
	return e, nil
}

// RemoveEntry returns the multi-lock annotation value without entry
// index (which must name nodeID), keeping every other field and entry byte
// for byte. last is true when no entry is left: the caller then removes the
// annotation instead of writing {"maxOwners":N,"locks":[]} (which a kured
// later switched to concurrency 1 would read as held by "" forever; both of
// kured's modes read a missing annotation as free). It is an error when the
// value is not a multi-lock or that entry is not nodeID's.
func RemoveEntry(value string, index int, nodeID string) (nv string, last bool, err error) {
	keys, raws, err := orderedObject(value)
	if err != nil {
		return "", false, err
	}
	li := slices.Index(keys, "locks")
	if li < 0 {
		return "", false, errors.New("annotation is not a multi-lock (no locks list)")
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raws[li], &entries); err != nil {
		return "", false, fmt.Errorf("multi-lock locks is not a list")
	}
	if index < 0 || index >= len(entries) {
		return "", false, fmt.Errorf("multi-lock has %d entries, no entry %d", len(entries), index)
	}
	var id struct {
		NodeID string `json:"nodeID"`
	}
	if json.Unmarshal(entries[index], &id) != nil || id.NodeID != nodeID {
		return "", false, fmt.Errorf("multi-lock entry %d is not %q's", index, nodeID)
	}
	kept := append(append([]json.RawMessage{}, entries[:index]...), entries[index+1:]...)
	if len(kept) == 0 {
		return "", true, nil
	}
	// Rebuild the object in its own key order from the original bytes of
	// every other key and entry: only the removed entry's bytes change.
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if i != li {
			b.Write(raws[i])
			continue
		}
		b.WriteByte('[')
		for j, e := range kept {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(e)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String(), false, nil
}

// orderedObject reads a JSON object's keys in their order with each value's
// original bytes.
func orderedObject(value string) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(value))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("annotation is not a JSON object")
	}
	var keys []string
	var raws []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return nil, nil, fmt.Errorf("annotation is not a JSON object")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("annotation is not a JSON object")
		}
		keys, raws = append(keys, k), append(raws, raw)
	}
	return keys, raws, nil
}

// Driver is the kured lock kind.
type Driver struct{}

// Kind implements coord.LockDriver.
func (Driver) Kind() model.LockKind { return Kind }

// Source implements coord.LockDriver.
func (Driver) Source() model.SourceName { return Source }

func kuredSpec(obj *model.LockObject) (*Spec, error) {
	s, ok := obj.Spec.(*Spec)
	if !ok || s == nil {
		return nil, fmt.Errorf("kured lock %s carries no kured annotation data", obj.LockRef)
	}
	return s, nil
}

// Parse implements coord.LockDriver: the lock as kured reads it.
func (Driver) Parse(obj *model.LockObject) (coord.Parsed, error) {
	spec, err := kuredSpec(obj)
	if err != nil {
		return coord.Parsed{}, err
	}
	notes, settings := spec.Config.evidence(), spec.Config.Settings()
	key := spec.annotationKey()
	fail := func(err error) (coord.Parsed, error) { return coord.Parsed{Notes: notes, Settings: settings}, err }
	if err := spec.Config.lockAnnotationError(); err != nil {
		// kured's Update with that key fails every time: no node can take
		// the lock, and where a lock would be is not a place to look.
		return fail(err)
	}
	warn := spec.Config.StartProblem()
	conc, known := spec.Config.concurrency()
	capacity := 0
	if known {
		capacity = conc
	}
	if !spec.Present {
		return coord.Parsed{FreeReason: "no " + key + " annotation: the lock is free", Notes: notes, Settings: settings, Capacity: capacity, Warning: warn}, nil
	}
	kl, err := Parse(spec.Value)
	if err != nil {
		return fail(fmt.Errorf("%v — %s", err, kuredReadsSays(spec.Value, conc, known)))
	}
	if known {
		kr := Reads(spec.Value, true, conc)
		switch {
		case kl.Multi && conc <= 1:
			return fail(fmt.Errorf("the value is a multi-lock (%s) but kured runs with --concurrency %d%s, which reads it with its single-lock struct — %s (kured pods of the old and the new setting may both run during a rollout)",
				holdersWord(kl), conc, spec.Config.fromWord("concurrency"), kr))
		case !kl.Multi && conc > 1:
			return fail(fmt.Errorf("the value is a single lock (%s) but kured runs with --concurrency %d%s, which reads it with its multi-lock struct — %s: its next node takes the lock and drops this one (kured pods of the old and the new setting may both run during a rollout)",
				holdersWord(kl), conc, spec.Config.fromWord("concurrency"), kr))
		case !kr.equal(kl.reading(conc)):
			// Parse's promise (FuzzKuredReadsAgree) is broken: trust
			// neither reading.
			return fail(fmt.Errorf("rebootwatch reads %s, but %s", holdersWord(kl), kr))
		}
		if kl.Multi && kl.MaxOwners != conc {
			notes = append(notes, model.Evidence{Key: "maxOwners", Value: fmt.Sprintf("the value says %d; kured uses its own --concurrency %d", kl.MaxOwners, conc)})
		}
	}
	if !known {
		// kured's own setting unread: the value's shape says it.
		capacity = 1
		if kl.Multi {
			capacity = kl.MaxOwners
		}
	}
	if len(kl.Entries) == 0 {
		return coord.Parsed{FreeReason: fmt.Sprintf("multi-lock (maxOwners %d) has no holders: the lock is free", kl.MaxOwners), Notes: notes, Settings: settings, Capacity: capacity, Warning: warn}, nil
	}
	count := map[string]int{}
	for _, e := range kl.Entries {
		count[e.NodeID]++
	}
	p := coord.Parsed{Notes: notes, Settings: settings, Capacity: capacity, Warning: warn}
	if kl.Multi && kl.MaxOwners > 0 && len(kl.Entries) > kl.MaxOwners {
		// kured never lists more holders than maxOwners: more nodes than
		// allowed may be rebooting at once (a hand edit, or a concurrency
		// lowered while the lock was held).
		p.Warning = joinWarn(warn, fmt.Sprintf("the multi-lock lists %d holders, more than its maxOwners %d: more nodes than allowed may reboot at once", len(kl.Entries), kl.MaxOwners))
		p.Notes = append(p.Notes, model.Evidence{Key: "over maxOwners", Value: fmt.Sprintf("%d holders, maxOwners %d", len(kl.Entries), kl.MaxOwners)})
	}
	for i, e := range kl.Entries {
		en := coord.Entry{Index: i, Holder: e.NodeID, TTL: e.TTL, Duplicate: count[e.NodeID] > 1}
		if e.HasCreated {
			en.Since, en.SinceFrom = e.Created, "the lock's created field"
		}
		if e.Unschedulable {
			en.LeftCordoned = true
			en.CordonNote = "node was cordoned before kured took the lock; kured leaves it cordoned"
		}
		if spec.Config != nil {
			en.ReleaseDelay = spec.Config.LockReleaseDelay
		}
		p.Entries = append(p.Entries, en)
	}
	return p, nil
}

// reading is l as a Reading at concurrency conc.
func (l Lock) reading(conc int) Reading {
	return Reading{Concurrency: conc, MaxOwners: l.MaxOwners, Entries: l.Entries}
}

// holdersWord names a parsed lock's holders.
func holdersWord(l Lock) string {
	if len(l.Entries) == 0 {
		return "no holders"
	}
	var hs []string
	for _, e := range l.Entries {
		hs = append(hs, fmt.Sprintf("%q", coord.Clip(e.NodeID)))
	}
	return "held by " + model.FirstFew(hs, 5)
}

// kuredReadsSays says what kured reads from a value: at its concurrency
// when known, else at both of its modes.
func kuredReadsSays(value string, conc int, known bool) string {
	if known {
		return Reads(value, true, conc).String()
	}
	one, more := Reads(value, true, 1), Reads(value, true, 2)
	one.unsure, more.unsure = true, true
	return "kured's --concurrency is not known here: " + one.String() + "; " + more.String()
}

// Resolve implements coord.LockDriver: a holder id of kured to nodes.
func (Driver) Resolve(ix *coord.Index, holder string) coord.Mapping {
	if holder == ManualHolder && !ix.Exists(holder) {
		return coord.Mapping{Kind: coord.MatchManual, How: `nodeID "manual" is kured's manual lock`}
	}
	if m, ok := ix.ByName(holder); ok {
		return m
	}
	return coord.Mapping{Kind: coord.MatchNone, How: fmt.Sprintf("no current node is named %q", coord.Clip(holder))}
}

// coord.Write ops of the kured kind.
const (
	// OpRemoveAnnotation removes kured's annotation (single lock, the last
	// entry of a multi-lock, or a malformed value).
	OpRemoveAnnotation = "remove-annotation"
	// OpSetAnnotation replaces kured's multi-lock annotation without one entry.
	OpSetAnnotation = "set-annotation"
)

// Write implements coord.LockDriver: the write that frees entry i.
func (Driver) Write(obj *model.LockObject, p coord.Parsed, i int) coord.Write {
	spec, err := kuredSpec(obj)
	if err != nil || !spec.Present {
		return coord.Write{}
	}
	key := spec.annotationKey()
	w := coord.Write{Ref: obj.LockRef, Object: "DaemonSet " + obj.Namespace + "/" + obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
		Field: "metadata.annotations[" + key + "]", Key: key, OldValue: spec.Value}
	if i < 0 {
		w.Op = OpRemoveAnnotation
		w.Summary = "remove annotation " + key + " (malformed value " + coord.Clip(spec.Value) + ")"
		return w
	}
	if i >= len(p.Entries) {
		return coord.Write{}
	}
	e := p.Entries[i]
	w.Holder, w.Entry = e.Holder, e.Index
	kl, err := Parse(spec.Value)
	if err != nil {
		return coord.Write{}
	}
	if !kl.Multi {
		w.Op = OpRemoveAnnotation
		w.Summary = "remove annotation " + key + " (lock held by " + e.Holder + ")"
		return w
	}
	nv, last, err := RemoveEntry(spec.Value, e.Index, e.Holder)
	if err != nil {
		return coord.Write{}
	}
	which := e.Holder
	if e.Duplicate {
		which = fmt.Sprintf("%s (entry %d of %d)", e.Holder, e.Index+1, len(kl.Entries))
	}
	if last {
		w.Op = OpRemoveAnnotation
		w.Summary = "remove annotation " + key + " (its last entry, " + which + ", goes away; kured reads a missing annotation as free)"
		return w
	}
	w.Op, w.NewValue = OpSetAnnotation, nv
	w.Summary = "remove the entry of " + which + " from annotation " + key + ", leaving " + nv
	return w
}

// Apply implements coord.LockDriver: the write, checked against what was
// judged and verified as kured reads the result.
func (Driver) Apply(ctx context.Context, c kubernetes.Interface, w coord.Write) (coord.Applied, error) {
	dsc := c.AppsV1().DaemonSets(w.Ref.Namespace)
	ds, err := dsc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return coord.Applied{}, &coord.APIError{Verb: "get", Resource: "daemonsets.apps", Err: err}
	}
	if err := coord.CheckPrecondition(w, string(ds.UID), ds.ResourceVersion); err != nil {
		return coord.Applied{}, err
	}
	cur, ok := ds.Annotations[w.Key]
	if !ok || cur != w.OldValue {
		return coord.Applied{}, &coord.PreconditionError{Msg: "conflict: the annotation differs from what was judged at the same resourceVersion; nothing changed"}
	}
	ds = ds.DeepCopy()
	switch w.Op {
	case OpRemoveAnnotation:
		delete(ds.Annotations, w.Key)
	case OpSetAnnotation:
		nv, last, err := RemoveEntry(cur, w.Entry, w.Holder)
		if err != nil || last || nv != w.NewValue {
			return coord.Applied{}, &coord.PreconditionError{Msg: fmt.Sprintf("conflict: cannot remove %s from the current annotation; nothing changed", w.Holder)}
		}
		ds.Annotations[w.Key] = nv
	default:
		return coord.Applied{}, fmt.Errorf("write op %q does not apply to a DaemonSet", w.Op)
	}
	up, err := dsc.Update(ctx, ds, metav1.UpdateOptions{FieldManager: coord.FieldManagerFrom(ctx)})
	if err != nil {
		return coord.Applied{}, &coord.APIError{Verb: "update", Resource: "daemonsets.apps", Err: err}
	}
	ap := coord.Applied{APIVersion: "apps/v1", Kind: "DaemonSet", UID: up.UID, ResourceVersion: up.ResourceVersion}
	got, err := dsc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return ap, &coord.VerifyError{Msg: fmt.Sprintf("the write was made (resourceVersion %s → %s), but reading %s again failed (%v): whether kured reads the lock as freed is unknown",
			w.ResourceVersion, up.ResourceVersion, w.Object, err)}
	}
	return ap, verifyKured(w, up.ResourceVersion, got)
}

// verifyKured reads the DaemonSet after a write as kured does (at the
// --concurrency of its pod template, else of the old value's shape): the
// entry written away must be one fewer in kured's reading, kured must be
// able to decode the value, and when nothing else wrote since, kured must
// read exactly what the write meant.
func verifyKured(w coord.Write, writtenRV string, got *appsv1.DaemonSet) error {
	conc, known := ConfigOf(&got.Spec.Template.Spec).concurrency()
	old, oldErr := Parse(w.OldValue)
	if !known {
		conc = 1
		if oldErr == nil && old.Multi {
			conc = 2
		}
	}
	before := Reads(w.OldValue, true, conc)
	v, present := got.Annotations[w.Key]
	after := Reads(v, present, conc)
	intended := Reads(w.NewValue, w.Op == OpSetAnnotation, conc)
	ok := after.Err == nil
	var still string
	if oldErr == nil && w.Holder != "" && w.Entry < len(old.Entries) {
		target := old.Entries[w.Entry]
		if after.count(target) >= before.count(target) {
			ok, still = false, fmt.Sprintf(": the entry of %q is still there for kured", coord.Clip(target.NodeID))
		}
	} else if after.equal(before) {
		ok, still = false, ": kured reads what it read before the write"
	}
	since := ""
	if got.ResourceVersion == writtenRV {
		ok = ok && after.equal(intended)
	} else {
		since = fmt.Sprintf(" (it changed again since: resourceVersion %s)", got.ResourceVersion)
	}
	if ok {
		return nil
	}
	return &coord.VerifyError{Msg: fmt.Sprintf("the write was made (resourceVersion %s → %s), but read again%s, %s%s", w.ResourceVersion, writtenRV, since, after, still)}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// Container picks kured's container of a pod template: the one named
// kured, else the first whose image names kured, else the first. nil when
// there is none.
func Container(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == "kured" {
			return &spec.Containers[i]
		}
	}
	for i := range spec.Containers {
		if strings.Contains(spec.Containers[i].Image, "kured") {
			return &spec.Containers[i]
		}
	}
	if len(spec.Containers) > 0 {
		return &spec.Containers[0]
	}
	return nil
}

// ConfigOf reads kured's configuration from a DaemonSet's pod
// template (its kured container's command, args and KURED_* environment);
// nil when it has no container.
func ConfigOf(spec *corev1.PodSpec) *Config {
	c := Container(spec)
	if c == nil {
		return nil
	}
	// The image's entrypoint (kured's) runs the args when there is no
	// command; a command's first word is the program.
	prog, args := "", c.Args
	if len(c.Command) > 0 {
		prog, args = c.Command[0], append(append([]string{}, c.Command[1:]...), c.Args...)
	}
	env := map[string]string{}
	var from []string
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, "KURED_") {
			continue
		}
		// The container's last definition of a name is the one it gets.
		delete(env, e.Name)
		from = slices.DeleteFunc(from, func(n string) bool { return n == e.Name })
		if e.ValueFrom != nil {
			from = append(from, e.Name)
			continue
		}
		env[e.Name] = e.Value
	}
	cfg := parseConfig(prog, args, env, from)
	return &cfg
}

// Config is kured's configuration as its DaemonSet gives it: the
// container's command line, parsed by pflag as kured parses it, then its
// KURED_* environment applied as kured's LoadFromEnv applies it (config.go).
// Defaults are kured's own (cmd/kured/main.go, the flag definitions in main).
type Config struct {
	DSName, DSNamespace  string
	LockAnnotation       string
	LockTTL              time.Duration
	LockReleaseDelay     time.Duration
	Concurrency          int
	Period               time.Duration
	RebootDays           []string
	StartTime, EndTime   string
	TimeZone             string
	BlockingPodSelectors []string
	PrometheusURL        string
	AlertFilterRegexp    string
	AlertFiringOnly      bool
	AlertFilterMatchOnly bool
	DrainTimeout         time.Duration
	// DrainDelay is kured's --drain-delay: after taking the lock it waits
	// this long before it cordons and drains (cmd/kured/main.go, drain).
	DrainDelay    time.Duration
	AnnotateNodes bool
	// From says where each flag that was set came from ("arg" or "env
	// KURED_X"); flags absent keep kured's default.
	From map[string]string
	// Problems are values that could not be read (env from a Secret or
	// ConfigMap that this tool does not resolve, a command line that is not
	// kured's own), and kured's StartError.
	Problems []string
	// StartError is kured's own error when it cannot start with these
	// settings (it exits before it runs: a flag pflag rejects, an
	// environment value LoadFromEnv rejects, a window or reboot method it
	// cannot build), in kured's words; "" when it starts.
	StartError string
	// envFrom are the KURED_* variables whose value is not read here.
	envFrom []string
	// unread are the flags whose value is not known here (a value that does
	// not parse, or one from a Secret, ConfigMap or field reference).
	unread map[string]bool
}

// Known reports whether a flag's value is known here (false for a value
// that does not parse, or one from a Secret, ConfigMap or field reference).
func (c *Config) Known(flag string) bool { return c != nil && !c.unread[flag] }

// concurrency is kured's --concurrency, and whether it is known.
func (c *Config) concurrency() (int, bool) {
	if c == nil || c.unread["concurrency"] {
		return 0, false
	}
	return c.Concurrency, true
}

// fromWord says where a flag's value came from, for messages: " (arg)",
// " (env KURED_X)" or " (default)".
func (c *Config) fromWord(flag string) string {
	if c == nil {
		return ""
	}
	if f, ok := c.From[flag]; ok {
		return " (" + f + ")"
	}
	return " (default)"
}

// lockAnnotationError says why kured's lock annotation cannot hold its lock:
// a name the API server refuses as an annotation key (kured's every Update
// with it fails, so no node can take the lock), or a name not read here.
// nil for a usable name, or when the configuration was not read.
func (c *Config) lockAnnotationError() error {
	if c == nil {
		return nil
	}
	if c.unread["lock-annotation"] {
		return errors.New("kured's --lock-annotation is not known here (its value is not read): where kured keeps its lock is unknown")
	}
	if errs := validation.IsQualifiedName(strings.ToLower(c.LockAnnotation)); len(errs) > 0 {
		return fmt.Errorf("kured's --lock-annotation %q%s is not a valid annotation key (%s): the API server refuses every lock kured writes under it, so whether a lock is held cannot be read",
			coord.Clip(c.LockAnnotation), c.fromWord("lock-annotation"), coord.Clip(strings.Join(errs, "; ")))
	}
	return nil
}

// LockAnnotationProblem is lockAnnotationError's message ("" when the name
// is usable), for the kured source's health.
func (c *Config) LockAnnotationProblem() string {
	if err := c.lockAnnotationError(); err != nil {
		return err.Error()
	}
	return ""
}

// kuredFlags are the kured flags rebootwatch reads, in display order.
var kuredFlags = []string{"ds-name", "ds-namespace", "lock-annotation", "lock-ttl", "lock-release-delay", "concurrency", "period",
	"reboot-days", "start-time", "end-time", "time-zone", "blocking-pod-selector", "prometheus-url", "alert-filter-regexp",
	"alert-firing-only", "alert-filter-match-only", "drain-timeout", "drain-delay", "annotate-nodes"}

// DefaultConfig is kured's configuration when nothing is set.
func DefaultConfig() Config {
	return Config{DSName: "kured", DSNamespace: "kube-system", LockAnnotation: Annotation, Concurrency: 1,
		Period: time.Hour, RebootDays: []string{"su", "mo", "tu", "we", "th", "fr", "sa"}, StartTime: "0:00",
		EndTime: "23:59:59", TimeZone: "UTC", From: map[string]string{}, unread: map[string]bool{}}
}

// Settings renders the configuration for the lock's detail, one flag per
// line in kuredFlags order, with where each value came from.
func (c *Config) Settings() []model.Evidence {
	if c == nil {
		return nil
	}
	val := map[string]string{
		"ds-name": c.DSName, "ds-namespace": c.DSNamespace, "lock-annotation": c.LockAnnotation,
		"lock-ttl": c.LockTTL.String(), "lock-release-delay": c.LockReleaseDelay.String(),
		"concurrency": fmt.Sprint(c.Concurrency), "period": c.Period.String(),
		"reboot-days": strings.Join(c.RebootDays, ","), "start-time": c.StartTime, "end-time": c.EndTime,
		"time-zone": c.TimeZone, "blocking-pod-selector": strings.Join(c.BlockingPodSelectors, " | "),
		"prometheus-url": sanitize.MaskURL(c.PrometheusURL), "alert-filter-regexp": c.AlertFilterRegexp,
		"alert-firing-only": fmt.Sprint(c.AlertFiringOnly), "alert-filter-match-only": fmt.Sprint(c.AlertFilterMatchOnly),
		"drain-timeout":  c.DrainTimeout.String(),
		"drain-delay":    c.DrainDelay.String(),
		"annotate-nodes": fmt.Sprint(c.AnnotateNodes),
	}
	var out []model.Evidence
	for _, f := range kuredFlags {
		v := val[f]
		if v == "" {
			v = `""`
		}
		if from, ok := c.From[f]; ok {
			v += " (" + from + ")"
		} else {
			v += " (default)"
		}
		out = append(out, model.Evidence{Key: "kured --" + f, Value: v})
	}
	for _, p := range c.Problems {
		out = append(out, model.Evidence{Key: "kured config", Value: p})
	}
	return out
}

// evidence is what every entry's verdict says about kured's configuration:
// only what bears on the verdict (the full list is Settings).
func (c *Config) evidence() []model.Evidence {
	if c == nil {
		return nil
	}
	var out []model.Evidence
	if c.LockReleaseDelay > 0 {
		out = append(out, model.Evidence{Key: "kured release delay", Value: c.LockReleaseDelay.String() + " (--lock-release-delay)"})
	}
	if c.LockTTL > 0 {
		out = append(out, model.Evidence{Key: "kured lock ttl", Value: c.LockTTL.String() + " (--lock-ttl)"})
	}
	return out
}

// RebootWindow returns kured's reboot window from its configuration
// (internal/timewindow: kured's pkg/timewindow semantics). An error is what
// kured itself fails on at start (it then does not run at all): its
// StartError, whichever setting it is about.
func (c *Config) RebootWindow() (*timewindow.Window, error) {
	if c.StartError != "" {
		return nil, errors.New(c.StartError)
	}
	return timewindow.Parse(c.RebootDays, c.StartTime, c.EndTime, c.TimeZone)
}

// StartProblem says, for the lock's warning (listed under attention), that
// kured cannot start with these settings, quoting kured's own error; "" when
// it can (or the configuration was not read).
func (c *Config) StartProblem() string {
	if c == nil || c.StartError == "" {
		return ""
	}
	return "kured cannot start with these settings: " + QuoteStartError(c.StartError) +
		" — its pods exit at start, so none of them takes or releases this lock until the settings are fixed"
}

// QuoteStartError quotes kured's error (from the cluster's settings:
// clipped to 200 bytes, escaped).
func QuoteStartError(e string) string {
	if len(e) > 200 {
		e = strings.ToValidUTF8(e[:200], "") + "…"
	}
	return strconv.Quote(e)
}

// joinWarn joins two warnings of one lock.
func joinWarn(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
