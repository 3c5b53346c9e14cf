package notify

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// smtpServer is a small SMTP server on loopback, enough for net/smtp's
// client: EHLO, STARTTLS (when it has a certificate), AUTH PLAIN and LOGIN,
// MAIL, RCPT, DATA, RSET, QUIT. It keeps every command and every mail.
type smtpServer struct {
	t        *testing.T
	ln       net.Listener
	cert     *tls.Certificate // offers STARTTLS when set
	implicit bool             // the listener itself is TLS
	mu       sync.Mutex
	commands []string
	mails    []smtpMail
	done     chan struct{} // one per session that ended
}

type smtpMail struct {
	from, to string
	tls      bool // the session was encrypted when the mail was sent
	auth     string
	data     string
}

func newSMTPServer(t *testing.T, cert *tls.Certificate, implicit bool) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if implicit {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	s := &smtpServer{t: t, ln: ln, cert: cert, implicit: implicit, done: make(chan struct{}, 10)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.session(c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return s
}

func (s *smtpServer) port() string {
	_, p, _ := net.SplitHostPort(s.ln.Addr().String())
	return p
}

func (s *smtpServer) session(c net.Conn) {
	defer func() { _ = c.Close(); s.done <- struct{}{} }()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	reply := func(format string, args ...any) {
		fmt.Fprintf(w, format+"\r\n", args...)
		_ = w.Flush()
	}
	encrypted, auth := s.implicit, ""
	var m smtpMail
	reply("220 test ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		s.mu.Lock()
		s.commands = append(s.commands, line)
		s.mu.Unlock()
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch verb {
		case "EHLO", "HELO":
			fmt.Fprintf(w, "250-test\r\n")
			if s.cert != nil && !encrypted {
				fmt.Fprintf(w, "250-STARTTLS\r\n")
			}
			reply("250 AUTH PLAIN LOGIN")
		case "STARTTLS":
			reply("220 go ahead")
			tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{*s.cert}})
			if tc.Handshake() != nil {
				return
			}
			c, encrypted = tc, true
			r, w = bufio.NewReader(c), bufio.NewWriter(c)
		case "AUTH":
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[1] == "PLAIN":
				b, _ := base64.StdEncoding.DecodeString(f[2])
				auth = "PLAIN " + strings.ReplaceAll(string(b), "\x00", "|")
			case len(f) == 2 && f[1] == "LOGIN":
				reply("334 VXNlcm5hbWU6")
				u, _ := r.ReadString('\n')
				reply("334 UGFzc3dvcmQ6")
				p, _ := r.ReadString('\n')
				ub, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(u))
				pb, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(p))
				auth = "LOGIN " + string(ub) + "|" + string(pb)
			default:
				reply("504 unsupported")
				continue
			}
			reply("235 ok")
		case "MAIL":
			m = smtpMail{from: strings.TrimSuffix(strings.TrimPrefix(line, "MAIL FROM:<"), ">"), tls: encrypted, auth: auth}
			reply("250 ok")
		case "RCPT":
			to := strings.TrimSuffix(strings.TrimPrefix(line, "RCPT TO:<"), ">")
			if strings.HasPrefix(to, "refused") {
				reply("550 no such user")
				continue
			}
			m.to = to
			reply("250 ok")
		case "DATA":
			reply("354 end with .")
			var data strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				data.WriteString(l)
			}
			m.data = data.String()
			s.mu.Lock()
			s.mails = append(s.mails, m)
			s.mu.Unlock()
			reply("250 queued")
		case "RSET", "NOOP":
			reply("250 ok")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("500 unknown")
		}
	}
}

func (s *smtpServer) sent() ([]smtpMail, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]smtpMail(nil), s.mails...), append([]string(nil), s.commands...)
}

// testCert is httptest's certificate for 127.0.0.1 (the client is told
// skiptlsverify=yes: it is not the point here).
func testCert(t *testing.T) *tls.Certificate {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	defer srv.Close()
	return &srv.TLS.Certificates[0]
}

func smtpSend(t *testing.T, raw, text string) error {
	t.Helper()
	n, err := New(Options{URLs: []string{raw}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.targets[0].Send(ctx, text)
}

// TestSMTPPlainTwoRecipients: shoutrrr's URL format with its camel-case
// keys (kured's docs write fromAddress and toAddresses), a user name (so
// Plain authentication), a '+' in an address that the query read as a
// space, two recipients each with their own mail, the subject and sender's
// name in the headers, the text in the body.
func TestSMTPPlainTwoRecipients(t *testing.T) {
	s := newSMTPServer(t, nil, false)
	raw := "smtp://agent:p4ss@127.0.0.1:" + s.port() + "/?fromAddress=rebootwatch+alerts@example.com&toAddresses=ops@example.com,oncall@example.com" +
		"&fromname=Reboot%20Watch&subject=Fleet%20r%C3%A9boot&clienthost=agent.test"
	if err := smtpSend(t, raw, "rebootwatch: lock default/a turned ghost"); err != nil {
		t.Fatal(err)
	}
	<-s.done
	mails, cmds := s.sent()
	if len(mails) != 2 || mails[0].to != "ops@example.com" || mails[1].to != "oncall@example.com" {
		t.Fatalf("mails %+v", mails)
	}
	if cmds[0] != "EHLO agent.test" {
		t.Errorf("first command %q, want EHLO agent.test", cmds[0])
	}
	for _, m := range mails {
		if m.from != "rebootwatch+alerts@example.com" || m.auth != "PLAIN |agent|p4ss" || m.tls {
			t.Errorf("mail %+v", m)
		}
		for _, want := range []string{"Subject: =?UTF-8?q?Fleet_r=C3=A9boot?=\r\n", "To: " + m.to + "\r\n",
			"From: \"Reboot Watch\" <rebootwatch+alerts@example.com>\r\n", "Content-Type: text/plain; charset=\"UTF-8\"\r\n",
			"\r\n\r\nrebootwatch: lock default/a turned ghost\r\n"} {
			if !strings.Contains(m.data, want) {
				t.Errorf("mail lacks %q:\n%s", want, m.data)
			}
		}
	}
}

// TestSMTPStartTLSAndLogin: STARTTLS when the server offers it, then AUTH
// LOGIN inside TLS; a refused recipient fails the send (the other one
// still gets its mail); requirestarttls with a server that does not offer
// it fails before any mail; implicit TLS (encryption=ImplicitTLS); HTML.
func TestSMTPStartTLSAndLogin(t *testing.T) {
	cert := testCert(t)
	s := newSMTPServer(t, cert, false)
	raw := "smtp://agent:p4ss@127.0.0.1:" + s.port() + "/?from=a@example.com&to=refused@example.com,b@example.com&auth=login&skiptlsverify=yes"
	err := smtpSend(t, raw, "hello")
	if err == nil || !strings.Contains(err.Error(), "recipient #1") || strings.Contains(err.Error(), "recipient #2") {
		t.Fatalf("error %v: want recipient #1 refused only", err)
	}
	<-s.done
	mails, cmds := s.sent()
	if len(mails) != 1 || mails[0].to != "b@example.com" || !mails[0].tls || mails[0].auth != "LOGIN agent|p4ss" {
		t.Fatalf("mails %+v, commands %q", mails, cmds)
	}

	plain := newSMTPServer(t, nil, false)
	err = smtpSend(t, "smtp://127.0.0.1:"+plain.port()+"/?from=a@example.com&to=b@example.com&requirestarttls=yes", "x")
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("requirestarttls without STARTTLS: %v", err)
	}
	<-plain.done
	if mails, _ := plain.sent(); len(mails) != 0 {
		t.Errorf("a mail went out without STARTTLS: %+v", mails)
	}

	implicit := newSMTPServer(t, cert, true)
	raw = "smtp://127.0.0.1:" + implicit.port() + "/?from=a@example.com&to=b@example.com&encryption=implicittls&skiptlsverify=yes&usehtml=yes"
	if err := smtpSend(t, raw, "a <b> & c"); err != nil {
		t.Fatal(err)
	}
	<-implicit.done
	mails, cmds = implicit.sent()
	if len(mails) != 1 || !mails[0].tls || mails[0].auth != "" || !strings.Contains(mails[0].data, "<pre>a &lt;b&gt; &amp; c</pre>") ||
		!strings.Contains(mails[0].data, "Content-Type: multipart/alternative; boundary=") {
		t.Fatalf("implicit TLS: mails %+v, commands %q", mails, cmds)
	}
	for _, c := range cmds {
		if c == "STARTTLS" {
			t.Error("STARTTLS inside implicit TLS")
		}
	}
}

// TestSMTPLoginRefusesCleartext: LOGIN never sends the password over an
// unencrypted connection to a host other than localhost. The server
// listens on 127.0.0.2, a loopback address that neither net/smtp nor we
// count as localhost.
func TestSMTPLoginRefusesCleartext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this host: %v", err)
	}
	_ = ln.Close()
	s := &smtpServer{t: t, done: make(chan struct{}, 10)}
	if s.ln, err = net.Listen("tcp", ln.Addr().String()); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = s.ln.Close() })
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			go s.session(c)
		}
	}()
	err = smtpSend(t, "smtp://agent:p4ss@127.0.0.2:"+s.port()+"/?from=a@example.com&to=b@example.com&auth=login", "x")
	if err == nil || !strings.Contains(err.Error(), "unencrypted") {
		t.Fatalf("error %v, want a refusal to authenticate in clear", err)
	}
	_, cmds := s.sent()
	for _, c := range cmds {
		if strings.HasPrefix(c, "AUTH") || strings.Contains(c, "p4ss") {
			t.Errorf("credentials sent in clear: %q", cmds)
		}
	}
}
