// Package screencheck finds what a dashboard screen loses: a cut (…) in a
// cell of the nodes table that holds a version (the OS column) or a
// blocker (WAITING FOR), and a cut line (one that ends in …) in the help,
// detail or timeline box while that box still has empty rows below its
// text. It reads the plain text of a
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
	for i, r := range rows {
		s := string(r)
		at := strings.Index(s, "╭─ "+title)
		if at < 0 {
			continue
		}
		left := len([]rune(s[:at]))
		// empty counts the empty rows below the last line of text: a
		// blank line between sections is not room left.
		empty, cut := 0, []string{}
		for j := i + 1; j < len(rows); j++ {
			row := rows[j]
			if left >= len(row) || row[left] != '│' {
				break
			}
			end := left + 1
			for end < len(row) && row[end] != '│' {
				end++
			}
			inner := string(row[left+1 : end])
			text := strings.TrimSpace(inner)
			if text == "" {
				empty++
				continue
			}
			empty = 0
			if strings.HasSuffix(text, "…") {
				cut = append(cut, text)
			}
		}
		if len(cut) > 0 && empty > 0 {
			return []string{fmt.Sprintf("the %q box cuts %d line(s) with %d empty row(s) left: %q", strings.TrimSpace(title), len(cut), empty, cut[0])}
		}
		return nil
	}
	return nil
}
