package prometheus

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

// QueryAlerts asks once, as the poll does: the operator's filter, else
// kured's blocker; no gate asks nothing; a failure is an error.
func TestQueryAlerts(t *testing.T) {
	f, srv := newFake(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		o      Options
		want   []string
		filter bool
	}{
		{"operator's filter", Options{URL: srv.URL, AlertFilter: "^Node"}, []string{"NodeDown"}, true},
		{"kured's blocker", Options{URL: srv.URL, KuredAlerts: &KuredAlerts{Filter: "^Watchdog$"}}, []string{"DiskFull", "NodeDown"}, true},
		{"no gate", Options{URL: srv.URL}, nil, false},
	} {
		names, filter, err := QueryAlerts(ctx, tc.o)
		if err != nil || filter != tc.filter || !reflect.DeepEqual(names, tc.want) {
			t.Errorf("%s: %q %v %v, want %q %v", tc.name, names, filter, err, tc.want, tc.filter)
		}
	}
	f.mode.Store("error")
	if _, filter, err := QueryAlerts(ctx, Options{URL: srv.URL, AlertFilter: "x"}); err == nil || !filter {
		t.Errorf("failing Prometheus: %v %v", filter, err)
	}
	f.mode.Store("hang")
	if _, _, err := QueryAlerts(ctx, Options{URL: srv.URL, AlertFilter: "x", RequestTimeout: 50 * time.Millisecond}); err == nil {
		t.Error("a hung Prometheus answered")
	}
	if _, _, err := QueryAlerts(ctx, Options{URL: "http://user:pw@", AlertFilter: "x"}); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad URL: %v", err)
	}
}
