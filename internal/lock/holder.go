package lock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/rebootwatch/rebootwatch/model"
)

// zincatiAppID is Zincati's systemd application id (DESIGN §3).
var zincatiAppID = mustHex("de35106b6ec24688b63afddaa156679b")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// normalMachineID returns the 16 raw bytes of a machine id given as 32 hex
// digits (dashes, surrounding space and case are ignored).
func normalMachineID(id string) ([]byte, error) {
	s := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(id, "-", "")))
	if len(s) != 32 {
		return nil, fmt.Errorf("machine id %q is not 32 hex digits", clip(id))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("machine id %q is not hex", clip(id))
	}
	return b, nil
}

// ZincatiNodeID returns the id Zincati sends to fleetlock for a node: the
// systemd app-specific id of its machine id (sd_id128_get_machine_app_specific
// with Zincati's app id), as 32 lower-case hex digits.
func ZincatiNodeID(machineID string) (string, error) {
	key, err := normalMachineID(machineID)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write(zincatiAppID)
	sum := m.Sum(nil)[:16]
	sum[6] = (sum[6] & 0x0F) | 0x40
	sum[8] = (sum[8] & 0x3F) | 0x80
	return hex.EncodeToString(sum), nil
}

// MatchKind says how conclusive a holder mapping is.
type MatchKind string

// Holder mapping results.
const (
	// MatchOne: the holder is exactly one current node.
	MatchOne MatchKind = "one"
	// MatchSeveral: the holder maps to two or more nodes (ambiguous).
	MatchSeveral MatchKind = "several"
	// MatchNone: no current node is the holder, and every node could be
	// checked, so the holder is provably not a current node.
	MatchNone MatchKind = "none"
	// MatchInconclusive: no node matched but some could not be checked
	// (no usable machine id) or the holder has an unknown form.
	MatchInconclusive MatchKind = "inconclusive"
	// MatchManual: kured's manual lock, held by an operator, not a node.
	MatchManual MatchKind = "manual"
)

// Mapping is where a lock holder maps to.
type Mapping struct {
	Kind  MatchKind
	Nodes []string
	// How says how the match was made, for the evidence.
	How string
}

// Index maps holder ids to nodes for one judgement. It scans the node list
// on demand (locks are few, nodes many), so building it costs nothing; the
// Zincati ids come from a cache keyed by machine id.
type Index struct {
	nodes  []*model.Node
	exists func(name string) bool
	cache  appIDCache
}

// appIDCache caches Zincati ids by machine id ("" = unusable machine id).
type appIDCache map[string]string

func (c appIDCache) get(machineID string) (string, bool) {
	if id, ok := c[machineID]; ok {
		return id, id != ""
	}
	id, err := ZincatiNodeID(machineID)
	if err != nil {
		id = ""
	}
	if len(c) > 200000 {
		clear(c)
	}
	c[machineID] = id
	return id, id != ""
}

// NewIndex builds the holder index of a set of nodes. cache (machine id ->
// Zincati id) may be nil; the engine passes one that lives across judgements.
func NewIndex(nodes []*model.Node, cache map[string]string) *Index {
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if n != nil {
			names[n.Name] = true
		}
	}
	return newIndex(nodes, func(n string) bool { return names[n] }, cache)
}

func newIndex(nodes []*model.Node, exists func(string) bool, cache map[string]string) *Index {
	if cache == nil {
		cache = map[string]string{}
	}
	return &Index{nodes: nodes, exists: exists, cache: appIDCache(cache)}
}

// Resolve maps a holder id of a lock kind to nodes. kured holders are Node
// names (matched exactly, else case-insensitively); fleetlock holders are
// Zincati ids (also accepted: a node name or a raw machine id).
func (ix *Index) Resolve(kind model.LockKind, holder string) Mapping {
	if kind == model.LockKured && holder == ManualHolder && !ix.exists(holder) {
		return Mapping{Kind: MatchManual, How: `nodeID "manual" is kured's manual lock`}
	}
	if ix.exists(holder) {
		return Mapping{Kind: MatchOne, Nodes: []string{holder}, How: "holder is the node name"}
	}
	h := strings.ToLower(strings.TrimSpace(holder))
	var byName []string
	for _, n := range ix.nodes {
		if n != nil && strings.EqualFold(n.Name, h) {
			byName = append(byName, n.Name)
		}
	}
	if len(byName) > 0 {
		return several(byName, "holder matches the node name case-insensitively")
	}
	if kind != model.LockFleetlock {
		return Mapping{Kind: MatchNone, How: fmt.Sprintf("no current node is named %q", clip(holder))}
	}
	if !isHex32(h) {
		return Mapping{Kind: MatchInconclusive, How: fmt.Sprintf("holder %q is neither a Zincati node id nor a node name", clip(holder))}
	}
	var byApp, byMachine, unusable []string
	for _, n := range ix.nodes {
		if n == nil {
			continue
		}
		id, ok := ix.cache.get(n.MachineID)
		if !ok {
			unusable = append(unusable, n.Name)
			continue
		}
		if id == h {
			byApp = append(byApp, n.Name)
		} else if strings.EqualFold(strings.ReplaceAll(strings.TrimSpace(n.MachineID), "-", ""), h) {
			byMachine = append(byMachine, n.Name)
		}
	}
	switch {
	case len(byApp) > 0:
		return several(byApp, "holder is the Zincati id of the node's machine id")
	case len(byMachine) > 0:
		return several(byMachine, "holder is the node's raw machine id")
	case len(unusable) > 0:
		return Mapping{Kind: MatchInconclusive, How: fmt.Sprintf("no node has Zincati id %s, but %d node(s) report no usable machine id (%s)", h, len(unusable), list(unusable, 3))}
	}
	return Mapping{Kind: MatchNone, How: fmt.Sprintf("no current node's machine id gives Zincati id %s", h)}
}

func several(ns []string, how string) Mapping {
	if len(ns) == 1 {
		return Mapping{Kind: MatchOne, Nodes: []string{ns[0]}, How: how}
	}
	out := append([]string(nil), ns...)
	sort.Strings(out)
	return Mapping{Kind: MatchSeveral, Nodes: out, How: how}
}

func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func list(xs []string, max int) string {
	if len(xs) <= max {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:max], ", ") + fmt.Sprintf(" and %d more", len(xs)-max)
}
