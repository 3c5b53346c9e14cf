package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
