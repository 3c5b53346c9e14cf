package sources

// Strings makes strings of bytes, handing out the same string for the same
// bytes while it has room. A fleet's objects repeat most of their strings:
// nodes their conditions' types, reasons and messages, their OS image,
// kernel and role names; Longhorn volumes their namespace, state and node.
// A decoder that reads them through one Strings per list or watch stream
// makes the informer's cache (and the model, which shares its strings) hold
// each once per list or stream instead of once per object.
//
// It is bounded (maxStrings strings of at most maxStringLen bytes: at most
// 1 MiB of strings and the map over them), so a server sending endless
// distinct strings costs at most that beyond plain strings: the table holds
// its strings until the stream ends (a list when it is read, a watch at its
// timeout, minutes), after the objects stopped using them too. A nil
// *Strings makes each string its own. Not safe for concurrent use: one
// decoder owns it.
type Strings struct{ m map[string]string }

const (
	maxStrings   = 4096
	maxStringLen = 256
)

// Of returns b as a string, the one handed out before for the same bytes
// when there is one.
func (s *Strings) Of(b []byte) string {
	if s == nil || len(b) > maxStringLen {
		return string(b)
	}
	if v, ok := s.m[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.m) < maxStrings {
		if s.m == nil {
			s.m = make(map[string]string, 64)
		}
		s.m[v] = v
	}
	return v
}
