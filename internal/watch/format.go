package watch

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/themes"
)

// TimeFormat is the timestamp of text and JSON lines (UTC).
const TimeFormat = time.RFC3339

// jsonLine is the -o json form of a line. Its field names are a public interface.
type jsonLine struct {
	Time     string         `json:"time"`
	Context  string         `json:"context"`
	Kind     Kind           `json:"kind"`
	Seq      uint64         `json:"seq,omitempty"`
	Node     string         `json:"node,omitempty"`
	Severity model.Severity `json:"severity"`
	Message  string         `json:"message"`
	Progress *Progress      `json:"progress,omitempty"`
	// Blocker and Nodes are set on blocker lines (additive).
	Blocker model.BlockerKind `json:"blocker,omitempty"`
	Nodes   []string          `json:"nodes,omitempty"`
}

// JSON renders the line as one JSON object (no newline). The runes
// encoding/json leaves raw that a terminal obeys (C1 and bidi controls)
// are \uXXXX escapes: the value is the same (sanitize.JSON).
func (l Line) JSON() ([]byte, error) {
	b, err := json.Marshal(jsonLine{Time: l.Time.UTC().Format(TimeFormat), Context: l.Context, Kind: l.Kind,
		Seq: l.Seq, Node: l.Node, Severity: l.Severity, Message: l.Message, Progress: l.Progress, Blocker: l.Blocker, Nodes: l.Nodes})
	if err != nil {
		return nil, err
	}
	return sanitize.JSON(b), nil
}

// Styles colour text lines; the zero value is plain.
type Styles struct {
	on                                   bool
	time, ctx, kind, warn, crit, ok, sum lipgloss.Style
}

// NewStyles returns the styles for a terminal (color: the dark theme's
// colours) or plain output.
func NewStyles(color bool) Styles {
	if !color {
		return Styles{}
	}
	return ThemeStyles(themes.Dark())
}

// ThemeStyles colours text lines with t's colours for their tones.
func ThemeStyles(t *themes.Theme) Styles {
	fg := func(x model.Tone) lipgloss.Style { return lipgloss.NewStyle().Foreground(t.Tone(x)) }
	return Styles{on: true,
		time: lipgloss.NewStyle().Faint(true),
		ctx:  lipgloss.NewStyle().Foreground(t.Accent),
		kind: fg(model.ToneInfo),
		warn: fg(model.ToneWarning),
		crit: fg(model.ToneCritical).Bold(true),
		ok:   fg(model.ToneOK),
		sum:  lipgloss.NewStyle().Bold(true),
	}
}

func (s Styles) r(st lipgloss.Style, x string) string {
	if !s.on || x == "" {
		return x
	}
	return st.Render(x)
}

// maxMessage bounds a text line's message: a 200,000-character holder is
// shown shortened.
const maxMessage = 400

// kindWidth pads the kind column (the longest kind is 7 cells).
const kindWidth = 7

// Text renders the line for humans:
//
//	2026-11-29T02:00:10Z [ctx] phase   cp-2 pending → draining
//
// The context appears only when the watcher prefixes (several clusters).
// Critical lines are marked "✗" and warnings "!" so they stand out when
// plain.
func (l Line) Text(s Styles) string {
	var b strings.Builder
	b.WriteString(s.r(s.time, l.Time.UTC().Format(TimeFormat)))
	b.WriteByte(' ')
	if l.Prefix {
		b.WriteString(s.r(s.ctx, "["+sanitize.Short(l.Context, 64)+"]"))
		b.WriteByte(' ')
	}
	kind := fmt.Sprintf("%-*s", kindWidth, string(l.Kind))
	mark := " "
	// Messages embed holders, node names, OS images and API errors: the
	// text form sanitises them here, its one boundary (JSON escapes itself).
	msg := sanitize.Short(l.Message, maxMessage)
	switch l.Severity.Tone() {
	case model.ToneCritical:
		mark = "✗"
		kind, msg = s.r(s.crit, kind), s.r(s.crit, msg)
	case model.ToneWarning:
		mark = "!"
		kind, msg = s.r(s.warn, kind), s.r(s.warn, msg)
	default:
		switch l.Kind {
		case KindSummary, KindStart:
			kind, msg = s.r(s.kind, kind), s.r(s.sum, msg)
		case KindDone:
			kind, msg = s.r(s.ok, kind), s.r(s.ok, msg)
		default:
			kind = s.r(s.kind, kind)
		}
	}
	b.WriteString(mark)
	b.WriteByte(' ')
	b.WriteString(kind)
	b.WriteByte(' ')
	b.WriteString(msg)
	return b.String()
}
