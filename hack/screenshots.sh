#!/usr/bin/env bash
# Renders the README's screenshots from the demo: runs bin/rebootwatch --demo
# frozen (--speed 0) at fixed moments of its scenario in a detached tmux
# pane, captures the pane with its colours (capture-pane -e) and draws it
# into a PNG with hack/ansi2png (DejaVu Sans Mono; fonts-dejavu-core).
#
# Moments: a node draining while its Longhorn volumes are degraded; the
# ghost fleetlock lease selected next to an orphaned kured lock; the confirm
# dialog of the orphan's release (every gate passed, the exact write); a
# reap refused by its gates; the light theme; "why is it stuck?": a drain
# held by a PodDisruptionBudget and worker-2's detail naming it (these from
# --demo=kured); the default demo's fleetlock incident and its release
# dialog, also at 80x24, and its dashboard at 80x24; the coordinator demos' uncordon dialogs
# (--demo=suc: the node a failed job left cordoned; --demo=flatcar: the node
# whose agent stopped after its reboot); and `fleet --demo` two demo minutes
# in (the ghost cluster first, flatcar's agent stale). Output: screenshots/*.png
# (KEEP_ANSI=1 keeps the captured .ans text next to them for review;
# ONLY="name …" renders only those shots).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${REBOOTWATCH_BIN:-$PWD/bin/rebootwatch}
OUT=${OUT:-$PWD/screenshots}
# Scenario moments (time since the demo's start); see docs/development.md.
# 7m30s: worker-1 drains, its Longhorn replicas are gone (10 volumes
# degraded). 30m: worker-1 rebooted but never released kured's lock
# (orphaned) and the fleetlock Lease is still held by a ghost.
# 60m: after the orphan's lock was removed by hand at 40m, worker-2 drains
# and PodDisruptionBudget shop/postgres (0 disruptions allowed) holds it.
AT_DRAIN=${AT_DRAIN:-7m30s}
AT_STALL=${AT_STALL:-30m}
AT_PDB=${AT_PDB:-60m}
command -v tmux >/dev/null || { echo "screenshots: tmux is required (apt-get install tmux)"; exit 1; }
[ -x "$BIN" ] || { echo "screenshots: $BIN is not built (make build)"; exit 1; }
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || { echo "screenshots: install fonts-dejavu-core"; exit 1; }
mkdir -p "$OUT"
A2P="$(mktemp -d)/ansi2png"
(cd hack/ansi2png && go build -o "$A2P" .)

SOCK="rebootwatch-shots-$$"
T=(tmux -L "$SOCK" -f /dev/null)
trap '"${T[@]}" kill-server >/dev/null 2>&1 || true; rm -rf "$(dirname "$A2P")"' EXIT
# A placeholder session keeps the server up between shots.
"${T[@]}" new-session -d -s keep "sleep 3600"

# shot NAME COLS ROWS BG FG "ARGS" KEYS...: start, send keys, capture, render.
shot() {
	local name=$1 cols=$2 rows=$3 bg=$4 fg=$5 args=$6
	shift 6
	if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
	"${T[@]}" kill-session -t shot >/dev/null 2>&1 || true
	"${T[@]}" new-session -d -s shot -x "$cols" -y "$rows" \
		"env -u NO_COLOR TERM=xterm-256color COLORTERM=truecolor XDG_CONFIG_HOME=/nonexistent $BIN ${DEMO:---demo=kured} --speed 0 $args; sleep 60"
	for _ in $(seq 1 100); do
		"${T[@]}" capture-pane -p -t shot | grep -q "${WAIT:-Timeline\|Nodes}" && break
		sleep 0.1
	done
	sleep 1.5 # first sync and a tick
	for k in "$@"; do
		if [ "$k" = "@wait" ]; then sleep 0.7; continue; fi
		"${T[@]}" send-keys -t shot "$k"
		sleep 0.15
	done
	sleep 0.5
	"${T[@]}" capture-pane -e -p -t shot >"$OUT/$name.ans"
	"$A2P" -in "$OUT/$name.ans" -out "$OUT/$name.png" -cols "$cols" -rows "$rows" -bg "$bg" -fg "$fg" -size 14 -title "${TITLE:-rebootwatch --demo}"
	[ -n "${KEEP_ANSI:-}" ] || rm -f "$OUT/$name.ans"
	echo "screenshots: $OUT/$name.png"
}

DARK_BG='#1b1e24' DARK_FG='#d0d4dc'
LIGHT_BG='#ffffff' LIGHT_FG='#1f2328'
shot draining-degraded 160 44 "$DARK_BG" "$DARK_FG" "--demo-at $AT_DRAIN --theme dark"
shot ghost-lease 160 44 "$DARK_BG" "$DARK_FG" "--demo-at $AT_STALL --theme dark" Tab
shot confirm-dialog 120 40 "$DARK_BG" "$DARK_FG" "--demo-at $AT_STALL --theme dark" r @wait
shot refused-by-gates 120 40 "$DARK_BG" "$DARK_FG" "--demo-at $AT_DRAIN --theme dark" Tab x @wait
shot light-theme 160 44 "$LIGHT_BG" "$LIGHT_FG" "--demo-at $AT_DRAIN --theme light"
shot pdb-blocked-drain 160 44 "$DARK_BG" "$DARK_FG" "--demo-at $AT_PDB --theme dark"
shot pdb-blocked-detail 120 40 "$DARK_BG" "$DARK_FG" "--demo-at $AT_PDB --theme dark" Enter @wait
# The default demo (make demo): fleetlock's ghost Lease and an orphaned,
# still-cordoned holder; the release dialog shows the uncordon that goes with it.
DEMO=--demo shot fleetlock-incident 160 44 "$DARK_BG" "$DARK_FG" "--theme dark" Tab
DEMO=--demo shot fleetlock-release 120 40 "$DARK_BG" "$DARK_FG" "--theme dark" Tab j r @wait
# The same dialog on an ordinary 80x24 terminal: every gate and the writes.
DEMO=--demo shot release-80x24 80 24 "$DARK_BG" "$DARK_FG" "--theme dark" Tab j r @wait
# The default demo's dashboard on an 80x24 terminal (issue 34 §2): the Locks
# header, WAITING FOR whole, the columns that gave way.
DEMO=--demo shot dashboard-80x24 80 24 "$DARK_BG" "$DARK_FG" "--theme dark"
# The coordinator demos (issue 24): the node list with the wedge, and the
# uncordon dialog of the node the coordinator left cordoned (the filter
# selects it).
DEMO=--demo=suc shot suc-uncordon 160 44 "$DARK_BG" "$DARK_FG" "--demo-at 5m --theme dark" / k3s-agent-1 Enter u @wait
DEMO=--demo=flatcar shot flatcar-uncordon 160 44 "$DARK_BG" "$DARK_FG" "--demo-at 6m --theme dark" / flatcar-worker-1 Enter u @wait
# The fleet demo (issue 34 §3): one simulated cluster per demo scenario and a
# done one, frozen two demo minutes in, when flatcar's agent is stale.
WAIT="fleet · 5 clusters" TITLE="rebootwatch fleet --demo" DEMO="fleet --demo" shot fleet-demo 120 16 "$DARK_BG" "$DARK_FG" "--demo-at 2m --theme dark"
