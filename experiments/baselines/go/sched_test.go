// Package baselines holds the Go twins of nugo's scheduler micro-benchmarks.
//
// Each benchmark here does the same work as the nugo benchmark of the same
// name in experiments/bench (see experiments/baselines/README.md for the
// mapping), so that scripts/micro.py can compare the two side by side in one
// run on one machine. GOMAXPROCS is chosen with -test.cpu, which plays the
// role of nugo's procs:N argument.
//
// Only the standard library is used: the machines that run this have no
// module proxy.
package baselines

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// BenchmarkYieldPing measures one goroutine switch: two goroutines call
// runtime.Gosched in a loop, so with GOMAXPROCS=1 every Gosched hands the P
// to the other one. b.N is the total number of Gosched calls of both, so
// ns/op is ns per switch, the unit of nugo's yield_ping.
func BenchmarkYieldPing(b *testing.B) {
	var done sync.WaitGroup
	yieldLoop := func(count int) {
		defer done.Done()
		for i := 0; i < count; i++ {
			runtime.Gosched()
		}
	}
	done.Add(2)
	go yieldLoop(b.N / 2)
	go yieldLoop(b.N - b.N/2)
	done.Wait()
}

// BenchmarkCreateGoroutines is the algorithm of runtime/proc_test.go's
// benchmark of the same name with one chain: each goroutine starts the next
// one and exits, and the last one signals the benchmark goroutine. ns/op is
// ns per goroutine created, run and exited.
func BenchmarkCreateGoroutines(b *testing.B) {
	chainEnd := make(chan struct{})
	var link func(remaining int)
	link = func(remaining int) {
		if remaining == 0 {
			chainEnd <- struct{}{}
			return
		}
		go link(remaining - 1)
	}
	go link(b.N)
	<-chainEnd
}

// fanOutWidth is the number of goroutines of one fan-out, fixed by the name
// of nugo's fanout_100k.
const fanOutWidth = 100_000

// BenchmarkFanOut100k measures one whole fan-out per op: the benchmark
// goroutine starts fanOutWidth goroutines that each only mark themselves
// done, then waits for all of them. A WaitGroup is an atomic counter whose
// last decrement wakes the waiter, which is what nugo's twin does by hand.
//
// It also reports the process's peak RSS, which includes the testing
// package's own few MiB; run it alone in its process (-test.bench
// '^BenchmarkFanOut100k$' with a single -test.cpu value) for that figure to
// belong to this benchmark only.
func BenchmarkFanOut100k(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var pending sync.WaitGroup
		pending.Add(fanOutWidth)
		for g := 0; g < fanOutWidth; g++ {
			go pending.Done()
		}
		pending.Wait()
	}
	b.ReportMetric(peakRSSMiB(b), "peak_rss_mib")
}

// peakRSSMiB is the process's high-water resident set size. Linux reports
// ru_maxrss in KiB.
func peakRSSMiB(b *testing.B) float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return float64(usage.Maxrss) / 1024
}
