package model

import "testing"

func TestOSFamily(t *testing.T) {
	for in, want := range map[string]string{
		"Fedora CoreOS 41.20241027.3.0":                      "Fedora CoreOS",
		"Fedora CoreOS 40.20240906.3.0":                      "Fedora CoreOS",
		"Windows Server 2022 Datacenter":                     "Windows Server Datacenter",
		"Ubuntu 22.04.4 LTS":                                 "Ubuntu LTS",
		"Debian GNU/Linux 12 (bookworm)":                     "Debian GNU/Linux",
		"Flatcar Container Linux by Kinvolk 3975.2.2 (Oklo)": "Flatcar Container Linux by Kinvolk",
		"": "",
	} {
		if got := OSFamily(in); got != want {
			t.Errorf("OSFamily(%q) = %q, want %q", in, got, want)
		}
	}
}

// A Windows node among Fedora CoreOS nodes is not the fleet's target: each
// family has its own, and progress is told per family.
func TestTargetsPerOSFamily(t *testing.T) {
	c := NewCluster("x", Options{})
	c.Apply(NodeUpserted{readyNode("f1", "1", "Fedora CoreOS 41.20241027.3.0", "6.11.5-300.fc41.x86_64", true)}, t0)
	c.Apply(NodeUpserted{readyNode("f2", "2", "Fedora CoreOS 41.20241027.3.0", "6.11.5-300.fc41.x86_64", true)}, t0)
	c.Apply(NodeUpserted{readyNode("f3", "3", "Fedora CoreOS 40.20240906.3.0", "6.10.6-200.fc40.x86_64", true)}, t0)
	c.Apply(NodeUpserted{readyNode("win", "4", "Windows Server 2022 Datacenter", "10.0.20348.2227", true)}, t0)
	c.Recompute(t0)
	f := c.Fleet(t0)
	if f.Target.Image != "Fedora CoreOS 41.20241027.3.0" {
		t.Fatalf("target %v, want the Fedora CoreOS family's newest", f.Target)
	}
	if f.Upgraded != 3 || f.Nodes != 4 {
		t.Fatalf("upgraded %d/%d, want 3/4 (the Windows node runs its family's newest)", f.Upgraded, f.Nodes)
	}
	if len(f.Families) != 2 || f.Families[0].Family != "Fedora CoreOS" || f.Families[0].Nodes != 3 || f.Families[0].Upgraded != 2 ||
		f.Families[1].Family != "Windows Server Datacenter" || f.Families[1].Upgraded != 1 {
		t.Fatalf("families %+v", f.Families)
	}
	win, _ := c.Node("win")
	if to := c.TargetFor(win); to.Image != "Windows Server 2022 Datacenter" {
		t.Fatalf("the Windows node's target is %v", to)
	}
	f3, _ := c.Node("f3")
	if c.Upgraded(f3, f.Target) || c.TargetFor(f3) != f.Target {
		t.Fatal("f3 runs Fedora CoreOS 40: not upgraded, target Fedora CoreOS 41")
	}
	s := c.Snapshot(t0)
	if len(s.Fleet.Families) != 2 || s.Fleet.TargetOS != f.Target.String() {
		t.Fatalf("snapshot fleet %+v", s.Fleet)
	}
	// One family: no per-family list.
	one := NewCluster("y", Options{})
	one.Apply(NodeUpserted{readyNode("a", "1", "Ubuntu 24.04.2 LTS", "6.8.0-57-generic", true)}, t0)
	one.Recompute(t0)
	if fl := one.Fleet(t0); len(fl.Families) != 0 {
		t.Fatalf("one family listed: %+v", fl.Families)
	}
}

// --target-os matches a whole image, kernel or version, never a part of one.
func TestTargetOSMatchesAWholeVersion(t *testing.T) {
	for _, tc := range []struct {
		target, image, kernel string
		want                  bool
	}{
		{"4", "Fedora CoreOS 41.20241027.3.0", "6.11.5", false},
		{"41", "Fedora CoreOS 41.20241027.3.0", "6.11.5", false},
		{"41.20241027.3.0", "Fedora CoreOS 41.20241027.3.0", "6.11.5", true},
		{"22.04.5", "Ubuntu 22.04.5 LTS", "5.15.0-125-generic", true},
		{"22.04", "Ubuntu 22.04.5 LTS", "5.15.0-125-generic", false},
		{"Ubuntu 22.04.5", "Ubuntu 22.04.5 LTS", "5.15.0-125-generic", true},
		{"5.15.0-125-generic", "Ubuntu 22.04.5 LTS", "5.15.0-125-generic", true},
		{"5.15.0", "Ubuntu 22.04.5 LTS", "5.15.0-125-generic", false},
	} {
		c := NewCluster("x", Options{TargetOS: tc.target})
		n := readyNode("a", "1", tc.image, tc.kernel, true)
		c.Apply(NodeUpserted{n}, t0)
		nd, _ := c.Node("a")
		if got := c.Upgraded(nd, c.TargetOS()); got != tc.want {
			t.Errorf("--target-os %q on %q/%q: upgraded %v, want %v", tc.target, tc.image, tc.kernel, got, tc.want)
		}
	}
}
