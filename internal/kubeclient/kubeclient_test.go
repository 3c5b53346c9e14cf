package kubeclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

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
			_, _ = io.WriteString(w, "late")
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

// TestProtobufConfig: the derived config asks for protobuf (JSON still
// accepted) and the caller's config, which custom resources' clients use,
// keeps its content types.
func TestProtobufConfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid", UserAgent: "rebootwatch"}
	p := ProtobufConfig(cfg)
	if p.ContentType != "application/vnd.kubernetes.protobuf" || p.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("content types %q, accept %q", p.ContentType, p.AcceptContentTypes)
	}
	if p.Host != cfg.Host || p.UserAgent != cfg.UserAgent {
		t.Errorf("host %q, user agent %q: not cfg's", p.Host, p.UserAgent)
	}
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Errorf("cfg changed: %q, %q", cfg.ContentType, cfg.AcceptContentTypes)
	}
}
