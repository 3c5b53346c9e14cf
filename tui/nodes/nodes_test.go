package nodes

import "testing"

func TestDropCommonWords(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"Ubuntu 22.04.4 LTS", "Ubuntu 22.04.5 LTS", "22.04.5 LTS"},
		{"Fedora CoreOS 40", "Fedora CoreOS 41", "41"},
		{"5.15.0-105-generic", "5.15.0-125-generic", "5.15.0-125-generic"},
		{"same", "same", "same"},
		{"", "Ubuntu", "Ubuntu"},
	} {
		if got := dropCommonWords(c.from, c.to); got != c.want {
			t.Errorf("dropCommonWords(%q, %q) = %q; want %q", c.from, c.to, got, c.want)
		}
	}
}
