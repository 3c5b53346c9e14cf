package lock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the kured lock kind, as kured writes it in
// kubereboot/kured pkg/daemonsetlock/daemonsetlock.go (read at kured
// 1.23.0-32-g51220cc, commit 51220cc778a4c8cc5bdd35617697a2844887f8c7):
// DaemonSetSingleLock and DaemonSetMultiLock Acquire/Release, which read the
// DaemonSet, change one annotation and Update it carrying the read
// resourceVersion.

// KuredAnnotation is the DaemonSet annotation that holds kured's lock by
// default (kured's --lock-annotation changes it).
const KuredAnnotation = "weave.works/kured-node-lock"

// KuredSpec is the kured kind's shape of a lock object: one annotation of
// kured's DaemonSet.
type KuredSpec struct {
	// Annotation is the annotation key kured uses (its --lock-annotation,
	// default KuredAnnotation).
	Annotation string
	// Value is the annotation's raw value; Present says whether the key
	// exists at all.
	Value   string
	Present bool
	// Config is kured's configuration read from its DaemonSet; nil when the
	// DaemonSet's pod template was not read.
	Config *KuredConfig
}

// LockKind implements model.LockSpec.
func (*KuredSpec) LockKind() model.LockKind { return model.LockKured }

// annotationKey is the annotation the lock lives in.
func (s *KuredSpec) annotationKey() string {
	if s == nil || s.Annotation == "" {
		return KuredAnnotation
	}
	return s.Annotation
}

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
	// Entries in the annotation's order. kured's multi-lock can list the
	// same node twice: with a TTL, a node whose own entry expired acquires
	// again and canAcquireMultiple appends a second entry while the first
	// is still there (there is room below maxOwners).
	Entries []KuredEntry
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
	for i, raw := range entries {
		e, err := parseEntry(raw)
		if err != nil {
			return KuredLock{}, fmt.Errorf("multi-lock entry %d: %v", i, err)
		}
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

// RemoveKuredEntry returns the multi-lock annotation value without entry
// index (which must name nodeID), keeping every other field and entry byte
// for byte. last is true when no entry is left: the caller then removes the
// annotation instead of writing {"maxOwners":N,"locks":[]} (which a kured
// later switched to concurrency 1 would read as held by "" forever; both of
// kured's modes read a missing annotation as free). It is an error when the
// value is not a multi-lock or that entry is not nodeID's.
func RemoveKuredEntry(value string, index int, nodeID string) (nv string, last bool, err error) {
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

// kuredDriver is the kured lock kind.
type kuredDriver struct{}

func (kuredDriver) Kind() model.LockKind     { return model.LockKured }
func (kuredDriver) Source() model.SourceName { return model.SourceKured }

func kuredSpec(obj *model.LockObject) (*KuredSpec, error) {
	s, ok := obj.Spec.(*KuredSpec)
	if !ok || s == nil {
		return nil, fmt.Errorf("kured lock %s carries no kured annotation data", obj.LockRef)
	}
	return s, nil
}

func (kuredDriver) Parse(obj *model.LockObject) (Parsed, error) {
	spec, err := kuredSpec(obj)
	if err != nil {
		return Parsed{}, err
	}
	notes, settings := spec.Config.evidence(), spec.Config.Settings()
	key := spec.annotationKey()
	if !spec.Present {
		return Parsed{FreeReason: "no " + key + " annotation: the lock is free", Notes: notes, Settings: settings}, nil
	}
	kl, err := ParseKured(spec.Value)
	if err != nil {
		return Parsed{Notes: notes, Settings: settings}, err
	}
	if len(kl.Entries) == 0 {
		return Parsed{FreeReason: fmt.Sprintf("multi-lock (maxOwners %d) has no holders: the lock is free", kl.MaxOwners), Notes: notes, Settings: settings}, nil
	}
	count := map[string]int{}
	for _, e := range kl.Entries {
		count[e.NodeID]++
	}
	p := Parsed{Notes: notes, Settings: settings}
	if kl.Multi && kl.MaxOwners > 0 && len(kl.Entries) > kl.MaxOwners {
		// kured never lists more holders than maxOwners: more nodes than
		// allowed may be rebooting at once (a hand edit, or a concurrency
		// lowered while the lock was held).
		p.Warning = fmt.Sprintf("the multi-lock lists %d holders, more than its maxOwners %d: more nodes than allowed may reboot at once", len(kl.Entries), kl.MaxOwners)
		p.Notes = append(p.Notes, model.Evidence{Key: "over maxOwners", Value: fmt.Sprintf("%d holders, maxOwners %d", len(kl.Entries), kl.MaxOwners)})
	}
	for i, e := range kl.Entries {
		en := Entry{Index: i, Holder: e.NodeID, TTL: e.TTL, Duplicate: count[e.NodeID] > 1}
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

func (kuredDriver) Resolve(ix *Index, holder string) Mapping {
	if holder == ManualHolder && !ix.exists(holder) {
		return Mapping{Kind: MatchManual, How: `nodeID "manual" is kured's manual lock`}
	}
	if m, ok := ix.byName(holder); ok {
		return m
	}
	return Mapping{Kind: MatchNone, How: fmt.Sprintf("no current node is named %q", clip(holder))}
}

// Write ops of the kured kind.
const (
	// OpRemoveAnnotation removes kured's annotation (single lock, the last
	// entry of a multi-lock, or a malformed value).
	OpRemoveAnnotation = "remove-annotation"
	// OpSetAnnotation replaces kured's multi-lock annotation without one entry.
	OpSetAnnotation = "set-annotation"
)

func (kuredDriver) Write(obj *model.LockObject, p Parsed, i int) Write {
	spec, err := kuredSpec(obj)
	if err != nil || !spec.Present {
		return Write{}
	}
	key := spec.annotationKey()
	w := Write{Ref: obj.LockRef, Object: "DaemonSet " + obj.Namespace + "/" + obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
		Field: "metadata.annotations[" + key + "]", Key: key, OldValue: spec.Value}
	if i < 0 {
		w.Op = OpRemoveAnnotation
		w.Summary = "remove annotation " + key + " (malformed value " + clip(spec.Value) + ")"
		return w
	}
	if i >= len(p.Entries) {
		return Write{}
	}
	e := p.Entries[i]
	w.Holder, w.Entry = e.Holder, e.Index
	kl, err := ParseKured(spec.Value)
	if err != nil {
		return Write{}
	}
	if !kl.Multi {
		w.Op = OpRemoveAnnotation
		w.Summary = "remove annotation " + key + " (lock held by " + e.Holder + ")"
		return w
	}
	nv, last, err := RemoveKuredEntry(spec.Value, e.Index, e.Holder)
	if err != nil {
		return Write{}
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

func (kuredDriver) Apply(ctx context.Context, c kubernetes.Interface, w Write) (Applied, error) {
	dsc := c.AppsV1().DaemonSets(w.Ref.Namespace)
	ds, err := dsc.Get(ctx, w.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return Applied{}, &APIError{Verb: "get", Resource: "daemonsets.apps", Err: err}
	}
	if err := precondition(w, string(ds.UID), ds.ResourceVersion); err != nil {
		return Applied{}, err
	}
	cur, ok := ds.Annotations[w.Key]
	if !ok || cur != w.OldValue {
		return Applied{}, &PreconditionError{"conflict: the annotation differs from what was judged at the same resourceVersion; nothing changed"}
	}
	ds = ds.DeepCopy()
	switch w.Op {
	case OpRemoveAnnotation:
		delete(ds.Annotations, w.Key)
	case OpSetAnnotation:
		nv, last, err := RemoveKuredEntry(cur, w.Entry, w.Holder)
		if err != nil || last || nv != w.NewValue {
			return Applied{}, &PreconditionError{fmt.Sprintf("conflict: cannot remove %s from the current annotation; nothing changed", w.Holder)}
		}
		ds.Annotations[w.Key] = nv
	default:
		return Applied{}, fmt.Errorf("write op %q does not apply to a DaemonSet", w.Op)
	}
	up, err := dsc.Update(ctx, ds, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return Applied{}, &APIError{Verb: "update", Resource: "daemonsets.apps", Err: err}
	}
	return Applied{APIVersion: "apps/v1", Kind: "DaemonSet", UID: up.UID, ResourceVersion: up.ResourceVersion}, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// KuredConfig is kured's configuration as its DaemonSet gives it: the
// container's args (--flag=value or --flag value) and KURED_* environment
// variables, which kured binds to the same flags and which win over args
// (kured cmd/kured/main.go: flag.Parse, then LoadFromEnv). Defaults are
// kured's own (same file, the flag definitions in main).
type KuredConfig struct {
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
	AnnotateNodes        bool
	// From says where each flag that was set came from ("arg" or "env
	// KURED_X"); flags absent keep kured's default.
	From map[string]string
	// Problems are values that could not be read (bad durations, env from
	// a Secret or ConfigMap that this tool does not resolve).
	Problems []string
}

// kuredFlags are the kured flags rebootwatch reads, in display order.
var kuredFlags = []string{"ds-name", "ds-namespace", "lock-annotation", "lock-ttl", "lock-release-delay", "concurrency", "period",
	"reboot-days", "start-time", "end-time", "time-zone", "blocking-pod-selector", "prometheus-url", "alert-filter-regexp",
	"alert-firing-only", "alert-filter-match-only", "drain-timeout", "annotate-nodes"}

// kuredBoolFlags take no value on the command line (pflag's NoOptDefVal).
var kuredBoolFlags = map[string]bool{"alert-firing-only": true, "annotate-nodes": true, "alert-filter-match-only": true,
	"force-reboot": true}

// DefaultKuredConfig is kured's configuration when nothing is set.
func DefaultKuredConfig() KuredConfig {
	return KuredConfig{DSName: "kured", DSNamespace: "kube-system", LockAnnotation: KuredAnnotation, Concurrency: 1,
		Period: time.Hour, RebootDays: []string{"su", "mo", "tu", "we", "th", "fr", "sa"}, StartTime: "0:00",
		EndTime: "23:59:59", TimeZone: "UTC", From: map[string]string{}}
}

// ParseKuredConfig reads kured's configuration from its container's command
// line (command and args together) and environment. env maps a variable's
// name to its literal value; names in envFrom are variables whose value comes
// from elsewhere (valueFrom) and cannot be read here.
func ParseKuredConfig(argv []string, env map[string]string, envFrom []string) KuredConfig {
	c := DefaultKuredConfig()
	known := map[string]bool{}
	for _, f := range kuredFlags {
		known[f] = true
	}
	slices := map[string][]string{}
	set := func(name, value, from string) {
		if !known[name] {
			return
		}
		if name == "reboot-days" || name == "blocking-pod-selector" {
			if from == "arg" {
				if name == "reboot-days" {
					slices[name] = append(slices[name], strings.Split(value, ",")...)
				} else {
					slices[name] = append(slices[name], value)
				}
			} else if name == "reboot-days" {
				slices[name] = strings.Split(value, ",")
			} else {
				// kured's LoadFromEnv has no case for stringArray flags: the
				// variable is ignored (it prints "Unsupported flag type").
				c.Problems = append(c.Problems, "KURED_BLOCKING_POD_SELECTOR is ignored by kured (stringArray flags cannot come from the environment)")
				return
			}
			c.From[name] = from
			return
		}
		if err := c.setOne(name, value); err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("--%s from %s: %v", name, from, err))
			return
		}
		c.From[name] = from
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "--") || a == "--" {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !hasValue {
			if kuredBoolFlags[name] {
				value = "true"
			} else if i+1 < len(argv) {
				value = argv[i+1]
				i++
			}
		}
		set(name, value, "arg")
	}
	for _, name := range kuredFlags {
		v := "KURED_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if val, ok := env[v]; ok {
			set(name, val, "env "+v)
		}
		for _, f := range envFrom {
			if f == v {
				c.Problems = append(c.Problems, v+" comes from a Secret, ConfigMap or field reference: its value is not read")
			}
		}
	}
	if d, ok := slices["reboot-days"]; ok {
		c.RebootDays = d
	}
	if s, ok := slices["blocking-pod-selector"]; ok {
		c.BlockingPodSelectors = s
	}
	return c
}

func (c *KuredConfig) setOne(name, v string) error {
	dur := func(p *time.Duration) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration", v)
		}
		*p = d
		return nil
	}
	switch name {
	case "ds-name":
		c.DSName = v
	case "ds-namespace":
		c.DSNamespace = v
	case "lock-annotation":
		c.LockAnnotation = v
	case "lock-ttl":
		return dur(&c.LockTTL)
	case "lock-release-delay":
		return dur(&c.LockReleaseDelay)
	case "period":
		return dur(&c.Period)
	case "drain-timeout":
		return dur(&c.DrainTimeout)
	case "concurrency":
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(v) {
			return fmt.Errorf("%q is not an integer", v)
		}
		c.Concurrency = n
	case "start-time":
		c.StartTime = v
	case "end-time":
		c.EndTime = v
	case "time-zone":
		c.TimeZone = v
	case "prometheus-url":
		c.PrometheusURL = v
	case "alert-filter-regexp":
		c.AlertFilterRegexp = v
	case "alert-firing-only", "annotate-nodes", "alert-filter-match-only":
		var b bool
		switch strings.ToLower(v) {
		case "1", "t", "true":
			b = true
		case "0", "f", "false":
		default:
			return fmt.Errorf("%q is not a boolean", v)
		}
		switch name {
		case "annotate-nodes":
			c.AnnotateNodes = b
		case "alert-filter-match-only":
			c.AlertFilterMatchOnly = b
		default:
			c.AlertFiringOnly = b
		}
	}
	return nil
}

// Settings renders the configuration for the lock's detail, one flag per
// line in kuredFlags order, with where each value came from.
func (c *KuredConfig) Settings() []model.Evidence {
	if c == nil {
		return nil
	}
	val := map[string]string{
		"ds-name": c.DSName, "ds-namespace": c.DSNamespace, "lock-annotation": c.LockAnnotation,
		"lock-ttl": c.LockTTL.String(), "lock-release-delay": c.LockReleaseDelay.String(),
		"concurrency": fmt.Sprint(c.Concurrency), "period": c.Period.String(),
		"reboot-days": strings.Join(c.RebootDays, ","), "start-time": c.StartTime, "end-time": c.EndTime,
		"time-zone": c.TimeZone, "blocking-pod-selector": strings.Join(c.BlockingPodSelectors, " | "),
		"prometheus-url": c.PrometheusURL, "alert-filter-regexp": c.AlertFilterRegexp,
		"alert-firing-only": fmt.Sprint(c.AlertFiringOnly), "alert-filter-match-only": fmt.Sprint(c.AlertFilterMatchOnly),
		"drain-timeout":  c.DrainTimeout.String(),
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
func (c *KuredConfig) evidence() []model.Evidence {
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
