package nodes

import (
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

func TestSplitOS(t *testing.T) {
	for _, c := range []struct{ image, distro, version string }{
		{"Ubuntu 24.04.3 LTS", "Ubuntu", "24.04.3"},
		{"Fedora CoreOS 43.20251110.3.1", "Fedora CoreOS", "43.20251110.3.1"},
		{"Flatcar Container Linux by Kinvolk 4152.2.0 (Oklo)", "Flatcar Container Linux", "4152.2.0"},
		{"Talos (v1.7.0)", "Talos", "v1.7.0"},
		{"Debian GNU/Linux 12 (bookworm)", "Debian GNU/Linux", "12"},
		{"Bottlerocket OS 1.20.0 (aws-k8s-1.29)", "Bottlerocket OS", "1.20.0"},
		{"Container-Optimized OS from Google", "Container-Optimized OS from Google", ""},
		{"", "", ""},
	} {
		d, v := SplitOS(c.image)
		if d != c.distro || v != c.version {
			t.Errorf("SplitOS(%q) = %q, %q; want %q, %q", c.image, d, v, c.distro, c.version)
		}
	}
}

// TestOSLabels: the OS column's versions, from the images, the kernels
// when the images are equal, and FLUO's new-version annotation.
func TestOSLabels(t *testing.T) {
	ub := func(img, kernel string, ann map[string]string) *model.Node {
		return &model.Node{OSImage: img, KernelVersion: kernel, Annotations: ann}
	}
	for _, c := range []struct {
		name             string
		n                *model.Node
		target           model.OS
		upgraded         bool
		distro, from, to string
	}{
		{"image", ub("Ubuntu 24.04.3 LTS", "6.8.0-60", nil), model.OS{Image: "Ubuntu 24.04.4 LTS", Kernel: "6.8.0-62"}, false, "Ubuntu", "24.04.3", "24.04.4"},
		{"upgraded", ub("Ubuntu 24.04.4 LTS", "6.8.0-62", nil), model.OS{Image: "Ubuntu 24.04.4 LTS", Kernel: "6.8.0-62"}, true, "Ubuntu", "24.04.4", ""},
		{"kernel", ub("Ubuntu 24.04.4 LTS", "6.8.0-60", nil), model.OS{Image: "Ubuntu 24.04.4 LTS", Kernel: "6.8.0-62"}, false, "Ubuntu", "6.8.0-60", "6.8.0-62"},
		{"another distribution", ub("Ubuntu 22.04.5 LTS", "5.15", nil), model.OS{Image: "Debian GNU/Linux 12 (bookworm)"}, false, "Ubuntu", "22.04.5", "Debian GNU/Linux 12 (bookworm)"},
		{"flatcar new-version", ub("Flatcar Container Linux by Kinvolk 4081.2.1 (Oklo)", "6.6.74-flatcar",
			map[string]string{flatcar.AnnNewVersion: "4152.2.0", flatcar.AnnRebootNeeded: "true"}),
			model.OS{Image: "Flatcar Container Linux by Kinvolk 4081.2.1 (Oklo)", Kernel: "6.6.74-flatcar"}, true, "Flatcar Container Linux", "4081.2.1", "4152.2.0"},
		{"flatcar idle", ub("Flatcar Container Linux by Kinvolk 4152.2.0 (Oklo)", "6.6.74-flatcar",
			map[string]string{flatcar.AnnNewVersion: "0.0.0", flatcar.AnnRebootNeeded: "false"}),
			model.OS{Image: "Flatcar Container Linux by Kinvolk 4152.2.0 (Oklo)", Kernel: "6.6.74-flatcar"}, true, "Flatcar Container Linux", "4152.2.0", ""},
	} {
		d, f, to := osLabels(c.n, c.target, c.upgraded)
		if d != c.distro || f != c.from || to != c.to {
			t.Errorf("%s: osLabels = %q, %q, %q; want %q, %q, %q", c.name, d, f, to, c.distro, c.from, c.to)
		}
	}
}

// TestMeasureMatchesCells: the widths measured without building the cells
// are the cells' widths.
func TestMeasureMatchesCells(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rows := []Row{
		{Phase: model.PhaseDraining, Since: now.Add(-9*time.Minute - 59*time.Second), OSFrom: "24.04.3", OSTo: "24.04.4", OSDistro: "Ubuntu"},
		{Phase: model.PhaseDone, StillCordoned: true, OSFrom: "4152.2.0", OSDistro: "Flatcar Container Linux"},
		{Phase: model.PhaseIdle, Since: now.Add(-time.Hour), OSFrom: "v1.7.0", OSDistro: "Talos"},
		{Phase: model.PhaseDown, Since: now.Add(-50 * time.Hour), OSFrom: "12", OSTo: "Ubuntu 24.04.3 LTS", OSDistro: "Debian GNU/Linux"},
	}
	for i := range rows {
		r := &rows[i]
		ph, _ := cellPhase(pctx.Painter{}, r, now, 1<<20)
		tb := Table{all: []Row{*r}}
		tb.measure(now)
		if tb.widths.phase != max(pctx.Width(ph), 5) {
			t.Errorf("row %d: phase measured %d, cell %q", i, tb.widths.phase, ph)
		}
		for _, mixed := range []bool{false, true} {
			os, _ := osCell(pctx.Painter{}, r, mixed)
			if osWidth(r, mixed) != pctx.Width(os) {
				t.Errorf("row %d mixed %v: OS measured %d, cell %q", i, mixed, osWidth(r, mixed), os)
			}
		}
	}
}
