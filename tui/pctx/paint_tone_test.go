package pctx

import (
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

func TestToneRoleAndMark(t *testing.T) {
	for tone, want := range map[model.Tone]Role{model.ToneMuted: Muted, model.ToneOK: OK, model.ToneInfo: Info,
		model.ToneWarning: Warning, model.ToneCritical: Critical} {
		if got := ToneRole(tone); got != want {
			t.Errorf("ToneRole(%d) = %d, want %d", tone, got, want)
		}
	}
	if Mark(model.SeverityCritical) != "✗ " || Mark(model.SeverityWarning) != "! " {
		t.Errorf("marks %q %q", Mark(model.SeverityCritical), Mark(model.SeverityWarning))
	}
}
