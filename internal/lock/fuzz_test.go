package lock

import (
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock"
	"github.com/rebootwatch/rebootwatch/model"
)

// FuzzHolderMapping: mapping a holder never panics; every node it returns
// is a real node; a holder equal to a node's name maps to that node alone;
// a fleetlock holder equal to a node's Zincati id maps to that node (and to
// every node sharing its machine id); MatchNone is only claimed when every
// node could be checked.
func FuzzHolderMapping(f *testing.F) {
	f.Add("n1", "n1", mid1, "n2", mid2, true)
	f.Add(zid1, "n1", mid1, "n2", mid1, true)
	f.Add(zid1, "n1", mid1, "n2", "", true)
	f.Add("manual", "n1", mid1, "manual", mid2, false)
	f.Add("N1", "n1", "", "n2", "", false)
	f.Add("978A225B3D7B40E9ACD7CE9B62F68444", "a", mid1, "b", "zz", true)
	f.Fuzz(func(t *testing.T, holder, name1, mach1, name2, mach2 string, isFleet bool) {
		if name1 == "" || name2 == "" || name1 == name2 {
			return
		}
		nodes := []*model.Node{{Name: name1, MachineID: mach1}, {Name: name2, MachineID: mach2}}
		kind := model.LockKured
		if isFleet {
			kind = model.LockFleetlock
		}
		m := resolve(NewIndex(nodes, nil), kind, holder)
		if m.How == "" {
			t.Fatal("mapping without explanation")
		}
		for _, n := range m.Nodes {
			if n != name1 && n != name2 {
				t.Fatalf("mapped to non-node %q", n)
			}
		}
		switch m.Kind {
		case MatchOne:
			if len(m.Nodes) != 1 {
				t.Fatalf("one with %v", m.Nodes)
			}
		case MatchSeveral:
			if len(m.Nodes) < 2 {
				t.Fatalf("several with %v", m.Nodes)
			}
		default:
			if len(m.Nodes) != 0 {
				t.Fatalf("%s with nodes %v", m.Kind, m.Nodes)
			}
		}
		for _, n := range nodes {
			if holder == n.Name && (m.Kind != MatchOne || m.Nodes[0] != n.Name) {
				t.Fatalf("holder %q equal to a node name mapped to %+v", holder, m)
			}
		}
		if isFleet && m.Kind == MatchNone {
			for _, n := range nodes {
				if _, err := fleetlock.ZincatiNodeID(n.MachineID); err != nil {
					t.Fatalf("MatchNone although node %s has no usable machine id", n.Name)
				}
			}
		}
		if isFleet && holder != name1 && holder != name2 && !strings.EqualFold(strings.TrimSpace(holder), name1) && !strings.EqualFold(strings.TrimSpace(holder), name2) {
			for _, n := range nodes {
				id, err := fleetlock.ZincatiNodeID(n.MachineID)
				if err == nil && id == strings.ToLower(strings.TrimSpace(holder)) {
					found := false
					for _, x := range m.Nodes {
						found = found || x == n.Name
					}
					if !found {
						t.Fatalf("holder is %s's Zincati id but mapped to %+v", n.Name, m)
					}
				}
			}
		}
	})
}
