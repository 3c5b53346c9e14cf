// Package notify tells people what rebootwatch-agent saw and did: it posts
// a one-line message to every --notify-url (shoutrrr URLs, the format kured's
// --notify-url uses: slack://, teams://, smtp://, generic+https://, …) when a lock
// turns ghost, orphaned or expired, when the agent released or reaped a lock
// (with the action's text), and when the fleet has been blocked longer than a
// bound — stuck behind the blockers step's fleet blocker (model.Blocker) with
// no node progressing; the message names it. It also measures that blocked
// time for the agent's metrics.
//
// The URLs are read by a scheme → service table of its own (services.go):
// shoutrrr's service packages, each imported alone, and its own senders for
// generic (webhooks), smtp and logger. It must not import shoutrrr's router
// (the shoutrrr package or pkg/router) nor its generic, logger or smtp
// services: they execute text/template templates, and one reachable
// (*template.Template).Execute makes the linker keep every exported method
// of every type, about 11 MiB of every agent's RSS (docs/performance.md).
// TestAgentLinksNoTemplateExecutingService holds it.
//
// It must never block the agent's loop: messages go through a bounded queue
// to one sender goroutine (a full queue drops the message and counts it),
// every send has a timeout, and sending is rate-limited. It must never log,
// count or return a notify URL or an error text that could contain one (the
// URLs carry tokens): failures are logged with the service name only and a
// redacted error. It decides nothing about locks; it only reports.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/rebootwatch/rebootwatch/internal/sanitize"
)

// Results, the result label of rebootwatch_notifications_total.
const (
	ResultSent    = "sent"    // the service accepted the message
	ResultError   = "error"   // the service failed or timed out
	ResultDropped = "dropped" // the queue was full: the message was never sent
)

// Defaults.
const (
	DefaultQueue    = 64
	DefaultTimeout  = 10 * time.Second
	DefaultInterval = 2 * time.Second // one message per interval on average…
	DefaultBurst    = 10              // …after a burst of this many
)

// Send posts one message to one service; tests replace it.
type Send func(ctx context.Context, text string) error

// Target is one notify URL, kept only as its sender and its service name.
type Target struct {
	Service string // the URL's scheme (slack, generic+https, …): safe to log
	Send    Send
	secrets []string // parts of the URL that must never appear in a log
}

// Options configure a Notifier.
type Options struct {
	URLs       []string
	Timeout    time.Duration // per send; default DefaultTimeout
	Queue      int           // bounded queue length; default DefaultQueue
	Interval   time.Duration // rate limit: average interval between messages; default DefaultInterval
	Burst      int           // rate limit burst; default DefaultBurst
	Registerer prometheus.Registerer
	Log        *slog.Logger
	// Prefix starts every message (e.g. "rebootwatch-agent:"); default "rebootwatch:".
	Prefix string
}

// Notifier queues messages for its targets. A Notifier without URLs
// still tracks transitions and the blocked time (the metric needs them)
// but sends nothing.
type Notifier struct {
	targets  []Target
	queue    chan string
	timeout  time.Duration
	limiter  *rate.Limiter
	log      *slog.Logger
	prefix   string
	counter  *prometheus.CounterVec
	runOnce  sync.Once
	tracker  tracker
	blocking time.Duration // --notify-blocked-after
}

// New validates the URLs (an invalid one is an error that names only its
// position and service) and registers rebootwatch_notifications_total.
func New(o Options) (*Notifier, error) {
	var targets []Target
	for i, raw := range o.URLs {
		t, err := newTarget(raw, o.Log)
		if err != nil {
			return nil, fmt.Errorf("--notify-url #%d (%s): %w", i+1, serviceOf(raw), err)
		}
		targets = append(targets, t)
	}
	return NewWithTargets(targets, o), nil
}

// NewWithTargets builds a Notifier over ready targets (tests use it with
// their own Send functions).
func NewWithTargets(targets []Target, o Options) *Notifier {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Prefix == "" {
		o.Prefix = "rebootwatch:"
	}
	n := &Notifier{
		targets: targets,
		queue:   make(chan string, o.Queue),
		timeout: o.Timeout,
		limiter: rate.NewLimiter(rate.Every(o.Interval), o.Burst),
		log:     o.Log,
		prefix:  o.Prefix,
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rebootwatch_notifications_total",
			Help: "Notifications by service (the notify URL's scheme) and result (sent, error, dropped).",
		}, []string{"service", "result"}),
		tracker: newTracker(),
	}
	for _, t := range targets {
		for _, r := range []string{ResultSent, ResultError, ResultDropped} {
			n.counter.WithLabelValues(t.Service, r)
		}
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(n.counter)
	}
	return n
}

// SetBlockedAfter sets the bound past which a blocked fleet is notified
// (0: never).
func (n *Notifier) SetBlockedAfter(d time.Duration) { n.blocking = d }

// Targets reports how many URLs the notifier sends to.
func (n *Notifier) Targets() int { return len(n.targets) }

// Counter is rebootwatch_notifications_total (for tests).
func (n *Notifier) Counter() *prometheus.CounterVec { return n.counter }

// newTarget parses a notify URL into its sender (services.go). Its error
// never holds the URL or a part of it.
func newTarget(raw string, log *slog.Logger) (Target, error) {
	t := Target{Service: serviceOf(raw), secrets: secretsOf(raw)}
	send, err := newSender(raw, log)
	if err != nil {
		return t, errors.New(t.redact(err.Error()))
	}
	t.Send = send
	return t, nil
}

// serviceOf is the URL's scheme, or "invalid".
func serviceOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "invalid"
	}
	return strings.ToLower(u.Scheme)
}

// secretsOf lists the parts of a URL that may carry a token: user info,
// host, path segments, query values and the fragment.
func secretsOf(raw string) []string {
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	if u.User != nil {
		out = append(out, u.User.String(), u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	out = append(out, u.Host)
	for _, seg := range strings.Split(u.Path, "/") {
		out = append(out, seg, url.PathEscape(seg))
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			out = append(out, v, url.QueryEscape(v))
		}
	}
	out = append(out, u.RawQuery, u.Fragment)
	var keep []string
	for _, s := range out {
		if len(s) >= 3 { // shorter parts would redact ordinary words
			keep = append(keep, s)
		}
	}
	return keep
}

var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"']+`)

// redact removes every URL and every secret-bearing part of the target's
// URL from an error text.
func (t Target) redact(s string) string {
	s = urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		return serviceOf(u) + "://[redacted]"
	})
	for _, sec := range t.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

// Run sends queued messages until ctx ends. Call it once, in its own
// goroutine.
func (n *Notifier) Run(ctx context.Context) {
	n.runOnce.Do(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case text := <-n.queue:
				if err := n.limiter.Wait(ctx); err != nil {
					return
				}
				for _, t := range n.targets {
					n.send(ctx, t, text)
				}
			}
		}
	})
}

func (n *Notifier) send(ctx context.Context, t Target, text string) {
	sctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	err := t.Send(sctx, text)
	if err == nil && sctx.Err() != nil {
		err = sctx.Err()
	}
	if err != nil {
		n.counter.WithLabelValues(t.Service, ResultError).Inc()
		n.log.Warn("notification failed", "service", t.Service, "error", t.redact(err.Error()))
		return
	}
	n.counter.WithLabelValues(t.Service, ResultSent).Inc()
	n.log.Debug("notification sent", "service", t.Service)
}

// Post queues one message without ever waiting: a full queue drops it
// (counted per target as dropped). Cluster text in it is made one safe line.
func (n *Notifier) Post(text string) {
	if n == nil || len(n.targets) == 0 {
		return
	}
	msg := sanitize.Line(n.prefix + " " + text)
	select {
	case n.queue <- msg:
	default:
		for _, t := range n.targets {
			n.counter.WithLabelValues(t.Service, ResultDropped).Inc()
		}
		n.log.Warn("notification dropped: the queue is full", "queue", cap(n.queue))
	}
}
