package kubeclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tokenServer answers 200 to the one bearer token it currently accepts and
// 401 to any other, and records the tokens it was sent.
type tokenServer struct {
	mu    sync.Mutex
	valid string
	seen  []string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	tok := r.Header.Get("Authorization")
	s.seen = append(s.seen, tok)
	ok := tok == "Bearer "+s.valid
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
}

func (s *tokenServer) accept(tok string) {
	s.mu.Lock()
	s.valid = tok
	s.mu.Unlock()
}

// A rotated token file is read again on the first 401: the request after
// it carries the new token. client-go's own token-file transport keeps the
// token it read for a minute, and every request in that minute fails.
func TestRereadTokenOn401(t *testing.T) {
	srv := &tokenServer{valid: "token1"}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		if err := os.WriteFile(file+".tmp", []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	write("token1")
	cfg, err := RereadTokenOn401(&rest.Config{Host: hs.URL, BearerTokenFile: file})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	version := func() error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(context.Background()).Raw()
		return err
	}
	if err := version(); err != nil {
		t.Fatalf("with token1: %v", err)
	}
	// The rotation: token1 is invalidated, token2 is in the file.
	write("token2")
	srv.accept("token2")
	if err := version(); err == nil {
		t.Fatal("the request in flight at the rotation still carried token1 and should have been refused")
	}
	if err := version(); err != nil {
		t.Fatalf("the request after the 401 did not read the new token: %v (sent %q)", err, srv.seen)
	}
	if got := srv.seen[len(srv.seen)-1]; got != "Bearer token2" {
		t.Fatalf("last request sent %q, want token2", got)
	}
}

// What RereadTokenOn401 leaves as it was: no token file, another
// authenticator, or an unreadable file with a static token to fall back on;
// an unreadable file and nothing else is an error, as in client-go.
func TestRereadTokenOn401LeavesOthersAlone(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for name, cfg := range map[string]*rest.Config{
		"no file":          {Host: "https://h", BearerToken: "t"},
		"exec provider":    {Host: "https://h", BearerTokenFile: missing, ExecProvider: &clientcmdapi.ExecConfig{Command: "x"}},
		"unreadable+token": {Host: "https://h", BearerTokenFile: missing, BearerToken: "t"},
	} {
		got, err := RereadTokenOn401(cfg)
		if err != nil || got != cfg {
			t.Errorf("%s: changed (%v) or failed: %v", name, got != cfg, err)
		}
	}
	if _, err := RereadTokenOn401(&rest.Config{Host: "https://h", BearerTokenFile: missing}); err == nil {
		t.Error("an unreadable token file and no token: no error")
	}
}
