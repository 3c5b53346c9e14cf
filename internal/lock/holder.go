package lock

import (
	"encoding/hex"
	"sort"
	"strings"

	"github.com/rebootwatch/rebootwatch/model"
)

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

// Resolve maps a holder id of a lock kind to nodes, through the kind's
// driver; an unregistered kind is inconclusive.
func (ix *Index) Resolve(kind model.LockKind, holder string) Mapping {
	d, err := DriverFor(kind)
	if err != nil {
		return Mapping{Kind: MatchInconclusive, How: err.Error()}
	}
	return d.Resolve(ix, holder)
}

// byName maps a holder that is a node name (exactly, else
// case-insensitively); ok is false when no node has that name.
func (ix *Index) byName(holder string) (Mapping, bool) {
	if ix.exists(holder) {
		return Mapping{Kind: MatchOne, Nodes: []string{holder}, How: "holder is the node name"}, true
	}
	h := strings.ToLower(strings.TrimSpace(holder))
	var byName []string
	for _, n := range ix.nodes {
		if n != nil && strings.EqualFold(n.Name, h) {
			byName = append(byName, n.Name)
		}
	}
	if len(byName) > 0 {
		return several(byName, "holder matches the node name case-insensitively"), true
	}
	return Mapping{}, false
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
