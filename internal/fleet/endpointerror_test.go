package fleet

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Queries that failed for one cause (an endpoint that refuses connections)
// are named together with the cause once, without the requests' URLs whose
// PromQL and time range pushed the cause out of the line (issue 34 §3); an
// answer the endpoint gave is kept as it is.
func TestEndpointErrorSaysEachCauseOnce(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	errs := map[string]error{
		"clusters": &url.Error{Op: "Get", URL: "http://127.0.0.1:1/api/v1/label/cluster/values?match%5B%5D=kured_reboot_required&start=1&end=2", Err: refused},
		"locks":    &url.Error{Op: "Post", URL: "http://127.0.0.1:1/api/v1/query", Err: refused},
		"phases":   errors.New("bad_data: 1:5: parse error"),
	}
	f := Build(time.Now(), Answers{Errors: errs}, Options{})
	got := ErrorText(f.Err)
	want := "could not read the endpoint: clusters, locks: dial tcp 127.0.0.1:1: connect: connection refused; phases: bad_data: 1:5: parse error"
	if got != want {
		t.Fatalf("error\n %q\nwant\n %q", got, want)
	}
	if strings.Contains(got, "…") || strings.Contains(got, "match%5B") {
		t.Fatalf("cut or carrying the request's query: %q", got)
	}
}
