package agent

import (
	"net/http"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/kubeclient"
	"github.com/rebootwatch/rebootwatch/internal/kubeconfig"
)

// ErrNoClusterConfig is returned when the agent has neither a kubeconfig nor
// in-cluster credentials. The agent never falls back to a default server.
var ErrNoClusterConfig = kubeconfig.ErrNoClusterConfig

// LoadRESTConfig builds the rest config through the one kubeconfig loader
// (internal/kubeconfig): --kubeconfig, else $KUBECONFIG, else the in-cluster
// config; never ~/.kube/config. A token file (the in-cluster service-account
// token, a kubeconfig's tokenFile) is read again on the first 401, so a
// rotated token is picked up at once (kubeclient.RereadTokenOn401). It returns a description of where the config
// came from (never a credential). inCluster is rest.InClusterConfig outside
// tests.
func LoadRESTConfig(c Config, getenv func(string) string, inCluster func() (*rest.Config, error)) (*rest.Config, string, error) {
	cfg, origin, err := kubeconfig.Loader{Kubeconfig: c.Kubeconfig, Getenv: getenv}.InCluster(c.Context, inCluster)
	if err != nil {
		return nil, "", err
	}
	if cfg, err = kubeclient.RereadTokenOn401(cfg); err != nil {
		return nil, "", err
	}
	cfg.UserAgent = "rebootwatch-agent"
	cfg.Timeout = c.RequestTimeout
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 20, 40
	}
	return cfg, origin, nil
}

// errorCounting wraps a transport so that every failed API call is reported
// (a transport error or an HTTP status >= 400) with its Kubernetes verb.
func errorCounting(report func(verb string)) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode >= 400 {
				report(kubeVerb(req))
			}
			return resp, err
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// kubeVerb maps a request to the Kubernetes verb it most likely is.
func kubeVerb(req *http.Request) string {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		q := req.URL.Query().Get("watch")
		if q == "true" || q == "1" {
			return "watch"
		}
		if isCollection(req.URL.Path) {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(req.Method)
}

// isCollection reports whether an API path names a collection:
// /api/v1/[namespaces/NS/]RES or /apis/G/V/[namespaces/NS/]RES.
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return len(parts) == 1
}

// WithErrorCounting returns a copy of cfg whose API errors are reported.
func WithErrorCounting(cfg *rest.Config, report func(verb string)) *rest.Config {
	c := rest.CopyConfig(cfg)
	prev := c.WrapTransport
	wrap := errorCounting(report)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return wrap(rt)
	}
	return c
}
