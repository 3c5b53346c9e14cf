// Command ansi2png renders a terminal screen captured with its ANSI styling
// (tmux capture-pane -e -p, or a golden file of View().Content) into a PNG,
// drawing each cell with DejaVu Sans Mono. `make screenshots` uses it to
// make the README's pictures without a browser or a display.
//
// It understands SGR sequences (bold, faint, italic, underline, reverse,
// 16/256/24-bit colours) and skips every other escape sequence. Box-drawing
// lines and block elements are drawn as shapes so borders join up.
// It must not do anything but read its input and write the PNG.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

type cell struct {
	r         rune
	fg, bg    color.Color // nil: default
	bold      bool
	faint     bool
	underline bool
	reverse   bool
}

type style struct {
	fg, bg                          color.Color
	bold, faint, underline, reverse bool
}

func main() {
	in := flag.String("in", "-", "input file of ANSI text (- for stdin)")
	out := flag.String("out", "", "output PNG file")
	cols := flag.Int("cols", 0, "screen width in cells (default: the longest line)")
	rows := flag.Int("rows", 0, "screen height in cells (default: the number of lines)")
	bg := flag.String("bg", "#1b1e24", "default background colour")
	fg := flag.String("fg", "#d0d4dc", "default foreground colour")
	size := flag.Float64("size", 15, "font size in pixels")
	fontDir := flag.String("fonts", "/usr/share/fonts/truetype/dejavu", "directory holding DejaVuSansMono.ttf and DejaVuSansMono-Bold.ttf")
	title := flag.String("title", "", "window title drawn above the screen (empty: none)")
	flag.Parse()
	if err := run(*in, *out, *cols, *rows, *bg, *fg, *size, *fontDir, *title); err != nil {
		fmt.Fprintln(os.Stderr, "ansi2png:", err)
		os.Exit(1)
	}
}

func run(in, out string, cols, rows int, bgS, fgS string, size float64, fontDir, title string) error {
	if out == "" {
		return errors.New("-out is required")
	}
	var r io.Reader = os.Stdin
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	defBg, err := parseHex(bgS)
	if err != nil {
		return fmt.Errorf("-bg: %w", err)
	}
	defFg, err := parseHex(fgS)
	if err != nil {
		return fmt.Errorf("-fg: %w", err)
	}
	grid, err := parse(r)
	if err != nil {
		return err
	}
	if rows == 0 {
		rows = len(grid)
	}
	if cols == 0 {
		for _, l := range grid {
			cols = max(cols, len(l))
		}
	}
	regular, err := loadFace(fontDir+"/DejaVuSansMono.ttf", size)
	if err != nil {
		return err
	}
	bold, err := loadFace(fontDir+"/DejaVuSansMono-Bold.ttf", size)
	if err != nil {
		return err
	}
	img := render(grid, cols, rows, regular, bold, defFg, defBg, title)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func loadFace(path string, size float64) (font.Face, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("font: %w (install fonts-dejavu-core)", err)
	}
	f, err := opentype.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("font %s: %w", path, err)
	}
	return opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
}

func parseHex(s string) (color.RGBA, error) {
	s = strings.TrimPrefix(s, "#")
	if len(s) != 6 {
		return color.RGBA{}, fmt.Errorf("%q: want #rrggbb", s)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return color.RGBA{}, fmt.Errorf("%q: want #rrggbb", s)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}, nil
}

// parse reads lines of ANSI text into cells.
func parse(r io.Reader) ([][]cell, error) {
	var grid [][]cell
	var st style
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		var row []cell
		for i := 0; i < len(line); {
			c := line[i]
			if c == 0x1b && i+1 < len(line) {
				switch line[i+1] {
				case '[':
					j := i + 2
					for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
						j++
					}
					if j < len(line) && line[j] == 'm' {
						sgr(&st, line[i+2:j])
					}
					i = j + 1
					continue
				case ']': // OSC … BEL or ST
					j := i + 2
					for j < len(line) && line[j] != 0x07 && !(line[j] == 0x1b && j+1 < len(line) && line[j+1] == '\\') {
						j++
					}
					if j < len(line) && line[j] == 0x1b {
						j++
					}
					i = j + 1
					continue
				default:
					i += 2
					continue
				}
			}
			ru, n := utf8.DecodeRuneInString(line[i:])
			i += n
			if ru == '\r' {
				continue
			}
			row = append(row, cell{r: ru, fg: st.fg, bg: st.bg, bold: st.bold, faint: st.faint, underline: st.underline, reverse: st.reverse})
		}
		grid = append(grid, row)
	}
	return grid, sc.Err()
}

var basic = [16]color.RGBA{
	{0x1b, 0x1e, 0x24, 0xff}, {0xe0, 0x6c, 0x75, 0xff}, {0x98, 0xc3, 0x79, 0xff}, {0xe5, 0xc0, 0x7b, 0xff},
	{0x61, 0xaf, 0xef, 0xff}, {0xc6, 0x78, 0xdd, 0xff}, {0x56, 0xb6, 0xc2, 0xff}, {0xab, 0xb2, 0xbf, 0xff},
	{0x5c, 0x63, 0x70, 0xff}, {0xff, 0x55, 0x55, 0xff}, {0x55, 0xff, 0x55, 0xff}, {0xff, 0xff, 0x55, 0xff},
	{0x55, 0x99, 0xff, 0xff}, {0xff, 0x55, 0xff, 0xff}, {0x55, 0xff, 0xff, 0xff}, {0xff, 0xff, 0xff, 0xff},
}

func indexed(n int) color.Color {
	switch {
	case n < 16:
		return basic[n]
	case n < 232:
		n -= 16
		lv := func(x int) uint8 {
			if x == 0 {
				return 0
			}
			return uint8(55 + 40*x)
		}
		return color.RGBA{lv(n / 36), lv(n / 6 % 6), lv(n % 6), 0xff}
	case n < 256:
		g := uint8(8 + 10*(n-232))
		return color.RGBA{g, g, g, 0xff}
	}
	return nil
}

func sgr(st *style, params string) {
	if params == "" {
		*st = style{}
		return
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	num := func(i int) int {
		if i >= len(ps) {
			return 0
		}
		n, _ := strconv.Atoi(ps[i])
		return n
	}
	for i := 0; i < len(ps); i++ {
		p := num(i)
		switch {
		case p == 0:
			*st = style{}
		case p == 1:
			st.bold = true
		case p == 2:
			st.faint = true
		case p == 4:
			st.underline = true
		case p == 7:
			st.reverse = true
		case p == 22:
			st.bold, st.faint = false, false
		case p == 24:
			st.underline = false
		case p == 27:
			st.reverse = false
		case p >= 30 && p <= 37:
			st.fg = basic[p-30]
		case p >= 90 && p <= 97:
			st.fg = basic[p-90+8]
		case p == 39:
			st.fg = nil
		case p >= 40 && p <= 47:
			st.bg = basic[p-40]
		case p >= 100 && p <= 107:
			st.bg = basic[p-100+8]
		case p == 49:
			st.bg = nil
		case p == 38 || p == 48:
			var c color.Color
			switch num(i + 1) {
			case 5:
				c = indexed(num(i + 2))
				i += 2
			case 2:
				c = color.RGBA{uint8(num(i + 2)), uint8(num(i + 3)), uint8(num(i + 4)), 0xff}
				i += 4
			}
			if p == 38 {
				st.fg = c
			} else {
				st.bg = c
			}
		}
	}
}

func blend(a, b color.Color, t float64) color.Color {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	mix := func(x, y uint32) uint8 { return uint8((float64(x>>8)*(1-t) + float64(y>>8)*t)) }
	return color.RGBA{mix(ar, br), mix(ag, bg), mix(ab, bb), 0xff}
}

func render(grid [][]cell, cols, rows int, regular, bold font.Face, defFg, defBg color.RGBA, title string) *image.RGBA {
	m := regular.Metrics()
	adv, _ := regular.GlyphAdvance('M')
	cw := adv.Ceil()
	ch := (m.Ascent + m.Descent).Ceil() + 2
	ascent := m.Ascent.Ceil() + 1
	pad := 16
	top := pad
	if title != "" {
		top += ch + 10
	}
	W, H := cols*cw+2*pad, rows*ch+top+pad
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), &image.Uniform{defBg}, image.Point{}, draw.Src)
	if title != "" {
		bar := blend(defBg, defFg, 0.08)
		draw.Draw(img, image.Rect(0, 0, W, ch+pad), &image.Uniform{bar}, image.Point{}, draw.Src)
		for i, c := range []color.RGBA{{0xff, 0x5f, 0x57, 0xff}, {0xfe, 0xbc, 0x2e, 0xff}, {0x28, 0xc8, 0x40, 0xff}} {
			x0, y0 := pad+i*20, (ch+pad)/2
			for dy := -6; dy <= 6; dy++ {
				for dx := -6; dx <= 6; dx++ {
					if dx*dx+dy*dy <= 30 {
						img.Set(x0+dx, y0+dy, c)
					}
				}
			}
		}
		d := &font.Drawer{Dst: img, Src: &image.Uniform{blend(defBg, defFg, 0.7)}, Face: regular}
		tw := d.MeasureString(title).Ceil()
		d.Dot = fixed.P((W-tw)/2, (ch+pad)/2+ascent/2-2)
		d.DrawString(title)
	}
	for y := 0; y < rows && y < len(grid); y++ {
		for x := 0; x < cols && x < len(grid[y]); x++ {
			c := grid[y][x]
			fg, bg := c.fg, c.bg
			if fg == nil {
				fg = defFg
			}
			if bg == nil {
				bg = defBg
			}
			if c.reverse {
				fg, bg = bg, fg
			}
			if c.faint {
				fg = blend(fg, bg, 0.45)
			}
			px, py := pad+x*cw, top+y*ch
			rect := image.Rect(px, py, px+cw, py+ch)
			if bg != color.Color(defBg) {
				draw.Draw(img, rect, &image.Uniform{bg}, image.Point{}, draw.Src)
			}
			if shape(img, c.r, rect, fg, bg) {
				continue
			}
			if c.r != ' ' {
				face := regular
				if c.bold {
					face = bold
				}
				d := &font.Drawer{Dst: img, Src: &image.Uniform{fg}, Face: face, Dot: fixed.P(px, py+ascent)}
				d.DrawString(string(c.r))
			}
			if c.underline {
				draw.Draw(img, image.Rect(px, py+ch-2, px+cw, py+ch-1), &image.Uniform{fg}, image.Point{}, draw.Src)
			}
		}
	}
	return img
}

// shape draws box-drawing and block characters as shapes filling the cell,
// so that borders are continuous. It reports whether it drew c.
func shape(img *image.RGBA, r rune, rc image.Rectangle, fg, bg color.Color) bool {
	cx := (rc.Min.X + rc.Max.X) / 2
	cy := (rc.Min.Y + rc.Max.Y) / 2
	u := &image.Uniform{fg}
	h := func(x0, x1 int) { draw.Draw(img, image.Rect(x0, cy, x1, cy+1), u, image.Point{}, draw.Src) }
	v := func(y0, y1 int) { draw.Draw(img, image.Rect(cx, y0, cx+1, y1), u, image.Point{}, draw.Src) }
	switch r {
	case '─':
		h(rc.Min.X, rc.Max.X)
	case '│':
		v(rc.Min.Y, rc.Max.Y)
	case '╭', '┌':
		h(cx, rc.Max.X)
		v(cy, rc.Max.Y)
	case '╮', '┐':
		h(rc.Min.X, cx+1)
		v(cy, rc.Max.Y)
	case '╰', '└':
		h(cx, rc.Max.X)
		v(rc.Min.Y, cy+1)
	case '╯', '┘':
		h(rc.Min.X, cx+1)
		v(rc.Min.Y, cy+1)
	case '█':
		draw.Draw(img, rc, u, image.Point{}, draw.Src)
	case '░':
		draw.Draw(img, rc, &image.Uniform{blend(bg, fg, 0.35)}, image.Point{}, draw.Src)
	default:
		return false
	}
	return true
}
