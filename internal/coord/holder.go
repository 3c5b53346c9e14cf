package coord

import (
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
// on demand (locks are few, nodes many), so building it costs nothing; ids
// a kind derives from a node (fleetlock's Zincati id of its machine id)
// come from a cache that lives across judgements (Cached).
type Index struct {
	nodes  []*model.Node
	exists func(name string) bool
	cache  map[string]string
}

// NewIndex builds the holder index of a set of nodes. cache (key -> derived
// id, see Cached) may be nil; the engine passes one that lives across
// judgements.
func NewIndex(nodes []*model.Node, cache map[string]string) *Index {
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if n != nil {
			names[n.Name] = true
		}
	}
	return newIndex(nodes, func(n string) bool { return names[n] }, cache)
}

// NewIndexFunc is NewIndex with the node-name test given (the engine's
// live node set, which may hold more names than nodes).
func NewIndexFunc(nodes []*model.Node, exists func(string) bool, cache map[string]string) *Index {
	return newIndex(nodes, exists, cache)
}

func newIndex(nodes []*model.Node, exists func(string) bool, cache map[string]string) *Index {
	if cache == nil {
		cache = map[string]string{}
	}
	return &Index{nodes: nodes, exists: exists, cache: cache}
}

// Exists reports whether a node of that exact name exists.
func (ix *Index) Exists(name string) bool { return ix.exists(name) }

// Nodes are the nodes the index maps to.
func (ix *Index) Nodes() []*model.Node { return ix.nodes }

// Cached returns the id derive gives key (a node's machine id), computed
// once per key for as long as the cache lives; ok is false when derive
// fails for it (an unusable key, remembered as such).
func (ix *Index) Cached(key string, derive func(string) (string, error)) (id string, ok bool) {
	if id, ok := ix.cache[key]; ok {
		return id, id != ""
	}
	id, err := derive(key)
	if err != nil {
		id = ""
	}
	if len(ix.cache) > 200000 {
		clear(ix.cache)
	}
	ix.cache[key] = id
	return id, id != ""
}

// ByName maps a holder that is a node name (exactly, else
// case-insensitively); ok is false when no node has that name.
func (ix *Index) ByName(holder string) (Mapping, bool) {
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
		return Several(byName, "holder matches the node name case-insensitively"), true
	}
	return Mapping{}, false
}

// Several is the mapping to nodes ns (MatchOne for one, else MatchSeveral,
// sorted); how says how they matched.
func Several(ns []string, how string) Mapping {
	if len(ns) == 1 {
		return Mapping{Kind: MatchOne, Nodes: []string{ns[0]}, How: how}
	}
	out := append([]string(nil), ns...)
	sort.Strings(out)
	return Mapping{Kind: MatchSeveral, Nodes: out, How: how}
}
