#!/usr/bin/env bash
# End-to-end test of the dashboard: runs the built bin/rebootwatch --demo in
# a detached tmux server, types keys, captures the pane and asserts on the
# screen. `make test` runs it when tmux exists. Prints one line per check and
# a final "N passed, N failed"; exits non-zero when anything failed.
#
# The demo runs frozen (--speed 0) at fixed moments of its scenario so every
# run sees the same cluster. It only talks to the embedded demo cluster.
set -u
cd "$(dirname "$0")/.."
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

# start ARGS...: (re)start the dashboard in a 120x40 pane.
start() {
	"${T[@]}" kill-session -t e2e >/dev/null 2>&1
	"${T[@]}" new-session -d -s e2e -x "${COLS:-120}" -y "${ROWS:-40}" \
		"env -u NO_COLOR TERM=xterm-256color COLORTERM=truecolor XDG_CONFIG_HOME=$TMPD $BIN --demo --speed 0 $*; echo \"EXITED:\$?\"; sleep 60"
}
screen() { "${T[@]}" capture-pane -p -t e2e 2>/dev/null; }
keys() { "${T[@]}" send-keys -t e2e "$@"; }
# The confirm dialog ignores keys for 400ms after opening.
settle() { sleep "${1:-0.6}"; }

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
start "--demo-at ${E2E_AT_START:-0s}"
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
keys Escape
expect "esc clears the filter" "7 nodes · sort"

keys s
expect "s cycles the sort" "sort: name"

keys Enter
expect "enter opens the node detail" "Conditions"
expect "detail shows boot ids" "Boot ids seen"
keys Escape
expect "esc returns" "Timeline"

keys '?'
expect "? opens the full help" "? or esc to close"
keys Escape

keys t
expect "t switches theme" "theme: light"

# --- 2. confirm dialog: cancel, then accept the reap of the ghost ----------
keys Tab
keys x
expect "x opens the reap dialog" "Reap lock?"
expect "dialog shows gates" "gates"
expect "dialog shows the exact write" "holderIdentity"
expect "dialog defaults to No" "[ No ]"
settle
keys Escape
expect "esc cancels" "reap cancelled: nothing written"

keys x
expect "dialog opens again" "Reap lock?"
settle
keys y Enter
expect "reap done toast" "reap fleetlock:default/fleetlock-default: done"
expect "lease is free afterwards" "free"
expect "action on the timeline" "reap fleetlock:default/fleetlock-default (holder"

keys q
expect "q quits with status 0" "EXITED:0"

# --- 3. read-only hides every action ----------------------------------------
start "--demo-at ${E2E_AT_START:-0s} --read-only"
expect "read-only marker" "[read-only]"
expect_not "no release hint in read-only" "r release"
keys Tab
keys x
expect_not "x does nothing in read-only" "Reap lock?"
keys q
expect "quits" "EXITED:0"

# --- 4. dry-run shows the write without making it ---------------------------
start "--demo-at ${E2E_AT_START:-0s} --dry-run"
expect "dry-run marker" "[dry-run]"
keys Tab
keys x
expect "dry-run dialog" "DRY RUN, not written"
settle
keys y Enter
expect "dry-run outcome" "reap fleetlock:default/fleetlock-default: dry-run"
expect "lease still ghost after a dry run" "ghost"
keys q

# --- 5. small terminals ------------------------------------------------------
COLS=60 ROWS=15 start "--demo-at ${E2E_AT_START:-0s}"
expect "condensed layout at 60x15" "STEP"
"${T[@]}" resize-window -t e2e -x 50 -y 12 >/dev/null 2>&1
expect "too small below 60x15" "terminal too small"
"${T[@]}" resize-window -t e2e -x 120 -y 40 >/dev/null 2>&1
expect "grows back" "PROGRESS"
keys C-c
expect "ctrl+c quits" "EXITED:0"

# --- 6. a bad theme file is a clear error before the screen opens ----------
printf 'colors:\n  acent: "#ff0000"\n' >"$TMPD/bad.yaml"
start "--theme $TMPD/bad.yaml"
expect "bad theme names the key" 'unknown key "colors.acent"'
expect "bad theme exits 1" "EXITED:1"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
