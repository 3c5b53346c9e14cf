package cli

import (
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"
)

// Every run sets up client-go's logging while informers of an earlier run
// may still log: that must not race (klog's global logger is set once, not
// on every run; run with -race), and -v must still show their lines while
// a quiet run shows none.
func TestClientGoLoggingIsSetRaceFree(t *testing.T) {
	quietClientGo(Env{Stderr: &syncBuffer{}}, false) // the first run, before any informer
	stop := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			klog.InfoS("an informer of an earlier run logs")
			if i == 0 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	<-started
	for i := range 200 {
		quietClientGo(Env{Stderr: &syncBuffer{}}, i%2 == 0)
	}
	close(stop)
	wg.Wait()

	verbose := &syncBuffer{}
	quietClientGo(Env{Stderr: verbose}, true)
	klog.InfoS("seen with -v", "node", "worker-1")
	if got := verbose.String(); !strings.Contains(got, "seen with -v") || !strings.Contains(got, "worker-1") {
		t.Fatalf("with -v client-go's line must reach stderr; got %q", got)
	}
	quiet := &syncBuffer{}
	quietClientGo(Env{Stderr: quiet}, false)
	klog.InfoS("not seen without -v")
	klog.FromContext(t.Context()).WithValues("a", 1).WithName("n").Info("nor this")
	if got := quiet.String() + verbose.String(); strings.Contains(got, "not seen") || strings.Contains(got, "nor this") {
		t.Fatalf("without -v client-go must print nothing; got %q", got)
	}
}

// Commands run in parallel in one process (the tests do): two runs setting
// client-go's logging at once must not race on klog's flag set (run with
// -race; a data race here failed a full `make test` once).
func TestClientGoLoggingFromParallelRuns(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				quietClientGo(Env{Stderr: &syncBuffer{}}, (g+i)%2 == 0)
			}
		})
	}
	wg.Wait()
	quiet := &syncBuffer{}
	quietClientGo(Env{Stderr: quiet}, false)
	klog.InfoS("not seen after the parallel runs")
	if got := quiet.String(); got != "" {
		t.Fatalf("a quiet run printed %q", got)
	}
}
