package notify

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// smtpSender mails the message with net/smtp: shoutrrr's smtp service
// (v0.18.0) without its templates, its URL read as that service reads it:
//
//	smtp://[user[:password]@]host[:port]/?fromaddress=a@example.com&toaddresses=b@example.com,c@example.com
//
// port defaults to 25. Query keys, matched in any case (shoutrrr's
// aliases after the slash): fromaddress/from and toaddresses/to (comma
// separated; both required), fromname, subject/title, auth (None, Plain,
// CRAMMD5, Login, OAuth2 — the password is the access token — or Unknown,
// the default: Plain with a user name, else None), encryption (Auto, the
// default: implicit TLS on port 465; ImplicitTLS; ExplicitTLS; None),
// usestarttls/starttls (default yes: STARTTLS when the server offers it,
// unless the connection is already TLS), requirestarttls (fail when the
// server does not offer it), skiptlsverify, usehtml (a text and an HTML
// part), clienthost (the HELO name; default localhost, auto: this host's
// name), timeout (a Go duration, default 10s, for the whole exchange). An
// unknown key is an error, as in shoutrrr. Each recipient gets its own
// mail. A space in an address is read as the '+' the query turned into one.
//
// Unlike shoutrrr: the subject defaults to "rebootwatch notification"
// (shoutrrr v0.18 sent an empty one), Login and OAuth2 send credentials only
// over TLS or to localhost (as net/smtp's Plain does), and a line break in
// an address, the subject, the sender's name or the HELO name fails at
// startup.
type smtpSender struct {
	host        string
	port        uint16
	username    string
	password    string
	from        string
	fromName    string
	to          []string
	subject     string
	auth        string // one of smtpAuths, never "unknown"
	implicitTLS bool
	startTLS    bool
	requireTLS  bool
	skipVerify  bool
	html        bool
	clientHost  string
	timeout     time.Duration
	log         *slog.Logger
}

var (
	smtpAuths       = []string{"none", "plain", "crammd5", "unknown", "oauth2", "login"}
	smtpEncryptions = []string{"none", "explicittls", "implicittls", "auto"}
)

const smtpImplicitTLSPort = 465

func newSMTP(u *url.URL, log *slog.Logger) (*smtpSender, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &smtpSender{host: u.Hostname(), port: 25, subject: "rebootwatch notification", auth: "unknown",
		startTLS: true, clientHost: "localhost", timeout: 10 * time.Second, log: log}
	if s.host == "" {
		return nil, errors.New("smtp: the URL has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, errors.New("smtp: the port is not a number from 0 to 65535")
		}
		s.port = uint16(n)
	}
	if u.User != nil {
		s.username = u.User.Username()
		s.password, _ = u.User.Password()
	}
	encryption := "auto"
	for key, values := range u.Query() {
		v := values[0]
		var err error
		switch k := strings.ToLower(key); k {
		case "fromaddress", "from":
			s.from = v
		case "fromname":
			s.fromName = v
		case "toaddresses", "to":
			s.to = strings.Split(v, ",")
		case "subject", "title":
			s.subject = v
		case "auth":
			s.auth, err = smtpEnum(k, v, smtpAuths)
		case "encryption":
			encryption, err = smtpEnum(k, v, smtpEncryptions)
		case "usestarttls", "starttls":
			s.startTLS, err = smtpBool(k, v)
		case "requirestarttls":
			s.requireTLS, err = smtpBool(k, v)
		case "skiptlsverify":
			s.skipVerify, err = smtpBool(k, v)
		case "usehtml":
			s.html, err = smtpBool(k, v)
		case "clienthost":
			s.clientHost = v
		case "timeout":
			if s.timeout, err = time.ParseDuration(v); err != nil || s.timeout <= 0 {
				err = errors.New("smtp: timeout is not a duration of more than 0 (10s, 1m, …)")
			}
		default:
			return nil, fmt.Errorf("smtp: unknown query key %q: the keys are fromaddress (from), fromname, toaddresses (to), subject (title), auth, encryption, usestarttls (starttls), requirestarttls, skiptlsverify, usehtml, clienthost, timeout", key)
		}
		if err != nil {
			return nil, err
		}
	}
	s.from = strings.ReplaceAll(s.from, " ", "+")
	for i := range s.to {
		s.to[i] = strings.ReplaceAll(s.to[i], " ", "+")
	}
	if s.from == "" {
		return nil, errors.New("smtp: fromaddress is missing from the URL")
	}
	if len(s.to) == 0 || slices.Contains(s.to, "") {
		return nil, errors.New("smtp: toaddresses is missing from the URL, or names an empty address")
	}
	for _, v := range append([]string{s.from, s.fromName, s.subject, s.clientHost}, s.to...) {
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, errors.New("smtp: an address, the subject, fromname or clienthost has a line break")
		}
	}
	if s.auth == "unknown" {
		s.auth = "none"
		if s.username != "" {
			s.auth = "plain"
		}
	}
	s.implicitTLS = encryption == "implicittls" || encryption == "auto" && s.port == smtpImplicitTLSPort
	return s, nil
}

func smtpEnum(key, v string, names []string) (string, error) {
	if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, v) }); i >= 0 {
		return names[i], nil
	}
	return "", fmt.Errorf("smtp: %s=%q: the values are %s", key, v, strings.Join(names, ", "))
}

func smtpBool(key, v string) (bool, error) {
	b, ok := parseBool(v)
	if !ok {
		return false, fmt.Errorf("smtp: %s=%q is not a boolean (yes/no, true/false, 1/0, y/n)", key, v)
	}
	return b, nil
}

func (s *smtpSender) send(ctx context.Context, text string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	addr := net.JoinHostPort(s.host, strconv.Itoa(int(s.port)))
	var conn net.Conn
	var err error
	if s.implicitTLS {
		d := &tls.Dialer{Config: s.tlsConfig()}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("smtp: connecting: %w", err)
	}
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	// Stop waiting on the server when the caller's context ends first.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("smtp: greeting: %w", err)
	}
	defer func() { _ = c.Close() }()
	return s.session(c, text)
}

func (s *smtpSender) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.skipVerify} //nolint:gosec // skiptlsverify is the operator's choice, as in shoutrrr
}

func (s *smtpSender) session(c *smtp.Client, text string) error {
	helo := s.clientHost
	if helo == "auto" {
		if h, err := os.Hostname(); err == nil {
			helo = h
		} else {
			helo = "localhost"
		}
	}
	if err := c.Hello(helo); err != nil {
		return fmt.Errorf("smtp: HELO: %w", err)
	}
	if s.startTLS && !s.implicitTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(s.tlsConfig()); err != nil {
				return fmt.Errorf("smtp: STARTTLS: %w", err)
			}
		} else if s.requireTLS {
			return errors.New("smtp: the server does not offer STARTTLS and requirestarttls is set")
		} else {
			s.log.Warn("notification by smtp: the server does not offer STARTTLS; the mail goes unencrypted", "service", schemeSMTP)
		}
	}
	if a := s.smtpAuth(); a != nil {
		if err := c.Auth(a); err != nil {
			return fmt.Errorf("smtp: authenticating (%s): %w", s.auth, err)
		}
	}
	var errs []error
	for i, to := range s.to {
		if err := s.mail(c, to, text); err != nil {
			errs = append(errs, fmt.Errorf("smtp: recipient #%d: %w", i+1, err))
			_ = c.Reset()
		}
	}
	// Some servers close the session before answering QUIT (shoutrrr
	// ignores the same "short response").
	if err := c.Quit(); err != nil && !strings.Contains(err.Error(), "short response") {
		errs = append(errs, fmt.Errorf("smtp: QUIT: %w", err))
	}
	return errors.Join(errs...)
}

func (s *smtpSender) smtpAuth() smtp.Auth {
	switch s.auth {
	case "plain":
		return smtp.PlainAuth("", s.username, s.password, s.host)
	case "crammd5":
		return smtp.CRAMMD5Auth(s.username, s.password)
	case "login":
		return &loginAuth{username: s.username, password: s.password, host: s.host}
	case "oauth2":
		return &xoauth2{username: s.username, token: s.password}
	}
	return nil
}

func (s *smtpSender) mail(c *smtp.Client, to, text string) error {
	if err := c.Mail(s.from); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(s.message(to, text, time.Now())); err != nil {
		_ = w.Close()
		return fmt.Errorf("writing the mail: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ending the mail: %w", err)
	}
	return nil
}

// message is one mail: headers, then the text, or a text and an HTML part.
// net/smtp's DATA writer turns its \n into \r\n and escapes leading dots.
func (s *smtpSender) message(to, text string, now time.Time) []byte {
	var b strings.Builder
	from := mail.Address{Name: s.fromName, Address: s.from}
	fmt.Fprintf(&b, "Subject: %s\n", mime.QEncoding.Encode("UTF-8", s.subject))
	fmt.Fprintf(&b, "Date: %s\n", now.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "To: %s\n", to)
	fmt.Fprintf(&b, "From: %s\n", from.String())
	b.WriteString("MIME-Version: 1.0\n")
	const plain = `text/plain; charset="UTF-8"`
	if !s.html {
		fmt.Fprintf(&b, "Content-Type: %s\n\n%s\n", plain, text)
		return []byte(b.String())
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	boundary := hex.EncodeToString(r[:])
	fmt.Fprintf(&b, "Content-Type: multipart/alternative; boundary=%s\n\n", boundary)
	fmt.Fprintf(&b, "--%s\nContent-Type: %s\n\n%s\n", boundary, plain, text)
	fmt.Fprintf(&b, "--%s\nContent-Type: text/html; charset=\"UTF-8\"\n\n<pre>%s</pre>\n", boundary, html.EscapeString(text))
	fmt.Fprintf(&b, "--%s--\n", boundary)
	return []byte(b.String())
}

// loginAuth is SMTP AUTH LOGIN: the user name, then the password, each
// when the server asks; only over TLS or to localhost, and only to the
// host the URL names.
type loginAuth struct {
	username, password, host string
	step                     int
}

func (a *loginAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if err := credentialsAllowed(server, a.host); err != nil {
		return "", nil, err
	}
	a.step = 0
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(_ []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	a.step++
	switch a.step {
	case 1:
		return []byte(a.username), nil
	case 2:
		return []byte(a.password), nil
	}
	return nil, errors.New("unexpected server challenge after the password")
}

// xoauth2 is SMTP AUTH XOAUTH2 with the URL's password as the access token.
type xoauth2 struct{ username, token string }

func (a *xoauth2) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if err := credentialsAllowed(server, server.Name); err != nil {
		return "", nil, err
	}
	return "XOAUTH2", []byte("user=" + a.username + "\x01auth=Bearer " + a.token + "\x01\x01"), nil
}

// Next answers the server's error challenge with an empty line, after which
// the server fails the exchange with its reason.
func (a *xoauth2) Next(_ []byte, _ bool) ([]byte, error) { return nil, nil }

func credentialsAllowed(server *smtp.ServerInfo, host string) error {
	if !server.TLS && server.Name != "localhost" && server.Name != "127.0.0.1" && server.Name != "::1" {
		return errors.New("unencrypted connection: credentials are sent only over TLS or to localhost")
	}
	if server.Name != host {
		return errors.New("wrong host name")
	}
	return nil
}
