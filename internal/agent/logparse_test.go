package agent

import (
	"fmt"
	"testing"
)

// TestSyncBufferTail: tail gives the last n lines, as splitting the whole
// log did.
func TestSyncBufferTail(t *testing.T) {
	for _, tc := range []struct {
		log  string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc\n", 3, "a\nb\nc"},
		{"a\nb\nc\n", 9, "a\nb\nc"},
		{"a\nb\nc", 1, "c"},
		{"\n a\nb \n\n", 2, "a\nb"},
		{"a", 1, "a"},
		{"", 3, ""},
		{"a\nb", 0, ""},
	} {
		var s syncBuffer
		fmt.Fprint(&s, tc.log)
		if got := s.tail(tc.n); got != tc.want {
			t.Errorf("tail(%d) of %q = %q, want %q", tc.n, tc.log, got, tc.want)
		}
	}
}

// TestAgentProcLogParsedOnce: the agent's log is parsed a whole line at a
// time, each line once; a line still being written is read when it ends.
func TestAgentProcLogParsedOnce(t *testing.T) {
	p := &agentProc{name: "agent", out: &syncBuffer{}}
	fmt.Fprint(p.out, `{"msg":"starting","healthAddress":"127.0.0.1:1"}`+"\n"+`{"msg":"heartbeat","result":"ok"}`+"\n"+`{"msg":"heart`)
	if hbs := p.heartbeats(t); len(hbs) != 1 || hbs[0].Result != "ok" {
		t.Fatalf("heartbeats %+v, want the one whole heartbeat line", hbs)
	}
	if n := len(p.lines(t)); n != 2 {
		t.Fatalf("%d lines, want the 2 whole ones", n)
	}
	fmt.Fprint(p.out, `beat","result":"error"}`+"\n")
	hbs := p.heartbeats(t)
	if len(hbs) != 2 || hbs[1].Result != "error" {
		t.Fatalf("heartbeats %+v, want the second once its line ended", hbs)
	}
	if lines := p.lines(t); len(lines) != 3 || lines[0]["healthAddress"] != "127.0.0.1:1" {
		t.Fatalf("lines %v", lines)
	}
	if p.logOff != len(p.out.String()) {
		t.Fatalf("parsed %d of %d bytes", p.logOff, len(p.out.String()))
	}
}
