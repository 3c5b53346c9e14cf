package longhorn

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

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

// fakeLonghornAPI serves volume lists in pages of ?limit, or a status.
type fakeLonghornAPI struct {
	mu     sync.Mutex
	vols   []*unstructured.Unstructured
	status int // when set, every request gets it (with a Status body)
	calls  []string
}

func (f *fakeLonghornAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.URL.Path+"?"+r.URL.RawQuery)
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
		reason := map[int]string{404: "NotFound", 403: "Forbidden"}[f.status]
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope","reason":%q,"code":%d}`, reason, f.status)
		return
	}
	if r.URL.Path != "/apis/longhorn.io/v1beta2/volumes" {
		http.NotFound(w, r)
		return
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	end := len(f.vols)
	if limit > 0 {
		end = min(start+limit, end)
	}
	var items []any
	for _, u := range f.vols[start:end] {
		items = append(items, u.Object)
	}
	meta := map[string]any{"resourceVersion": "9"}
	if end < len(f.vols) {
		meta["continue"] = strconv.Itoa(end)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "longhorn.io/v1beta2", "kind": "VolumeList", "metadata": meta, "items": items})
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
	want := []string{"/apis/longhorn.io/v1beta2/volumes?limit=2", "/apis/longhorn.io/v1beta2/volumes?continue=2&limit=2",
		"/apis/longhorn.io/v1beta2/volumes?continue=4&limit=2"}
	if !reflect.DeepEqual(api.calls, want) {
		t.Errorf("calls %q\nwant %q", api.calls, want)
	}

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

// TestOnceRESTOneRequestByDefault: by default the volumes come in one
// streamed request, without a limit (continue pages of a custom resource
// cost the apiserver twice the CPU).
func TestOnceRESTOneRequestByDefault(t *testing.T) {
	api := &fakeLonghornAPI{}
	for i := range 3 {
		api.vols = append(api.vols, volume(fmt.Sprintf("pvc-%d", i), "healthy", 3, "w-1"))
	}
	r, _ := startSource(t, Options{Client: newFake(), REST: onceREST(t, api), Once: true})
	r.Read(func(c *model.Cluster) {
		if c.VolumeCount() != 3 {
			t.Errorf("%d volumes", c.VolumeCount())
		}
	})
	if want := []string{"/apis/longhorn.io/v1beta2/volumes?"}; !reflect.DeepEqual(api.calls, want) {
		t.Errorf("calls %q, want %q", api.calls, want)
	}
}
