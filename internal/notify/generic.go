package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// genericSender posts the message to a webhook: shoutrrr's generic service
// (v0.18.0) without its templates. The URL is parsed as that service parses
// it:
//
//   - generic+https://host/path and generic+http://host/path post to
//     https://host/path and http://host/path; generic://host/path posts to
//     https://, or http:// with disabletls=yes.
//   - Query keys that are the service's settings are taken out of the
//     webhook's query: contenttype (default application/json), disabletls
//     (a boolean: yes/no, true/false, 1/0, y/n; the generic+http(s) forms
//     are decided by their scheme), template (none, or json/JSON), title
//     and titlekey (accepted; the agent sends no title), messagekey
//     (default message), method (default POST). Keys match in lower case
//     only, as shoutrrr's.
//   - @Name=value adds a request header; the name is turned into header
//     form as shoutrrr does (acceptLanguage → Accept-Language).
//   - $key=value adds key to the JSON body (template=json); it wins over
//     the message key.
//   - __key=value (key one of the settings) is forwarded as key=value;
//     every other key is forwarded as it is.
//
// Without a template the body is the message as text/plain (Content-Type
// and Accept); with template=json it is one JSON object, Content-Type and
// Accept contenttype. Headers given with @ come last and win. Any answer
// of 400 or more is an error.
//
// Unlike shoutrrr, a template other than json, a generic+ scheme other
// than http and https, a method or @header name that is not an HTTP token
// and a header value with a line break fail when the URL is read, at
// startup, instead of at every send.
type genericSender struct {
	webhook     string // the URL posted to, with the forwarded query
	method      string
	contentType string
	json        bool
	messageKey  string
	headers     map[string]string // header name → value
	extra       map[string]string // JSON key → value
	client      *http.Client
}

// The generic service's settings, as shoutrrr's Config tags name them.
const (
	genericContentType = "contenttype"
	genericDisableTLS  = "disabletls"
	genericTemplate    = "template"
	genericTitle       = "title"
	genericTitleKey    = "titlekey"
	genericMessageKey  = "messagekey"
	genericMethod      = "method"
)

var genericSettings = []string{genericContentType, genericDisableTLS, genericMessageKey, genericMethod,
	genericTemplate, genericTitle, genericTitleKey}

func newGeneric(u *url.URL, custom string, isCustom bool) (*genericSender, error) {
	hook := *u
	hook.Fragment, hook.RawFragment = "", ""
	q := hook.Query()
	g := &genericSender{method: http.MethodPost, contentType: "application/json", messageKey: "message",
		headers: map[string]string{}, extra: map[string]string{}, client: &http.Client{}}

	for key, values := range q {
		if len(key) <= 1 {
			continue
		}
		switch key[0] {
		case '@':
			name := genericHeaderName(key[1:])
			if !validToken(name) || strings.ContainsAny(values[0], "\r\n\x00") {
				return nil, errors.New("generic: an @ header's name is not an HTTP token, or its value has a line break")
			}
			g.headers[name] = values[0]
		case '$':
			g.extra[key[1:]] = values[0]
		default:
			continue
		}
		delete(q, key)
	}

	disableTLS := false
	for _, key := range genericSettings {
		if values := q[key]; len(values) > 0 {
			v := values[0]
			switch key {
			case genericContentType:
				g.contentType = v
			case genericDisableTLS:
				b, ok := parseBool(v)
				if !ok {
					return nil, fmt.Errorf("generic: %s=%q is not a boolean (yes/no, true/false, 1/0, y/n)", key, v)
				}
				disableTLS = b
			case genericTemplate:
				switch v {
				case "":
				case "json", "JSON":
					g.json = true
				default:
					return nil, fmt.Errorf("generic: template %q: only template=json is supported (no template sends the message as text)", v)
				}
			case genericMessageKey:
				g.messageKey = v
			case genericMethod:
				if !validToken(v) {
					return nil, fmt.Errorf("generic: method %q is not an HTTP method", v)
				}
				g.method = v
			case genericTitle, genericTitleKey:
				// Accepted as shoutrrr accepts them: the agent sends no title.
			}
		}
		q.Del(key)
		if escaped := q["__"+key]; len(escaped) > 0 {
			q.Del("__" + key)
			q[key] = escaped
		}
	}

	switch {
	case !isCustom:
		hook.Scheme = "https"
		if disableTLS {
			hook.Scheme = "http"
		}
	case custom == "http" || custom == "https":
		hook.Scheme = custom
	default:
		return nil, fmt.Errorf("generic+%s: the generic service takes the schemes generic+https, generic+http and generic", custom)
	}
	if hook.Host == "" {
		return nil, errors.New("generic: the URL has no host")
	}
	hook.RawQuery = q.Encode()
	g.webhook = hook.String()
	return g, nil
}

func (g *genericSender) send(ctx context.Context, text string) error {
	var body []byte
	contentType := "text/plain"
	if g.json {
		payload := map[string]string{g.messageKey: text}
		for k, v := range g.extra {
			payload[k] = v
		}
		b, err := json.Marshal(payload)
		if err != nil {
			return fmt.Errorf("generic: encoding the message: %w", err)
		}
		body, contentType = b, g.contentType
	} else {
		body = []byte(text)
	}
	req, err := http.NewRequestWithContext(ctx, g.method, g.webhook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("generic: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", contentType)
	for k, v := range g.headers {
		req.Header.Set(k, v)
	}
	res, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("generic: %w", err)
	}
	defer func() { _ = res.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("generic: the webhook answered %s", res.Status)
	}
	return nil
}

// genericHeaderName turns an @name into a header name as shoutrrr's generic
// service does: a dash before every capital that does not follow one, and
// the first letter and every letter after a dash in capitals
// (contentType → Content-Type, X-Custom stays). shoutrrr shifts any
// character there, digits included, into control characters that no
// request can carry; only letters are changed here.
func genericHeaderName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'A' <= c && c <= 'Z':
			if i > 0 && key[i-1] != '-' {
				b.WriteByte('-')
			}
		case 'a' <= c && c <= 'z' && (i == 0 || key[i-1] == '-'):
			c -= 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// parseBool reads a boolean as shoutrrr's settings do.
func parseBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "true", "1", "yes", "y":
		return true, true
	case "false", "0", "no", "n":
		return false, true
	}
	return false, false
}

// validToken: a non-empty HTTP token (RFC 9110), as net/http checks
// methods and header names.
func validToken(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
