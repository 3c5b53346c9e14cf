package longhorn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/rebootwatch/rebootwatch/sources"
)

// This file is the one-pass JSON reader behind decode.go. A Longhorn
// volume is about 3.5 KB of JSON of which the model reads six short fields:
// encoding/json's Decoder reads each item twice (once to find its end, once
// to decode it) and walks every skipped field through its state machine,
// which would be much of a --snapshot's CPU at scale (docs/performance.md).
// This reader looks
// at each byte once, keeps only the fields asked for, and still checks the
// whole document's syntax, so a cut or garbled response is an error, never
// a shorter list.

// maxDepth bounds nesting (encoding/json's limit is 10,000 too).
const maxDepth = 10000

// scanner reads JSON tokens from a stream through a reusable window.
type scanner struct {
	r   io.Reader
	buf []byte
	pos int
	end int
	err error // the reader's error, once it returned one
	off int64 // bytes consumed before buf[0], for messages
	// str holds a string that crossed a window boundary or had escapes;
	// key2 a key kept across a refill.
	str, key2 []byte
	// strs shares the strings volumes repeat (sharedString), for the
	// scanner's life: one list or one watch stream.
	strs sources.Strings
}

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, 64<<10)}
}

var errSyntax = errors.New("invalid JSON")

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %w", s.off+int64(s.pos), fmt.Errorf(format, args...))
}

// fill reads more input, keeping nothing of what was consumed. It returns
// false at the end of the input (or on a read error, kept in s.err).
func (s *scanner) fill() bool {
	if s.err != nil {
		return false
	}
	if s.pos > 0 {
		s.off += int64(s.pos)
		s.end = copy(s.buf, s.buf[s.pos:s.end])
		s.pos = 0
	}
	for s.end < len(s.buf) {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	return true
}

// eof is the error for input that ended early.
func (s *scanner) eof() error {
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		return s.err
	}
	return s.errorf("unexpected end of JSON input: %w", io.ErrUnexpectedEOF)
}

// next skips whitespace and returns the next byte without consuming it.
func (s *scanner) next() (byte, error) {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
				return c, nil
			}
			s.pos++
		}
		if !s.fill() {
			return 0, s.eof()
		}
	}
}

// readByte consumes one byte.
func (s *scanner) readByte() (byte, error) {
	if s.pos >= s.end && !s.fill() {
		return 0, s.eof()
	}
	c := s.buf[s.pos]
	s.pos++
	return c, nil
}

// atEnd reports whether only whitespace is left.
func (s *scanner) atEnd() (bool, error) {
	_, err := s.next()
	if err == nil {
		return false, nil
	}
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		return false, s.err
	}
	return true, nil
}

// expect consumes c (after whitespace).
func (s *scanner) expect(c byte) error {
	got, err := s.next()
	if err != nil {
		return err
	}
	if got != c {
		return s.errorf("%w: want %q, got %q", errSyntax, c, got)
	}
	s.pos++
	return nil
}

// objectStart consumes '{' and reports whether the object is empty (then
// its '}' is consumed too).
func (s *scanner) objectStart() (empty bool, err error) {
	if err := s.expect('{'); err != nil {
		return false, err
	}
	c, err := s.next()
	if err != nil {
		return false, err
	}
	if c == '}' {
		s.pos++
		return true, nil
	}
	return false, nil
}

// key reads an object key and its colon. The bytes are valid until the
// next read.
func (s *scanner) key() ([]byte, error) {
	k, err := s.stringBytes()
	if err != nil {
		return nil, err
	}
	if s.pos >= s.end || s.buf[s.pos] != ':' {
		// Whitespace, or the window's end, before the colon: a refill
		// would move the key if it is a slice of the window.
		s.key2 = append(s.key2[:0], k...)
		k = s.key2
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		return k, nil
	}
	s.pos++
	return k, nil
}

// more consumes the ',' between members or elements and reports whether
// another follows; at end it consumes end and returns false.
func (s *scanner) more(end byte) (bool, error) {
	c, err := s.next()
	if err != nil {
		return false, err
	}
	switch c {
	case ',':
		s.pos++
		return true, nil
	case end:
		s.pos++
		return false, nil
	}
	return false, s.errorf("%w: want ',' or %q, got %q", errSyntax, end, c)
}

// stringBytes reads a JSON string and returns its decoded bytes, valid until
// the next read (they may be a slice of the window).
func (s *scanner) stringBytes() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.pos
	for i := s.pos; i < s.end; i++ {
		switch c := s.buf[i]; {
		case c == '"':
			s.pos = i + 1
			return s.buf[start:i], nil
		case c == '\\' || c < 0x20 || c >= 0x80:
			// Escapes, control characters and non-ASCII (whose invalid
			// UTF-8 encoding/json turns into U+FFFD) take the slow path.
			return s.slowString(start)
		}
	}
	return s.slowString(start)
}

// slowString reads the string whose content starts at s.buf[start] (after
// its opening quote) when it has escapes or crosses the window: it gathers
// the raw string, quotes included, and unquotes it as encoding/json does.
func (s *scanner) slowString(start int) ([]byte, error) {
	raw := append(s.str[:0], '"')
	s.pos = start
	escaped := false
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			s.pos++
			raw = append(raw, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				s.str = raw
				var out string
				if err := json.Unmarshal(raw, &out); err != nil {
					return nil, s.errorf("%w: string: %v", errSyntax, err)
				}
				return append(s.str[:0], out...), nil
			case c < 0x20:
				return nil, s.errorf("%w: control character in string", errSyntax)
			}
		}
		if !s.fill() {
			s.str = raw
			return nil, s.eof()
		}
	}
}

// special marks the bytes a string's scan stops at.
var special = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// skipString skips a JSON string without keeping it.
func (s *scanner) skipString() error {
	if err := s.expect('"'); err != nil {
		return err
	}
	for {
		buf := s.buf[s.pos:s.end]
		i := 0
		for i < len(buf) && !special[buf[i]] {
			i++
		}
		s.pos += i
		if i == len(buf) {
			if !s.fill() {
				return s.eof()
			}
			continue
		}
		s.pos++
		switch buf[i] {
		case '"':
			return nil
		case '\\':
			var esc escape
			esc.start()
			for esc.active() {
				c, err := s.readByte()
				if err != nil {
					return err
				}
				if !esc.next(c) {
					return s.errorf("%w: bad escape in string", errSyntax)
				}
			}
		default:
			return s.errorf("%w: control character in string", errSyntax)
		}
	}
}

// escape follows a backslash escape through a string: \", \\, \/, \b,
// \f, \n, \r, \t or \u and four hex digits.
type escape struct{ left int8 }

func (e *escape) active() bool { return e.left != 0 }
func (e *escape) start()       { e.left = -1 }

// next takes the escape's next byte and reports whether it is valid.
func (e *escape) next(c byte) bool {
	if e.left < 0 {
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			e.left = 0
		case 'u':
			e.left = 4
		default:
			return false
		}
		return true
	}
	e.left--
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// literal reads a number, true, false or null and returns its bytes (valid
// until the next read).
func (s *scanner) literal() ([]byte, error) {
	if _, err := s.next(); err != nil {
		return nil, err
	}
	var lit []byte
	for {
		i := s.pos
		for i < s.end && isLiteralByte(s.buf[i]) {
			i++
		}
		if i < s.end {
			lit = s.buf[s.pos:i]
			break
		}
		// The literal reaches the window's end: refill (which moves the
		// window's rest to its start) and scan again.
		if s.pos == 0 && s.end == len(s.buf) {
			return nil, s.errorf("%w: literal too long", errSyntax)
		}
		if !s.fill() {
			lit = s.buf[s.pos:s.end]
			break
		}
	}
	if !validLiteral(lit) {
		return nil, s.errorf("%w: bad literal %q", errSyntax, lit)
	}
	s.pos += len(lit)
	return lit, nil
}

func isLiteralByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

func validLiteral(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	case "":
		return false
	}
	return validNumber(b) && inFloatRange(b)
}

// inFloatRange reports whether a valid number fits a float64, as
// encoding/json requires of any number (1e400 makes the whole document an
// error there). Only an exponent or more than 308 digits can overflow.
func inFloatRange(b []byte) bool {
	if len(b) <= 308 && !bytes.ContainsAny(b, "eE") {
		return true
	}
	_, err := strconv.ParseFloat(string(b), 64)
	return err == nil
}

// validNumber checks JSON's number grammar.
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(b)
}

// skip skips one value of any kind, checking its syntax.
func (s *scanner) skip() error { return s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) error {
	if depth > maxDepth {
		return s.errorf("%w: nested too deeply", errSyntax)
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		return s.skipString()
	case '{':
		empty, err := s.objectStart()
		if err != nil || empty {
			return err
		}
		for {
			if err := s.skipString(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skipDepth(depth + 1); err != nil {
				return err
			}
			more, err := s.more('}')
			if err != nil || !more {
				return err
			}
		}
	case '[':
		s.pos++
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == ']' {
			s.pos++
			return nil
		}
		for {
			if err := s.skipDepth(depth + 1); err != nil {
				return err
			}
			more, err := s.more(']')
			if err != nil || !more {
				return err
			}
		}
	}
	_, err = s.literal()
	return err
}

// lenientString reads any value: a string's content, "" for anything else
// (as unstructured.NestedString reads a field of another type).
func (s *scanner) lenientString() (string, error) {
	b, err := s.lenientStringBytes()
	return string(b), err
}

// sharedString reads as lenientString does, for a value many volumes
// repeat (their namespace, state, node): the same string for the same
// bytes, through the scanner's table.
func (s *scanner) sharedString() (string, error) {
	b, err := s.lenientStringBytes()
	return s.strs.Of(b), err
}

// lenientStringBytes reads any value: a string's decoded bytes (valid until
// the next read), none for anything else.
func (s *scanner) lenientStringBytes() ([]byte, error) {
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	if c != '"' {
		return nil, s.skip()
	}
	return s.stringBytes()
}

// lenientInt reads any value: a number truncated to an int, 0 for anything
// else.
func (s *scanner) lenientInt() (int, error) {
	c, err := s.next()
	if err != nil {
		return 0, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.skip()
	}
	lit, err := s.literal()
	if err != nil {
		return 0, err
	}
	if v, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
		return int(v), nil
	}
	if f, err := strconv.ParseFloat(string(lit), 64); err == nil {
		return int(int64(f)), nil
	}
	return 0, nil
}

// fields reads an object, calling field for each member; field must consume
// the member's value. Anything but an object (null, say) is skipped and
// reads as an empty object.
func (s *scanner) fields(field func(key []byte) error) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.skip()
	}
	empty, err := s.objectStart()
	if err != nil || empty {
		return err
	}
	for {
		k, err := s.key()
		if err != nil {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
		more, err := s.more('}')
		if err != nil || !more {
			return err
		}
	}
}
