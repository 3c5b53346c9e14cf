package live

import (
	"testing"
	"time"
)

// A source whose goroutine does not end (client-go's reflector asleep
// between retries of a refused watch) must not keep a command that is
// exiting: CloseWithin gives up after its bound and says so, and a later
// Close still joins it once it ends.
func TestCloseWithinDoesNotWaitForAStuckSource(t *testing.T) {
	stuck := make(chan struct{})
	cancelled := make(chan struct{})
	s := &Session{
		cancel: func() { close(cancelled) },
		joins:  []func(){func() { <-stuck }},
	}
	if s.CloseWithin(10 * time.Millisecond) {
		t.Fatal("CloseWithin reported a source joined that had not ended")
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("CloseWithin did not cancel the sources")
	}
	close(stuck)
	if !s.CloseWithin(time.Minute) {
		t.Fatal("the source ended, but CloseWithin did not join it")
	}
}

func TestCloseWithinJoinsEndedSources(t *testing.T) {
	joined := false
	s := &Session{cancel: func() {}, joins: []func(){func() { joined = true }}}
	if !s.CloseWithin(time.Minute) || !joined {
		t.Fatalf("CloseWithin = false or not joined (joined %v)", joined)
	}
}
