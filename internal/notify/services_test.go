package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestShoutrrrServiceWithoutRouter: a service from shoutrrr's own package,
// built from our table instead of its router, still sends. mattermost
// takes a host of one's choosing (and disabletls), so it is sent to a
// loopback receiver.
func TestShoutrrrServiceWithoutRouter(t *testing.T) {
	srv, got := receiver(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	n, err := New(Options{URLs: []string{"mattermost://" + host + "/T0KEN-mm?disabletls=yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.targets[0].Send(context.Background(), "rebootwatch: lock default/a turned ghost"); err != nil {
		t.Fatal(err)
	}
	r := <-got
	var body map[string]any
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	if r.Method != "POST" || r.Path != "/hooks/T0KEN-mm" || body["text"] != "rebootwatch: lock default/a turned ghost" {
		t.Errorf("receiver got %+v", r)
	}
	if n.targets[0].Service != "mattermost" {
		t.Errorf("service %q", n.targets[0].Service)
	}
}

// TestLoggerWritesTheAgentsLog: logger:// writes the message to the
// agent's log, at info, as one line.
func TestLoggerWritesTheAgentsLog(t *testing.T) {
	var logs syncBuffer
	n, err := New(Options{URLs: []string{"logger://"}, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.targets[0].Send(context.Background(), "rebootwatch: reaped fleetlock:default/a"); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, `"level":"INFO","msg":"notification","service":"logger","text":"rebootwatch: reaped fleetlock:default/a"`) {
		t.Errorf("log %s", out)
	}
}

// TestNewRejectsWhatIsNotSupported: a scheme we do not send to, and a
// setting our generic or smtp sender would only fail on at every send, are
// errors at startup that name the position and the service, never a
// secret of the URL.
func TestNewRejectsWhatIsNotSupported(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"xmpp://user:p4ssw0rd@host/T0KEN", "unknown service"},
		{"nosuchservice://user:p4ssw0rd@host/T0KEN", "unknown service"},
		{"generic+ftp://host/T0KEN", "the schemes generic+https, generic+http and generic"},
		{"generic://host/T0KEN?template=mytemplate", "only template=json"},
		{"generic://host/T0KEN?disabletls=maybe", "not a boolean"},
		{"generic://host/T0KEN?method=P%2FOST", "not an HTTP method"},
		{"generic://host/T0KEN?@X-Key=a%0Db", "line break"},
		{"generic:///T0KEN", "no host"},
		{"smtp+https://host/?from=a@example.com&to=b@example.com", "custom URLs"},
		{"logger+https://host/T0KEN", "custom URLs"},
		{"slack+https://host/T0KEN", "custom URLs"},
		{"smtp://user:p4ssw0rd@host/?to=b@example.com", "fromaddress is missing"},
		{"smtp://user:p4ssw0rd@host/?from=a@example.com", "toaddresses is missing"},
		{"smtp://user:p4ssw0rd@host/?from=a@example.com&to=b@example.com&bcc=c@example.com", `unknown query key "bcc"`},
		{"smtp://user:p4ssw0rd@host/?from=a@example.com&to=b@example.com&auth=kerberos", "the values are"},
		{"smtp://user:p4ssw0rd@host/?from=a@example.com&to=b@example.com&timeout=soon", "timeout"},
		{"smtp://user:p4ssw0rd@host:99999/?from=a@example.com&to=b@example.com", "port"},
		{"smtp://user:p4ssw0rd@host/?from=a@example.com&to=b@example.com&subject=a%0Ab", "line break"},
	} {
		_, err := New(Options{URLs: []string{"logger://", c.url}})
		if err == nil {
			t.Errorf("%s: accepted", c.url)
			continue
		}
		service := serviceOf(c.url)
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "#2 ("+service+")") ||
			strings.Contains(err.Error(), "p4ssw0rd") || strings.Contains(err.Error(), "T0KEN") {
			t.Errorf("%s: error %q: want %q, the position and service, no secret", c.url, err, c.want)
		}
	}
}

// TestSchemesAreShoutrrrsLessXMPP: the schemes we accept are those of
// shoutrrr v0.18.0's router (pkg/router/servicemap.go), no more, no
// fewer: three of them sent by our own senders.
func TestSchemesAreShoutrrrsLessXMPP(t *testing.T) {
	want := []string{"bark", "discord", "generic", "gotify", "googlechat", "hangouts", "ifttt", "lark", "join", "logger",
		"matrix", "mattermost", "mqtt", "mqtts", "notifiarr", "ntfy", "opsgenie", "pagerduty", "pushbullet", "pushover",
		"rocketchat", "signal", "signalgrid", "slack", "smtp", "teams", "telegram", "twilio", "wecom", "zulip"}
	slices.Sort(want)
	if got := Schemes(); !slices.Equal(got, want) {
		t.Errorf("Schemes() = %v\nwant        %v", got, want)
	}
}

// TestAgentDocsListTheSchemes: docs/agent.md lists exactly the services
// a --notify-url may name.
func TestAgentDocsListTheSchemes(t *testing.T) {
	b, err := os.ReadFile("../../docs/agent.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	_, after, ok := strings.Cut(doc, "The services a `--notify-url` may name are ")
	if !ok {
		t.Fatal(`docs/agent.md has no "The services a ` + "`--notify-url`" + ` may name are …" sentence`)
	}
	list, _, _ := strings.Cut(after, ". ")
	var got []string
	for _, m := range regexp.MustCompile("`([a-z]+)://`").FindAllStringSubmatch(list, -1) {
		got = append(got, m[1])
	}
	slices.Sort(got)
	if want := Schemes(); !slices.Equal(got, want) {
		t.Errorf("docs/agent.md lists %v\nthe code takes      %v", got, want)
	}
}
