package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/nicholas-fedor/shoutrrr/pkg/services/specialized/generic"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"
)

// request is what a webhook receiver saw.
type request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string
}

// receiver is a loopback webhook that hands every request to the test.
func receiver(t *testing.T) (*httptest.Server, chan request) {
	t.Helper()
	got := make(chan request, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: string(b)}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// shoutrrrGenericSend sends through shoutrrr's own generic service (linked
// into this test only), as its router did: a generic+ URL converted to the
// service URL first.
func shoutrrrGenericSend(t *testing.T, raw, text string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	svc := &generic.Service{}
	if strings.Contains(u.Scheme, "+") {
		if u, err = svc.GetServiceURLFromCustom(u); err != nil {
			t.Fatalf("shoutrrr: %v", err)
		}
	}
	if err := svc.Initialize(u, nil); err != nil {
		t.Fatalf("shoutrrr: %v", err)
	}
	if err := svc.Send(text, &types.Params{}); err != nil {
		t.Fatalf("shoutrrr: %v", err)
	}
}

// TestGenericAsShoutrrr: for each URL form and query setting, the webhook
// receives from our generic sender exactly what shoutrrr's generic service
// sends it: method, path, forwarded query, every header, body.
func TestGenericAsShoutrrr(t *testing.T) {
	srv, got := receiver(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	const text = `rebootwatch: lock "kured" <turned> ghost & co`
	cases := []struct {
		name, url string
		check     func(t *testing.T, r request)
	}{
		{"text, forwarded query", "generic+" + srv.URL + "/hook/T0KEN?foo=bar&x=1", func(t *testing.T, r request) {
			if r.Method != http.MethodPost || r.Path != "/hook/T0KEN" || r.Query.Get("foo") != "bar" || r.Body != text ||
				r.Header.Get("Content-Type") != "text/plain" {
				t.Errorf("%+v", r)
			}
		}},
		{"json, keys, extra data, headers, method, escaped setting", "generic+" + srv.URL + "/hook?template=json&messagekey=text&titlekey=t&title=ignored" +
			"&$source=rebootwatch&$env=prod&@Authorization=Bearer%20s3cr3t&@acceptLanguage=en&@X-Custom=v" +
			"&method=PUT&contenttype=application/vnd.alert%2Bjson&__method=forwarded&keep=me", func(t *testing.T, r request) {
			var body map[string]string
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"text": text, "source": "rebootwatch", "env": "prod"}
			if !reflect.DeepEqual(body, want) || r.Method != http.MethodPut ||
				r.Header.Get("Content-Type") != "application/vnd.alert+json" || r.Header.Get("Authorization") != "Bearer s3cr3t" ||
				r.Header.Get("Accept-Language") != "en" || r.Header.Get("X-Custom") != "v" ||
				!reflect.DeepEqual(r.Query, url.Values{"method": {"forwarded"}, "keep": {"me"}}) {
				t.Errorf("%+v", r)
			}
		}},
		{"generic://, disabletls, JSON, extra data wins over the message", "generic://" + host + "/h?disabletls=yes&template=JSON&$message=override", func(t *testing.T, r request) {
			if r.Body != `{"message":"override"}` {
				t.Errorf("%+v", r)
			}
		}},
		{"generic:// with user info", "generic://user:p4ss@" + host + "/basic?disabletls=true", func(t *testing.T, r request) {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") {
				t.Errorf("%+v", r)
			}
		}},
		{"generic+http ignores disabletls=no", "generic+" + srv.URL + "/p?disabletls=no&@x-lower=1", func(t *testing.T, r request) {
			if r.Path != "/p" || r.Header.Get("X-Lower") != "1" {
				t.Errorf("%+v", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shoutrrrGenericSend(t, c.url, text)
			want := <-got
			n, err := New(Options{URLs: []string{c.url}})
			if err != nil {
				t.Fatal(err)
			}
			if err := n.targets[0].Send(context.Background(), text); err != nil {
				t.Fatal(err)
			}
			ours := <-got
			if !reflect.DeepEqual(ours, want) {
				t.Errorf("ours differs from shoutrrr's:\n ours %+v\n want %+v", ours, want)
			}
			c.check(t, ours)
		})
	}
}

// TestGenericHeaderName: @names become header names as in shoutrrr, but for
// characters other than letters, which stay.
func TestGenericHeaderName(t *testing.T) {
	for in, want := range map[string]string{
		"acceptLanguage": "Accept-Language", "Authorization": "Authorization", "X-Custom": "X-Custom",
		"x-lower": "X-Lower", "contenttype": "Contenttype", "X-API-Key": "X-A-P-I-Key", "9lives": "9lives",
	} {
		if got := genericHeaderName(in); got != want {
			t.Errorf("genericHeaderName(%q) = %q, want %q", in, got, want)
		}
	}
}
