package main

import (
	"image/color"
	"strings"
	"testing"
)

func TestParseSGR(t *testing.T) {
	g, err := parse(strings.NewReader("a\x1b[1;38;2;1;2;3mb\x1b[m\x1b[48;5;196mc\x1b[0m\x1b]8;;x\x07d\n\x1b[7;2me"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != 2 || len(g[0]) != 4 || len(g[1]) != 1 {
		t.Fatalf("grid = %+v", g)
	}
	if g[0][0].fg != nil || g[0][0].bold {
		t.Errorf("a styled: %+v", g[0][0])
	}
	if g[0][1].fg != (color.RGBA{1, 2, 3, 0xff}) || !g[0][1].bold {
		t.Errorf("b = %+v", g[0][1])
	}
	if g[0][2].bg != (color.RGBA{255, 0, 0, 0xff}) || g[0][2].bold {
		t.Errorf("c = %+v", g[0][2])
	}
	if g[0][3].r != 'd' {
		t.Errorf("OSC not skipped: %+v", g[0][3])
	}
	if !g[1][0].reverse || !g[1][0].faint {
		t.Errorf("e = %+v", g[1][0])
	}
}
