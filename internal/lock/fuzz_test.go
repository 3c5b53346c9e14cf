package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// FuzzParseKured: the kured annotation parser never panics, and whatever it
// accepts is well-formed: every entry has a non-empty nodeID, no entry is
// listed twice, TTLs are not negative, and removing an entry from an
// accepted multi-lock leaves a value that parses to the other entries.
func FuzzParseKured(f *testing.F) {
	for _, s := range []string{
		`{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-11-29T12:00:00Z","TTL":0}`,
		`{"nodeID":"n1"}`,
		`{"nodeID":"manual"}`,
		`{"maxOwners":2,"locks":[{"nodeID":"n1","created":"2026-11-29T12:00:00Z","TTL":3600000000000},{"nodeID":"n2"}]}`,
		`{"maxOwners":2,"locks":[]}`,
		`{"maxOwners":2,"locks":null}`,
		`{"nodeID":`, `null`, `[]`, `""`, `{"nodeID":1}`, `{"nodeID":"n1","TTL":"1h"}`, `{"nodeID":"n1","TTL":-5}`,
		`{"nodeID":"n1","created":"yesterday"}`, `{"locks":[{"nodeID":"a"},{"nodeID":"a"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		l, err := ParseKured(v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, e := range l.Entries {
			if strings.TrimSpace(e.NodeID) == "" {
				t.Fatalf("accepted entry without nodeID from %q", v)
			}
			if e.TTL < 0 {
				t.Fatalf("negative TTL from %q", v)
			}
			_ = e.Expired(time.Now())
		}
		if !l.Multi && len(l.Entries) != 1 {
			t.Fatalf("single lock with %d entries from %q", len(l.Entries), v)
		}
		if l.Multi && len(l.Entries) > 0 {
			victim := l.Entries[0].NodeID
			nv, last, err := RemoveKuredEntry(v, 0, victim)
			if err != nil {
				t.Fatalf("cannot remove %q from accepted %q: %v", victim, v, err)
			}
			if last != (len(l.Entries) == 1) {
				t.Fatalf("removal of the only entry of %q: last %v", v, last)
			}
			if last {
				return
			}
			after, err := ParseKured(nv)
			if err != nil {
				t.Fatalf("removal gave unparsable %q: %v", nv, err)
			}
			if len(after.Entries) != len(l.Entries)-1 || after.MaxOwners != l.MaxOwners {
				t.Fatalf("removal of %q from %q gave %q", victim, v, nv)
			}
			for i, e := range after.Entries {
				if e != l.Entries[i+1] {
					t.Fatalf("removal changed entry %d: %+v vs %+v", i, e, l.Entries[i+1])
				}
			}
		}
	})
}

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
	f.Fuzz(func(t *testing.T, holder, name1, mach1, name2, mach2 string, fleetlock bool) {
		if name1 == "" || name2 == "" || name1 == name2 {
			return
		}
		nodes := []*model.Node{{Name: name1, MachineID: mach1}, {Name: name2, MachineID: mach2}}
		kind := model.LockKured
		if fleetlock {
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
		if fleetlock && m.Kind == MatchNone {
			for _, n := range nodes {
				if _, err := ZincatiNodeID(n.MachineID); err != nil {
					t.Fatalf("MatchNone although node %s has no usable machine id", n.Name)
				}
			}
		}
		if fleetlock && holder != name1 && holder != name2 && !strings.EqualFold(strings.TrimSpace(holder), name1) && !strings.EqualFold(strings.TrimSpace(holder), name2) {
			for _, n := range nodes {
				id, err := ZincatiNodeID(n.MachineID)
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
