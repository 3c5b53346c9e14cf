#!/usr/bin/env bash
# End-to-end test of the dashboard: runs the built bin/rebootwatch --demo in
# a detached tmux server, types keys, captures the pane and asserts on the
# screen. `make test` runs it when tmux exists. Prints one line per check and
# a final "N passed, N failed"; exits non-zero when anything failed.
#
# The demo runs frozen (--speed 0) at fixed moments of its scenario so every
# run sees the same cluster. It only talks to the embedded demo cluster.
set -u
cd "$(dirname "$0")/.." || exit 1
BIN=${REBOOTWATCH_BIN:-$PWD/bin/rebootwatch}
if ! command -v tmux >/dev/null 2>&1; then
	echo "tmux not installed: skipping the tmux end-to-end script"
	exit 0
fi
if [ ! -x "$BIN" ]; then
	echo "e2e: $BIN is not built (run make build)"
	echo "0 passed, 1 failed"
	exit 1
fi

SOCK="rebootwatch-e2e-$$"
T=(tmux -L "$SOCK" -f /dev/null)
TMPD=$(mktemp -d)
pass=0
fail=0
cleanup() {
	"${T[@]}" kill-server >/dev/null 2>&1
	rm -rf "$TMPD"
}
trap cleanup EXIT
# A placeholder session keeps the server up while tests restart theirs.
"${T[@]}" new-session -d -s keep "sleep 3600"

# start ARGS...: (re)start the dashboard in a 120x40 pane.
start() {
	"${T[@]}" kill-session -t e2e >/dev/null 2>&1
	"${T[@]}" new-session -d -s e2e -x "${COLS:-120}" -y "${ROWS:-40}" \
		"env -u NO_COLOR TERM=xterm-256color COLORTERM=truecolor XDG_CONFIG_HOME=$TMPD $BIN ${DEMO:---demo=kured} --speed 0 $*; echo \"EXITED:\$?\"; sleep 60"
	# Wait for the first frame with nodes, or the cluster list (or an
	# early exit).
	for _ in $(seq 1 100); do
		if screen | grep -qE "sort: |need attention|EXITED:"; then break; fi
		sleep 0.1
	done
	sleep 0.3
}
screen() { "${T[@]}" capture-pane -p -t e2e 2>/dev/null; }
keys() { "${T[@]}" send-keys -t e2e "$@"; }
# esc: a lone Escape, then a pause so the next key is not read as alt+key.
esc() {
	keys Escape
	sleep 0.4
}
# The confirm dialog ignores keys for 400ms after opening; then y confirms.
settle() { sleep 0.6; }

# wait_for TEXT [TRIES]: poll the screen (0.1s apart) until TEXT shows.
wait_for() {
	local tries=${2:-80}
	for _ in $(seq 1 "$tries"); do
		if screen | grep -qF -- "$1"; then return 0; fi
		sleep 0.1
	done
	return 1
}
ok() {
	pass=$((pass + 1))
	echo "ok   $1"
}
ko() {
	fail=$((fail + 1))
	echo "FAIL $1"
	screen | sed 's/^/     | /'
}
# expect NAME TEXT: TEXT must appear.
expect() { if wait_for "$2"; then ok "$1"; else ko "$1 (want: $2)"; fi; }
# expect_not NAME TEXT: TEXT must be absent (after the screen settled).
expect_not() {
	sleep 0.3
	if screen | grep -qF -- "$2"; then ko "$1 (unwanted: $2)"; else ok "$1"; fi
}

# --- 1. the main screen at the ghost-lease moment ---------------------------
start "--demo-at ${E2E_AT:-30m}"
expect "dashboard opens" "rebootwatch"
expect "locks panel" "Locks"
expect "nodes panel" "Nodes"
expect "longhorn panel" "Longhorn"
expect "timeline panel" "Timeline"
expect "ghost lease shown" "ghost"
expect "footer help" "? help"

keys /
keys w o r k e r
expect "filter narrows to workers" "4/7 nodes"
esc
expect "esc clears the filter" "7 nodes · sort"

keys s
expect "s cycles the sort" "sort: name"

keys Enter
expect "enter opens the node detail" "Conditions"
expect "detail shows boot ids" "Boot ids seen"
esc
expect "esc returns" "Timeline"

keys '?'
expect "? opens the full help" "? or esc to close"
esc

keys t
expect "t switches theme" "theme: light"

# --- 2. confirm dialogs: cancel, then release the orphan and reap the ghost
start "--demo-at ${E2E_AT:-30m}"
expect "orphaned kured lock shown" "orphaned"
keys r
expect "r opens the release dialog" "Release lock?"
expect "dialog shows the gates" "gates"
expect "dialog shows the exact write" "remove annotation"
expect "dialog defaults to No" "[ No ]"
settle
keys Enter
expect "enter on No cancels" "release cancelled: nothing written"

keys r
expect "release dialog again" "Release lock?"
settle
keys y
expect "release done toast" "release kured:kube-system/kured: done"
expect "release on the timeline" "release kured:kube-system/kured (holder worker-1): done"

keys Tab
keys x
expect "x opens the reap dialog" "Reap lock?"
expect "reap writes the lease holder" "holderIdentity"
settle
keys y
expect "reap done toast" "reap fleetlock:default/fleetlock-default: done"
expect "nothing needs attention afterwards" "nothing needs attention"

keys q
expect "q quits with status 0" "EXITED:0"

# --- 2a. the default demo (make demo): fleetlock's ghost-Lease incident -----
# fleetlock-default is held by a ghost; fleetlock-workers by worker-1, which
# rebooted but never called steady-state (orphaned, still cordoned). Release
# the orphan first (the dialog shows the uncordon that goes with it), then
# reap the ghost.
DEMO=--demo start ""
expect "default demo: a ghost Lease" "ghost"
expect "default demo: the orphaned workers Lease" "orphaned"
keys Tab
keys j
keys r
expect "release dialog" "Release lock?"
expect "release dialog shows the uncordon" "update Node worker-1"
settle
keys y
expect "release and uncordon done" "release fleetlock:default/fleetlock-workers: done"
keys k
keys x
expect "reap dialog" "Reap lock?"
settle
keys y
expect "ghost reaped" "reap fleetlock:default/fleetlock-default: done"
keys q
expect "default demo quits with status 0" "EXITED:0"

# --- 2c. the demo story on an ordinary 80x24 terminal ----------------------
# The README's story: Tab to the locks, j r releases the orphan, k x reaps
# the ghost. tab, ? and q stay in the footer; the locks keep their names;
# the release dialog shows all six gates.
COLS=80 ROWS=24 DEMO=--demo start ""
expect "80x24: the footer shows tab" "tab nodes/locks"
expect "80x24: the footer shows ? help" "? help"
expect "80x24: the footer shows q quit" "q quit"
keys Tab
expect "80x24: the locks keep their names (default)" "fleetlock-default"
expect "80x24: the locks keep their names (workers)" "fleetlock-workers"
keys j
keys r
expect "80x24: release dialog" "Release lock?"
for g in fresh-data verdict holder other-nodes volumes alerts; do
	expect "80x24: the dialog shows gate $g" "✓ $g"
done
expect "80x24: the dialog shows the uncordon" "update Node worker-1"
expect "80x24: the dialog says y confirms" "y confirm"
expect_not "80x24: no gate hidden" "lines hidden"
settle
keys y
expect "80x24: y releases and uncordons" "release fleetlock:default/fleetlock-workers: done"
keys k
keys x
expect "80x24: reap dialog" "Reap lock?"
settle
keys y
expect "80x24: y reaps the ghost" "reap fleetlock:default/fleetlock-default: done"
if wait_for "fleet fleetlock-default" && screen | grep -qE "fleetlock-default .*free" && screen | grep -qE "fleetlock-workers .*free"; then
	ok "80x24: after the release and the reap the two free rows are told apart"
else
	ko "80x24: after the release and the reap the two free rows are told apart"
fi
keys '?'
expect "80x24: ? opens the help" "? or esc to close"
esc
keys q
expect "80x24: q quits with status 0" "EXITED:0"

# The kured scenario at 80x24: the attention line never starts with a
# count, and a closed window says when it opens before it is cut.
COLS=80 ROWS=24 start "--demo-at 7m30s"
expect "80x24: kured demo opens" "tab nodes/locks"
if screen | sed -n 3p | grep -qE '^\(\+'; then ko "80x24: the attention line starts with an item, not a count"; else ok "80x24: the attention line starts with an item, not a count"; fi
COLS=80 ROWS=24 start "--demo-at 80m"
expect "80x24: the window blocker leads with when it opens" "waits for kured's reboot window: opens in"
keys q

# --- 2b. a gate refuses: the ghost cannot be reaped while a node is mid-cycle
start "--demo-at ${E2E_AT:-30m}"
keys Tab
keys x
expect "reap dialog" "Reap lock?"
expect "failed gate shown" "✗ other-nodes"
expect "Yes is only an unsafe override" "Yes, unsafe"
settle
keys Enter
expect "refusal toast" "reap fleetlock:default/fleetlock-default: refused"
expect "ghost still there" "ghost"
keys q

# --- 3. read-only hides every action ----------------------------------------
start "--demo-at ${E2E_AT:-30m} --read-only"
expect "read-only marker" "[read-only]"
expect_not "no release hint in read-only" "r release"
keys Tab
keys x
expect_not "x does nothing in read-only" "Reap lock?"
keys q
expect "quits" "EXITED:0"

# --- 4. dry-run shows the write without making it ---------------------------
start "--demo-at ${E2E_AT:-30m} --dry-run"
expect "dry-run marker" "[dry-run]"
keys r
expect "dry-run dialog" "DRY RUN, not written"
settle
keys y
expect "dry-run outcome" "release kured:kube-system/kured: dry-run"
expect "lock still orphaned after a dry run" "orphaned"
keys q

# --- 5. small terminals ------------------------------------------------------
COLS=60 ROWS=15 start "--demo-at ${E2E_AT:-30m}"
expect "condensed layout at 60x15 (the stepper gives way, PHASE stays)" "PHASE"
"${T[@]}" resize-window -t e2e -x 50 -y 12 >/dev/null 2>&1
expect "too small below 60x15" "terminal too small"
"${T[@]}" resize-window -t e2e -x 120 -y 40 >/dev/null 2>&1
expect "grows back (the 120-column layout: WAITING FOR and the OS versions)" "WAITING FOR"
expect "grows back with the OS column under its distribution" "OS (Ubuntu)"
keys C-c
expect "ctrl+c quits" "EXITED:0"

# --- 6. a bad theme file is a clear error before the screen opens ----------
printf 'colors:\n  acent: "#ff0000"\n' >"$TMPD/bad.yaml"
start "--theme $TMPD/bad.yaml"
expect "bad theme names the key" 'unknown key "colors.acent"'
expect "bad theme exits 1" "EXITED:1"

# --- 7. several clusters: two demo fleets in a cluster list ----------------
start "--demo-at ${E2E_AT:-30m} --context east,west"
expect "cluster list opens" "╭─ Clusters"
expect "list shows east" "│east "
expect "list shows west" "│west "
expect "list says which need attention" "2 of 2 need attention"
keys j
keys Enter
expect "enter opens west's dashboard" "⎈ west"
expect "the dashboard says esc returns" "‹ esc clusters"
expect "west's nodes are live" "sort: cycle"
keys Enter
expect "enter inside opens a node detail" "Conditions"
esc
expect "esc closes the detail first" "sort: cycle"
esc
expect "esc at the top returns to the list" "╭─ Clusters"
expect_not "the dashboard is gone" "‹ esc clusters"
keys Enter
expect "enter opens the selected cluster again" "⎈ west"
esc
keys q
expect "q quits the list with status 0" "EXITED:0"

# --- 8. --bell rings (tmux flags the window) only when asked ----------------
bell_flag() { "${T[@]}" display -p -t e2e '#{window_bell_flag}' 2>/dev/null; }
start "--demo-at ${E2E_AT:-30m} --bell"
expect "bell: dashboard opens" "ghost"
if [ "$(bell_flag)" = 1 ]; then ok "--bell rings for the critical items"; else ko "--bell rings for the critical items (no bell flag)"; fi
start "--demo-at ${E2E_AT:-30m}"
expect "no bell: dashboard opens" "ghost"
sleep 0.5
if [ "$(bell_flag)" = 0 ]; then ok "no bell without --bell"; else ko "no bell without --bell (bell flag set)"; fi
start "--demo-at ${E2E_AT:-30m} --context east,west --bell"
expect "bell: cluster list opens" "2 of 2 need attention"
if [ "$(bell_flag)" = 1 ]; then ok "--bell rings in the cluster list"; else ko "--bell rings in the cluster list (no bell flag)"; fi
keys q

# --- 10. why is it stuck: the kured demo's second act ----------------------
# 60 minutes in, worker-2's drain is held by the PodDisruptionBudget
# shop/postgres (minAvailable 2 of 2: no disruption allowed); 80 minutes in,
# kured's reboot window (from its DaemonSet's args) is closed.
start "--demo-at 60m"
expect "blockers: the header leads with the PDB-blocked drain" "PodDisruptionBudget shop/postgres allows 0 disruptions"
expect "blockers: the nodes table says what worker-2 waits for" "PDB shop/post"
keys Enter
expect "blockers: worker-2's detail names the pod the budget holds" "shop/postgres-1 still on it"
expect "blockers: worker-2's detail says what clears it" "scale up the workload behind shop/postgres"
esc
keys q
expect "blockers: q quits with status 0" "EXITED:0"
start "--demo-at 80m"
expect "blockers: a closed reboot window leads the header" "waits for kured's reboot window"
expect "blockers: the window in its own time zone" "Europe/Berlin"
expect "blockers: the pending nodes wait for the window" "window: opens"
keys q

# --- 9. a hostile holder: the screen keeps its layout, no title is set -----
# The demo's ghost Lease is held by text that would set the terminal's
# title, clear the screen, colour itself and forge lines if printed raw.
HOSTILE=$(printf '\033]0;PWNED\007\033[2J\033[31mred\nFORGED nothing needs attention\n\342\200\256evil')
"${T[@]}" set-environment -g REBOOTWATCH_DEMO_GHOST_HOLDER "$HOSTILE"
start "--demo-at ${E2E_AT:-30m}"
"${T[@]}" set-environment -gu REBOOTWATCH_DEMO_GHOST_HOLDER
expect "hostile: dashboard opens" "Locks"
expect "hostile: the holder is shown escaped" '\e]0;PWNED'
expect "hostile: the lease row keeps its verdict" "unknown"
expect "hostile: the footer stays on screen" "? help"
sleep 0.3
if screen | grep -qE '^[│ ]*FORGED'; then ko "hostile: no forged line"; else ok "hostile: no forged line"; fi
title=$("${T[@]}" display -p -t e2e '#{pane_title}' 2>/dev/null)
case "$title" in
*PWNED*) ko "hostile: no title set (pane title: $title)" ;;
*) ok "hostile: no title set (pane title: $title)" ;;
esac
if [ "$(screen | wc -l)" -le 40 ] && screen | head -1 | grep -qF "rebootwatch"; then
	ok "hostile: the header stays on the first line"
else
	ko "hostile: the header stays on the first line"
fi
keys q
expect "hostile: q quits with status 0" "EXITED:0"
# The same holder in the coloured --snapshot report (no title of its own).
"${T[@]}" set-environment -g REBOOTWATCH_DEMO_GHOST_HOLDER "$HOSTILE"
start "--demo-at ${E2E_AT:-30m} --snapshot"
"${T[@]}" set-environment -gu REBOOTWATCH_DEMO_GHOST_HOLDER
expect "hostile snapshot: report printed" "EXITED:2"
expect "hostile snapshot: the holder is shown escaped" '\e]0;PWNED'
title=$("${T[@]}" display -p -t e2e '#{pane_title}' 2>/dev/null)
case "$title" in
*PWNED*) ko "hostile snapshot: no title set (pane title: $title)" ;;
*) ok "hostile snapshot: no title set (pane title: $title)" ;;
esac
if screen | grep -qE '^ *FORGED'; then ko "hostile snapshot: no forged line"; else ok "hostile snapshot: no forged line"; fi

# --- inside tmux without COLORTERM the color profile is asked of `tmux info`
# (a process of its own, before the first frame): lipgloss does it once when
# it is initialised, and the dashboard must not ask again.
mkdir -p "$TMPD/fakebin"
# shellcheck disable=SC2016 # $1 and $@ belong to the shim, not to this script
printf '#!/bin/sh\n[ "$1" = info ] && echo info >>"%s"\nexec "%s" "$@"\n' "$TMPD/tmux-info.log" "$(command -v tmux)" >"$TMPD/fakebin/tmux"
chmod +x "$TMPD/fakebin/tmux"
"${T[@]}" kill-session -t e2e >/dev/null 2>&1
"${T[@]}" new-session -d -s e2e -x 120 -y 40 \
	"env -u NO_COLOR -u COLORTERM PATH=$TMPD/fakebin:$PATH TERM=xterm-256color XDG_CONFIG_HOME=$TMPD $BIN --demo=kured --speed 0 --demo-at ${E2E_AT:-30m}; echo \"EXITED:\$?\"; sleep 60"
expect "tmux info: the dashboard opens" "? help"
n=$(grep -c info "$TMPD/tmux-info.log" 2>/dev/null)
if [ "${n:-0}" -eq 1 ]; then ok "tmux info: asked exactly once at start"; else ko "tmux info: asked exactly once at start (asked ${n:-0} times)"; fi
keys q
expect "tmux info: q quits with status 0" "EXITED:0"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
