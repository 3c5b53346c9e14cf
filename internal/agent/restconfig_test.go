package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestKubeVerb(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "/api/v1/nodes", "list"},
		{"GET", "/api/v1/nodes?limit=1", "list"},
		{"GET", "/api/v1/nodes/n1", "get"},
		{"GET", "/api/v1/nodes?watch=true", "watch"},
		{"GET", "/api/v1/namespaces/default", "get"},
		{"GET", "/api/v1/namespaces", "list"},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases", "list"},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/fleetlock-default", "get"},
		{"GET", "/apis/apps/v1/daemonsets", "list"},
		{"PUT", "/apis/apps/v1/namespaces/kube-system/daemonsets/kured", "update"},
		{"POST", "/api/v1/namespaces/default/events", "create"},
		{"PATCH", "/api/v1/nodes/n1", "patch"},
		{"DELETE", "/api/v1/nodes/n1", "delete"},
	} {
		req := httptest.NewRequest(tc.method, tc.url, nil)
		if got := kubeVerb(req); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// hang is a server that answers nothing until released.
func hangServer(t *testing.T) (*httptest.Server, func()) {
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" && r.URL.Query().Get("stream") == "ok" {
			// A healthy watch: headers now, then a slow body.
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			io.WriteString(w, "late")
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	stop := func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() { stop(); srv.Close() })
	return srv, stop
}

func TestTimeoutTransport(t *testing.T) {
	srv, release := hangServer(t)
	rt := &timeoutTransport{next: http.DefaultTransport, timeout: 200 * time.Millisecond}
	client := &http.Client{Transport: rt}

	// A non-watch request that never answers times out.
	_, err := client.Get(srv.URL + "/api/v1/nodes")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("list: %v, want a deadline error", err)
	}
	// A watch that never answers its headers times out.
	_, err = client.Get(srv.URL + "/api/v1/nodes?watch=true")
	if err == nil {
		t.Fatal("black-holed watch did not time out")
	}
	// A watch whose headers arrived lives past the timeout.
	resp, err := client.Get(srv.URL + "/api/v1/nodes?watch=true&stream=ok")
	if err != nil {
		t.Fatalf("healthy watch: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // past the timeout: the stream must still be readable
	release()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "late" {
		t.Fatalf("watch body %q, %v: the stream was cut", body, err)
	}
	// A request that carries its own deadline keeps it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/nodes", nil)
	if resp, err := client.Do(req); err != nil {
		t.Fatalf("released server: %v", err)
	} else {
		resp.Body.Close()
	}
}

func TestErrorCounting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/forbidden") {
			w.WriteHeader(403)
		}
	}))
	defer srv.Close()
	var verbs []string
	client := &http.Client{Transport: errorCounting(func(v string) { verbs = append(verbs, v) })(http.DefaultTransport)}
	for _, p := range []string{"/api/v1/nodes/ok", "/api/v1/nodes/forbidden"} {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if _, err := client.Get("http://127.0.0.1:1/api/v1/nodes"); err == nil {
		t.Fatal("port 1 answered")
	}
	if strings.Join(verbs, ",") != "get,list" {
		t.Fatalf("counted %v, want [get list]", verbs)
	}
}
