package model

import (
	"strings"
	"testing"
)

// TestVolumesFollowChanges: the volume list and summary are sorted once per
// change of the set of volumes, and still follow every add, update and
// delete made after a read.
func TestVolumesFollowChanges(t *testing.T) {
	c := NewCluster("t", Options{})
	keys := func() string {
		var out []string
		for _, v := range c.Volumes() {
			out = append(out, v.Key()+"="+string(v.Robustness))
		}
		return strings.Join(out, " ")
	}
	up := func(name string, r Robustness) {
		c.Apply(VolumeUpserted{Volume: Volume{Namespace: "lh", Name: name, Robustness: r}}, t0)
	}
	up("b", RobustnessHealthy)
	up("c", RobustnessHealthy)
	if got, want := keys(), "lh/b=healthy lh/c=healthy"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	up("a", RobustnessDegraded)                            // a new volume after a read
	up("c", RobustnessFaulted)                             // an update
	c.Apply(VolumeDeleted{Namespace: "lh", Name: "b"}, t0) // a delete
	c.Apply(VolumeDeleted{Namespace: "lh", Name: "x"}, t0) // of a volume never seen
	if got, want := keys(), "lh/a=degraded lh/c=faulted"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s := c.VolumeSummary()
	if s.Total != 2 || s.Degraded != 1 || s.Faulted != 1 || strings.Join(s.NotHealthy, " ") != "lh/a lh/c" {
		t.Errorf("summary %+v", s)
	}
	up("0", RobustnessHealthy)
	if s := c.VolumeSummary(); s.Total != 3 || s.Healthy != 1 {
		t.Errorf("summary after an add %+v", s)
	}
	if got, want := keys(), "lh/0=healthy lh/a=degraded lh/c=faulted"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
