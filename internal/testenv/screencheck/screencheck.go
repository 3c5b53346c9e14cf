// Package screencheck finds what a dashboard screen loses: a cut (…) in a
// cell of the nodes table that holds a version (the OS column) or a
// blocker (WAITING FOR), and a cut line (one that ends in …) in the help,
// detail or timeline box while that box still has empty rows below its
// text, and (150 columns and more) a cut line in the Locks panel while
// the nodes table below it has empty rows. It reads the plain text of a
// screen (tmux capture-pane, or a model's View with its escapes
// stripped), so the tmux end-to-end test and the unit tests apply the
// same rule. It must not be imported by non-test code.
package screencheck

import (
	"fmt"
	"regexp"
	"strings"
)

// titles are the nodes table's column titles (the OS column's carries
// its distribution: "OS (Ubuntu)").
var titles = regexp.MustCompile(`NAME|ROLE|PROGRESS|STEP|PHASE|WAITING FOR|READY|SCHED|OS(?: \([^)]*\))?|REBOOT|LOCK`)

// Problems lists what the screen cuts that it should not, one sentence
// each; none for a screen that loses nothing that matters.
func Problems(screen string) []string {
	rows := make([][]rune, 0, 64)
	for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		rows = append(rows, []rune(l))
	}
	var out []string
	out = append(out, tableCuts(rows)...)
	for _, box := range []string{"Help", "Node ", "Lock ", "Timeline"} {
		out = append(out, boxCuts(rows, box)...)
	}
	out = append(out, locksCuts(rows)...)
	return out
}

// Cuts counts the truncation marks in a table column whose title starts
// with prefix ("OS", "WAITING FOR"); the rows tell which.
func tableCuts(rows [][]rune) []string {
	var out []string
	for i, r := range rows {
		s := string(r)
		at := strings.Index(s, "│NAME ")
		if at < 0 {
			continue
		}
		left := len([]rune(s[:at])) + 1
		right := left
		for right < len(r) && r[right] != '│' {
			right++
		}
		head := string(r[left:right])
		type col struct {
			title      string
			start, end int // cells within the box
		}
		var cols []col
		for _, m := range titles.FindAllStringIndex(head, -1) {
			start := len([]rune(head[:m[0]]))
			cols = append(cols, col{title: head[m[0]:m[1]], start: start})
		}
		for k := range cols {
			cols[k].end = right - left
			if k+1 < len(cols) {
				cols[k].end = cols[k+1].start
			}
		}
		for j := i + 1; j < len(rows); j++ {
			row := rows[j]
			if right > len(row) || left < 1 || row[left-1] != '│' {
				break // the box's bottom, or another screen part
			}
			body := row[left:right]
			name := strings.TrimSpace(string(body[:cols[0].end]))
			for _, c := range cols {
				what := ""
				switch {
				case strings.HasPrefix(c.title, "OS"):
					what = "a version"
				case c.title == "WAITING FOR":
					what = "a blocker"
				default:
					continue
				}
				cell := string(body[c.start:min(c.end, len(body))])
				if strings.Contains(cell, "…") {
					out = append(out, fmt.Sprintf("row %d (%s): the %s cell cuts %s: %q", j+1, name, c.title, what, strings.TrimSpace(cell)))
				}
			}
		}
	}
	return out
}

// boxCuts reports a box (its title starts with title) that cuts a line
// (…) while it has empty rows left.
func boxCuts(rows [][]rune, title string) []string {
	lines, empty, ok := boxText(rows, title)
	if !ok {
		return nil
	}
	cut := cutLines(lines)
	if len(cut) > 0 && empty > 0 {
		return []string{fmt.Sprintf("the %q box cuts %d line(s) with %d empty row(s) left: %q", strings.TrimSpace(title), len(cut), empty, cut[0])}
	}
	return nil
}

// locksCuts reports the Locks panel cutting a line (a reason ending in
// …) while the nodes table below it has empty rows the panel could have
// taken. Only on wide screens (150 columns and more, where the reasons
// wrap under their column): narrower, the REASON column is too narrow to
// wrap and the lock detail (enter) shows the whole reason.
func locksCuts(rows [][]rune) []string {
	wide := false
	for _, r := range rows {
		wide = wide || len(r) >= 150
	}
	if !wide {
		return nil
	}
	lines, _, ok := boxText(rows, "Locks")
	if !ok {
		return nil
	}
	_, empty, ok := boxText(rows, "Nodes")
	cut := cutLines(lines)
	if ok && len(cut) > 0 && empty > 0 {
		return []string{fmt.Sprintf("the Locks panel cuts %d line(s) while the nodes table has %d empty row(s): %q", len(cut), empty, cut[0])}
	}
	return nil
}

func cutLines(lines []string) []string {
	var cut []string
	for _, l := range lines {
		if strings.HasSuffix(l, "…") {
			cut = append(cut, l)
		}
	}
	return cut
}

// boxText is the trimmed text of each row of the box whose title starts
// with title, and how many empty rows follow its last line of text (a
// blank line between sections is not room left); ok is false when the
// screen shows no such box.
func boxText(rows [][]rune, title string) (lines []string, empty int, ok bool) {
	for i, r := range rows {
		s := string(r)
		at := strings.Index(s, "╭─ "+title)
		if at < 0 {
			continue
		}
		left := len([]rune(s[:at]))
		for j := i + 1; j < len(rows); j++ {
			row := rows[j]
			if left >= len(row) || row[left] != '│' {
				break
			}
			end := left + 1
			for end < len(row) && row[end] != '│' {
				end++
			}
			text := strings.TrimSpace(string(row[left+1 : end]))
			if text == "" {
				empty++
				continue
			}
			empty = 0
			lines = append(lines, text)
		}
		return lines, empty, true
	}
	return nil, 0, false
}
