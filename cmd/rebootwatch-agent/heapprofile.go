//go:build heapprofile

// This file is only in a binary built with -tags heapprofile (the scale
// benchmark's agent case builds one when REBOOTWATCH_BENCH_PROFILE is set,
// issue 35): on SIGUSR1 the agent writes its in-use heap profile, after a
// GC, to the file REBOOTWATCH_HEAPPROFILE names (and the same as text with
// the runtime's MemStats, to that name with .txt added). With
// REBOOTWATCH_MEMPROFILERATE=N it samples one allocation every N bytes
// instead of the runtime's 512 KiB (from this init on: what the packages'
// own init allocated is sampled at the default), for a profile fine enough to
// compare two trees. Released agents have no such hook and no pprof endpoint.

package main

import (
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
)

func init() {
	path := os.Getenv("REBOOTWATCH_HEAPPROFILE")
	if path == "" {
		return
	}
	if n, err := strconv.Atoi(os.Getenv("REBOOTWATCH_MEMPROFILERATE")); err == nil && n > 0 {
		runtime.MemProfileRate = n
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
			runtime.GC()
			// The text first: the benchmark waits for path.
			writeProfile(path+".txt", 1)
			writeProfile(path, 0)
		}
	}()
}

// writeProfile writes the heap profile at the given debug level to path,
// through a temporary file so that path appears only when it is whole.
func writeProfile(path string, debug int) {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return
	}
	werr := pprof.Lookup("heap").WriteTo(f, debug)
	if cerr := f.Close(); werr == nil && cerr == nil {
		_ = os.Rename(tmp, path)
	}
}
