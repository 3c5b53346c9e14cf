package model

import "testing"

func TestTones(t *testing.T) {
	verdicts := map[Verdict]Tone{VerdictFree: ToneOK, VerdictHeld: ToneInfo, VerdictUnknown: ToneWarning,
		VerdictGhost: ToneCritical, VerdictOrphaned: ToneCritical, VerdictExpired: ToneCritical, VerdictAmbiguous: ToneCritical}
	for v, want := range verdicts {
		if got := v.Tone(); got != want {
			t.Errorf("verdict %s: tone %d, want %d", v, got, want)
		}
	}
	phases := map[Phase]Tone{PhaseIdle: ToneMuted, PhasePending: ToneMuted, PhaseDraining: ToneInfo, PhaseRebooting: ToneInfo,
		PhaseRecovering: ToneInfo, PhaseDone: ToneOK, PhaseDown: ToneCritical, PhaseUnknown: ToneWarning}
	if len(phases) != len(AllPhases) {
		t.Fatalf("%d phases tested, %d exist", len(phases), len(AllPhases))
	}
	for p, want := range phases {
		if got := p.Tone(); got != want {
			t.Errorf("phase %s: tone %d, want %d", p, got, want)
		}
	}
	for s, want := range map[Severity]Tone{SeverityCritical: ToneCritical, SeverityWarning: ToneWarning, SeverityInfo: ToneInfo} {
		if got := s.Tone(); got != want {
			t.Errorf("severity %s: tone %d, want %d", s, got, want)
		}
	}
	for s, want := range map[SourceStatus]Tone{StatusOK: ToneOK, StatusError: ToneCritical, StatusForbidden: ToneCritical,
		StatusStale: ToneWarning, StatusNotInstalled: ToneMuted, StatusDisabled: ToneMuted} {
		if got := s.Tone(); got != want {
			t.Errorf("status %s: tone %d, want %d", s, got, want)
		}
	}
}
