package model

// Tone is how a state reads at a glance, from quiet to alarming. Renderers
// colour a tone through the theme (themes.Theme.Tone); this is the one
// mapping of verdicts, phases, severities and source statuses to tones.
type Tone int

// Tones, quietest first.
const (
	ToneMuted Tone = iota
	ToneOK
	ToneInfo
	ToneWarning
	ToneCritical
)

// Tone of a verdict: ghost, orphaned, expired and ambiguous are critical,
// unknown a warning, held in progress, free fine.
func (v Verdict) Tone() Tone {
	switch {
	case v.NeedsAttention():
		return ToneCritical
	case v == VerdictUnknown:
		return ToneWarning
	case v == VerdictHeld:
		return ToneInfo
	}
	return ToneOK
}

// Tone of a phase: down is critical, unknown a warning, a node mid-cycle in
// progress, done fine, idle and pending quiet.
func (p Phase) Tone() Tone {
	switch p {
	case PhaseDown:
		return ToneCritical
	case PhaseUnknown:
		return ToneWarning
	case PhaseDraining, PhaseRebooting, PhaseRecovering:
		return ToneInfo
	case PhaseDone:
		return ToneOK
	}
	return ToneMuted
}

// Tone of a severity.
func (s Severity) Tone() Tone {
	switch s {
	case SeverityCritical:
		return ToneCritical
	case SeverityWarning:
		return ToneWarning
	}
	return ToneInfo
}

// Tone of a source status: failed or forbidden is critical, stale a
// warning, ok fine, disabled or not installed quiet.
func (s SourceStatus) Tone() Tone {
	switch s {
	case StatusOK:
		return ToneOK
	case StatusError, StatusForbidden:
		return ToneCritical
	case StatusStale:
		return ToneWarning
	}
	return ToneMuted
}
