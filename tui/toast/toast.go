// Package toast is the dashboard's transient notice: an action's outcome or
// a short message, shown for a few seconds above the footer. It is state
// plus a pure render function; expiry is decided by the root's clock.
package toast

import (
	"time"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/tui/pctx"
)

// Kind colours a toast.
type Kind int

// Toast kinds.
const (
	Info Kind = iota
	Success
	Warn
	Error
)

// Lifetime is how long a toast stays.
const Lifetime = 6 * time.Second

// Toast is one notice.
type Toast struct {
	Text  string
	Kind  Kind
	Until time.Time
}

// New returns a toast shown from now for Lifetime.
func New(text string, k Kind, now time.Time) *Toast {
	return &Toast{Text: text, Kind: k, Until: now.Add(Lifetime)}
}

// Expired reports whether the toast should go.
func (t *Toast) Expired(now time.Time) bool { return t == nil || !now.Before(t.Until) }

// ForOutcome maps an action outcome to a kind.
func ForOutcome(outcome model.Outcome) Kind {
	switch outcome {
	case model.OutcomeDone:
		return Success
	case model.OutcomeDryRun:
		return Info
	case model.OutcomeRefused, model.OutcomeConflict:
		return Warn
	}
	return Error
}

// Render draws the toast on one line of at most w cells.
func (t *Toast) Render(p pctx.Painter, w int) string {
	role, mark := pctx.Info, "▸ "
	switch t.Kind {
	case Success:
		role, mark = pctx.OK, "✓ "
	case Warn:
		role, mark = pctx.Warning, "! "
	case Error:
		role, mark = pctx.Critical, "✗ "
	}
	// Toast texts embed holders and API errors: sanitised here, once.
	return p.Paint(role, sanitize.Short(mark+t.Text, max(w, 1)))
}
