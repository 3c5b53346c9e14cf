package longhorn

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/model"
)

// TestDecodeVolumeListMatchesVolumeToModel: the struct decoder reads what
// the unstructured path reads, including odd types (read as absent) and an
// attached volume whose currentNodeID is empty (ownerID then).
func TestDecodeVolumeListMatchesVolumeToModel(t *testing.T) {
	items := []*unstructured.Unstructured{
		volume("pvc-a", "healthy", 3, "w-1"),
		volume("pvc-b", "degraded", 2, ""),
		volume("pvc-c", "faulted", 1, "w-3"),
		volume("pvc-d", "", 0, ""),
	}
	_ = unstructured.SetNestedField(items[1].Object, "w-9", "status", "ownerID")
	// Odd types: replicas as a string, robustness as a number, state an object.
	items[2].Object["spec"].(map[string]any)["numberOfReplicas"] = "three"
	items[2].Object["status"].(map[string]any)["robustness"] = int64(7)
	items[3].Object["status"].(map[string]any)["state"] = map[string]any{"x": "y"}
	items[3].Object["spec"].(map[string]any)["numberOfReplicas"] = 2.0
	var raw []any
	var want []model.Volume
	for _, u := range items {
		raw = append(raw, u.Object)
		want = append(want, VolumeToModel(u))
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "longhorn.io/v1beta2", "items": raw, "kind": "VolumeList",
		"metadata": map[string]any{"continue": "tok", "resourceVersion": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	got, cont, err := DecodeVolumeList(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || cont != "tok" {
		t.Errorf("got %+v (continue %q)\nwant %+v", got, cont, want)
	}
	if want[1].Node != "w-9" || want[2].Replicas != 0 || want[2].Robustness != model.NormalRobustness("") || want[3].Replicas != 2 {
		t.Errorf("VolumeToModel itself changed: %+v", want)
	}
}

func TestDecodeVolumeListRejectsNonLists(t *testing.T) {
	for _, body := range []string{
		``,
		`[]`,
		`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`,
		`{"kind":"VolumeList","items":[{"metadata":{"name":"a"}}`, // cut short
		`{"kind":"VolumeList","items":{"a":1}}`,
	} {
		if _, _, err := DecodeVolumeList(strings.NewReader(body)); err == nil {
			t.Errorf("%q: no error", body)
		}
	}
	got, _, err := DecodeVolumeList(strings.NewReader(`{"kind":"VolumeList","metadata":{},"items":null}`))
	if err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
}

// fakeLonghornAPI serves volume lists in pages of ?limit (of every
// namespace or of one, with a metadata.namespace field selector), as JSON or,
// when asked, as a Table (with Longhorn's columns, or only Name and Age
// with noColumns, or a 406 with noTable); single volumes by name; or a
// status.
type fakeLonghornAPI struct {
	mu        sync.Mutex
	vols      []*unstructured.Unstructured
	status    int // when set, every request gets it (with a Status body)
	noTable   bool
	noColumns bool
	gone      map[string]bool // names whose GET is a 404
	expire    int             // how many continue requests get 410 Expired
	hangGets  bool            // a GET of one volume answers nothing until the client gives up
	calls     []string
}

func (f *fakeLonghornAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.hangGets && strings.Contains(r.URL.Path, "/volumes/") {
		f.mu.Lock()
		f.calls = append(f.calls, r.URL.Path+"?"+r.URL.RawQuery)
		f.mu.Unlock()
		<-r.Context().Done()
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	table := strings.Contains(r.Header.Get("Accept"), "as=Table")
	call := r.URL.Path + "?" + r.URL.RawQuery
	if table {
		call = "Table " + call
	}
	f.calls = append(f.calls, call)
	w.Header().Set("Content-Type", "application/json")
	fail := func(code int) {
		w.WriteHeader(code)
		reason := map[int]string{404: "NotFound", 403: "Forbidden", 406: "NotAcceptable"}[code]
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope","reason":%q,"code":%d}`, reason, code)
	}
	if f.status != 0 {
		fail(f.status)
		return
	}
	ns, name := "", ""
	rest, ok := strings.CutPrefix(r.URL.Path, "/apis/longhorn.io/v1beta2/")
	if after, isNS := strings.CutPrefix(rest, "namespaces/"); isNS {
		ns, rest, _ = strings.Cut(after, "/")
	}
	rest, hasName := strings.CutPrefix(rest, "volumes/")
	if hasName {
		name = rest
	} else if rest != "volumes" {
		ok = false
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	var sel []*unstructured.Unstructured
	fs := r.URL.Query().Get("fieldSelector")
	for _, u := range f.vols {
		switch {
		case ns != "" && u.GetNamespace() != ns,
			name != "" && u.GetName() != name,
			fs != "" && (fs != "metadata.namespace!="+LonghornNamespace || u.GetNamespace() == LonghornNamespace):
			continue
		}
		sel = append(sel, u)
	}
	if name != "" {
		if len(sel) == 0 || f.gone[name] {
			fail(404)
			return
		}
		_ = json.NewEncoder(w).Encode(sel[0].Object)
		return
	}
	if table && f.noTable {
		fail(406)
		return
	}
	if f.expire > 0 && r.URL.Query().Get("continue") != "" {
		f.expire--
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}`)
		return
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	end := len(sel)
	if limit > 0 {
		end = min(start+limit, end)
	}
	meta := map[string]any{"resourceVersion": "9"}
	if end < len(sel) {
		meta["continue"] = strconv.Itoa(end)
	}
	if table {
		_ = json.NewEncoder(w).Encode(fakeTable(sel[start:end], meta, !f.noColumns))
		return
	}
	var items []any
	for _, u := range sel[start:end] {
		items = append(items, u.Object)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "longhorn.io/v1beta2", "kind": "VolumeList", "metadata": meta, "items": items})
}

// fakeTable is the Table of vols the apiserver would serve with Longhorn's
// columns (or without them: Name and Age).
func fakeTable(vols []*unstructured.Unstructured, meta map[string]any, columns bool) map[string]any {
	defs := []any{map[string]any{"name": "Name", "type": "string", "format": "name"}}
	paths := [][]string{}
	if columns {
		for _, c := range []struct {
			name string
			path []string
		}{{"Data Engine", []string{"spec", "dataEngine"}}, {"State", []string{"status", "state"}},
			{"Robustness", []string{"status", "robustness"}}, {"Size", []string{"spec", "size"}},
			{"Node", []string{"status", "currentNodeID"}}} {
			defs = append(defs, map[string]any{"name": c.name, "type": "string", "format": ""})
			paths = append(paths, c.path)
		}
	}
	defs = append(defs, map[string]any{"name": "Age", "type": "date", "format": ""})
	rows := []any{}
	for _, u := range vols {
		cells := []any{u.GetName()}
		for _, p := range paths {
			if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, p...); ok {
				cells = append(cells, fmt.Sprint(v))
			} else {
				cells = append(cells, nil)
			}
		}
		rows = append(rows, map[string]any{"cells": append(cells, "5m"), "object": nil})
	}
	return map[string]any{"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": defs, "rows": rows}
}

func onceREST(t *testing.T, api *fakeLonghornAPI) rest.Interface {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	rc, err := NewREST(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// TestOnceREST: the one-shot list pages through the raw REST client, sends
// every volume and says ok; a missing CRD is not-installed; a forbidden
// list is forbidden and sends nothing.
func TestOnceREST(t *testing.T) {
	api := &fakeLonghornAPI{}
	for i := range 5 {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%d", i), []string{"healthy", "degraded"}[i%2], 3, "w-1"))
	}
	r, s := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true, PageSize: 2})
	if h := s.Health(); h.Status != model.StatusOK || h.LastSync.IsZero() {
		t.Fatalf("health %+v", h)
	}
	r.Read(func(c *model.Cluster) {
		if s := c.VolumeSummary(); s == nil || s.Total != 5 || s.Degraded != 2 {
			t.Errorf("summary %+v", s)
		}
	})
	// The Table of longhorn-system pages; the other namespaces' list too
	// (one page: none there); the two degraded volumes are fetched whole.
	want := []string{
		"/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes/pvc-1?",
		"/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes/pvc-3?",
		"/apis/longhorn.io/v1beta2/volumes?fieldSelector=metadata.namespace%21%3Dlonghorn-system&limit=2",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?continue=2&includeObject=None&limit=2",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?continue=4&includeObject=None&limit=2",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None&limit=2",
	}
	if got := sortedCalls(api); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %q\nwant %q", got, want)
	}
	r.Read(func(c *model.Cluster) {
		for _, v := range c.Volumes() {
			// The Table has no replica count: only the fetched ones say it.
			wantReplicas := map[model.Robustness]int{model.RobustnessDegraded: 3}[v.Robustness]
			if v.Replicas != wantReplicas || v.Node != "w-1" || v.State != "attached" || v.Namespace != LonghornNamespace {
				t.Errorf("%+v", v)
			}
		}
	})

	for _, tc := range []struct {
		code int
		want model.SourceStatus
	}{{404, model.StatusNotInstalled}, {403, model.StatusForbidden}, {500, model.StatusError}} {
		api := &fakeLonghornAPI{status: tc.code, vols: api.vols}
		r, s := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true})
		if h := s.Health(); h.Status != tc.want {
			t.Errorf("HTTP %d: health %+v, want %s", tc.code, h, tc.want)
		}
		r.Read(func(c *model.Cluster) {
			if c.VolumeCount() != 0 {
				t.Errorf("HTTP %d: %d volumes", tc.code, c.VolumeCount())
			}
		})
	}
}

// TestOnceDynamic: without a REST client (the demo's fake), the one-shot
// list goes through the dynamic client.
func TestOnceDynamic(t *testing.T) {
	r, s := startSource(t, Options{Client: newFake(volume("pvc-a", "healthy", 3, "w-1"), volume("pvc-b", "faulted", 3, "")), Once: true})
	if h := s.Health(); h.Status != model.StatusOK {
		t.Fatalf("health %+v", h)
	}
	r.Read(func(c *model.Cluster) {
		if s := c.VolumeSummary(); s == nil || s.Total != 2 || s.Faulted != 1 {
			t.Errorf("summary %+v", s)
		}
	})
}

func sortedCalls(api *fakeLonghornAPI) []string {
	api.mu.Lock()
	defer api.mu.Unlock()
	return slices.Sorted(slices.Values(api.calls))
}

// TestOnceRESTTableByDefault: by default the volumes come in two requests
// at once, without a limit (continue pages of a custom resource cost the
// apiserver twice the CPU): longhorn-system's as a Table without objects,
// the other namespaces' as JSON; a volume in another namespace is read
// whole; healthy volumes are not fetched again.
func TestOnceRESTTableByDefault(t *testing.T) {
	api := &fakeLonghornAPI{}
	for i := range 3 {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%d", i), "healthy", 3, "w-1"))
	}
	elsewhere := volume("pvc-elsewhere", "healthy", 2, "w-2")
	elsewhere.SetNamespace("storage")
	api.vols = append(api.vols, elsewhere)
	r, _ := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true})
	want := []model.Volume{
		{Namespace: LonghornNamespace, Name: "pvc-0", Robustness: "healthy", State: "attached", Node: "w-1"},
		{Namespace: LonghornNamespace, Name: "pvc-1", Robustness: "healthy", State: "attached", Node: "w-1"},
		{Namespace: LonghornNamespace, Name: "pvc-2", Robustness: "healthy", State: "attached", Node: "w-1"},
		{Namespace: "storage", Name: "pvc-elsewhere", Robustness: "healthy", State: "attached", Node: "w-2", Replicas: 2},
	}
	r.Read(func(c *model.Cluster) {
		if got := modelVolumes(c); !reflect.DeepEqual(got, want) {
			t.Errorf("volumes\n%+v\nwant\n%+v", got, want)
		}
	})
	if want := []string{
		"/apis/longhorn.io/v1beta2/volumes?fieldSelector=metadata.namespace%21%3Dlonghorn-system",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None",
	}; !reflect.DeepEqual(sortedCalls(api), want) {
		t.Errorf("calls %q, want %q", sortedCalls(api), want)
	}
}

func modelVolumes(c *model.Cluster) []model.Volume {
	var out []model.Volume
	for _, v := range c.Volumes() {
		out = append(out, *v)
	}
	return out
}

// TestOnceRESTNamespace: with Options.Namespace, one request: that
// namespace's Table.
func TestOnceRESTNamespace(t *testing.T) {
	api := &fakeLonghornAPI{}
	v := volume("pvc-a", "healthy", 3, "w-1")
	v.SetNamespace("storage")
	api.vols = append(api.vols, v, volume("pvc-b", "healthy", 3, "w-1"))
	r, _ := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true, Namespace: "storage"})
	r.Read(func(c *model.Cluster) {
		if got := modelVolumes(c); len(got) != 1 || got[0].Namespace != "storage" || got[0].Name != "pvc-a" {
			t.Errorf("volumes %+v", got)
		}
	})
	if want := []string{"Table /apis/longhorn.io/v1beta2/namespaces/storage/volumes?includeObject=None"}; !reflect.DeepEqual(sortedCalls(api), want) {
		t.Errorf("calls %q, want %q", sortedCalls(api), want)
	}
}

// TestOnceRESTTableFallback: a server that answers no Table (406), or a
// Table without Longhorn's columns (an old or edited CRD), gets the full
// list asked for instead, paged as asked; the volumes are the same.
func TestOnceRESTTableFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		api  *fakeLonghornAPI
	}{{"406", &fakeLonghornAPI{noTable: true}}, {"no columns", &fakeLonghornAPI{noColumns: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			api := tc.api
			for i := range 3 {
				api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%d", i), []string{"healthy", "faulted"}[i%2], 3, "w-1"))
			}
			r, s := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true, PageSize: 2})
			if h := s.Health(); h.Status != model.StatusOK {
				t.Fatalf("health %+v", h)
			}
			r.Read(func(c *model.Cluster) {
				got := modelVolumes(c)
				if len(got) != 3 || got[1].Replicas != 3 || got[1].Robustness != model.RobustnessFaulted {
					t.Errorf("volumes %+v", got)
				}
			})
			want := []string{
				"/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?continue=2&limit=2",
				"/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?limit=2",
				"/apis/longhorn.io/v1beta2/volumes?fieldSelector=metadata.namespace%21%3Dlonghorn-system&limit=2",
				"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None&limit=2",
			}
			if got := sortedCalls(api); !reflect.DeepEqual(got, want) {
				t.Errorf("calls %q\nwant %q", got, want)
			}
		})
	}
}

// TestOnceRESTFollowUps: up to MaxFollowUps volumes that are not healthy, or
// attached without a currentNodeID, are fetched whole (replicas, and the
// ownerID as their node); one gone since the Table is dropped; past
// MaxFollowUps none is fetched, and they say no replica count.
func TestOnceRESTFollowUps(t *testing.T) {
	api := &fakeLonghornAPI{gone: map[string]bool{"pvc-gone": true}}
	noNode := volume("pvc-nonode", "healthy", 2, "")
	_ = unstructured.SetNestedField(noNode.Object, "w-9", "status", "ownerID")
	// pvc-idle: unknown (as Longhorn reports a detached volume), which the
	// explainer does not name: not fetched.
	api.vols = append(api.vols, volume("pvc-bad", "degraded", 3, "w-1"), volume("pvc-gone", "faulted", 3, ""),
		volume("pvc-idle", "unknown", 3, "w-2"), volume("pvc-ok", "healthy", 3, "w-1"), noNode)
	r, _ := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true})
	want := []model.Volume{
		{Namespace: LonghornNamespace, Name: "pvc-bad", Robustness: "degraded", State: "attached", Node: "w-1", Replicas: 3},
		{Namespace: LonghornNamespace, Name: "pvc-idle", Robustness: "unknown", State: "attached", Node: "w-2"},
		{Namespace: LonghornNamespace, Name: "pvc-nonode", Robustness: "healthy", State: "attached", Node: "w-9", Replicas: 2},
		{Namespace: LonghornNamespace, Name: "pvc-ok", Robustness: "healthy", State: "attached", Node: "w-1"},
	}
	r.Read(func(c *model.Cluster) {
		if got := modelVolumes(c); !reflect.DeepEqual(got, want) {
			t.Errorf("volumes\n%+v\nwant\n%+v", got, want)
		}
	})
	if got := len(sortedCalls(api)); got != 2+3 {
		t.Errorf("%d requests, want 2 lists and 3 GETs: %q", got, sortedCalls(api))
	}

	// Past the cap: no GET, no replica count.
	api = &fakeLonghornAPI{}
	for i := range MaxFollowUps + 1 {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%03d", i), "degraded", 3, "w-1"))
	}
	r, _ = startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true})
	r.Read(func(c *model.Cluster) {
		got := modelVolumes(c)
		if len(got) != MaxFollowUps+1 || got[0].Replicas != 0 || got[0].Robustness != model.RobustnessDegraded {
			t.Errorf("%d volumes, the first %+v", len(got), got[0])
		}
	})
	if got := len(sortedCalls(api)); got != 2 {
		t.Errorf("%d requests, want the 2 lists: %q", got, sortedCalls(api))
	}
}

// TestOnceRESTFollowUpsBounded: the follow-up GETs together get one
// RequestTimeout, not one per wave of followUpConcurrency: a server that
// lists but stalls on every GET holds the report for one timeout, which
// ends the first wave, and no GET is sent after it; the read stands on
// the Table's rows (no replica count) and says ok.
func TestOnceRESTFollowUpsBounded(t *testing.T) {
	api := &fakeLonghornAPI{hangGets: true}
	for i := range MaxFollowUps {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%03d", i), "degraded", 3, "w-1"))
	}
	r, s := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true, RequestTimeout: 2 * time.Second})
	if h := s.Health(); h.Status != model.StatusOK {
		t.Fatalf("health %+v", h)
	}
	r.Read(func(c *model.Cluster) {
		got := modelVolumes(c)
		if len(got) != MaxFollowUps || got[0].Replicas != 0 || got[0].Robustness != model.RobustnessDegraded {
			t.Errorf("%d volumes, the first %+v", len(got), got[0])
		}
	})
	var gets int
	for _, c := range sortedCalls(api) {
		if strings.Contains(c, "/volumes/") {
			gets++
		}
	}
	if gets != followUpConcurrency {
		t.Errorf("%d GETs sent, want the first wave's %d", gets, followUpConcurrency)
	}
}

// TestOnceRESTTableExpired: a Table whose continue token expired (410) is
// read again from the start, as the JSON list is, never half.
func TestOnceRESTTableExpired(t *testing.T) {
	api := &fakeLonghornAPI{expire: 1}
	for i := range 3 {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%d", i), "healthy", 3, "w-1"))
	}
	r, s := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true, Namespace: LonghornNamespace, PageSize: 2})
	if h := s.Health(); h.Status != model.StatusOK {
		t.Fatalf("health %+v", h)
	}
	r.Read(func(c *model.Cluster) {
		if got := modelVolumes(c); len(got) != 3 {
			t.Errorf("volumes %+v", got)
		}
	})
	want := []string{
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?continue=2&includeObject=None&limit=2",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?continue=2&includeObject=None&limit=2",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None&limit=2",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None&limit=2",
	}
	if got := sortedCalls(api); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %q\nwant %q", got, want)
	}
}
