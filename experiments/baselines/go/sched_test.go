// Package baselines holds the Go twins of nugo's scheduler micro-benchmarks.
//
// Each benchmark here does the same work as the nugo benchmark of the same
// name in experiments/bench (see experiments/baselines/README.md for the
// mapping), so that scripts/pipeline/micro.py can compare the two side by side in one
// run on one machine. GOMAXPROCS is chosen with -test.cpu, which plays the
// role of nugo's procs:N argument. This file holds the scheduler benchmarks
// (goroutine creation, switching, fan-outs, skynet, fork-join fib,
// PingPongHog);
// sync_test.go holds those of channels, select, mutexes and timers.
//
// Only the standard library is used: the machines that run this have no
// module proxy.
package baselines

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
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

// The classic skynet benchmark: a tree of goroutines with skynetLeaves leaves
// and a fan-out of skynetFanOut at every level (1,111,111 goroutines in all),
// where each leaf sends its number and each inner goroutine sends the sum of
// its children's, so that the root receives 0 + 1 + ... + 999,999.
const (
	skynetLeaves   = 1_000_000
	skynetFanOut   = 10
	skynetChecksum = skynetLeaves * (skynetLeaves - 1) / 2 // 499,999,500,000
)

// skynet is the goroutine of the classic program, with its signature: num is
// the first leaf number of its subtree, size the number of leaves in it, div
// the fan-out. Children send on an unbuffered channel made by their parent.
func skynet(c chan int, num, size, div int) {
	if size == 1 {
		c <- num
		return
	}
	children := make(chan int)
	childSize := size / div
	for i := 0; i < div; i++ {
		go skynet(children, num+i*childSize, childSize, div)
	}
	sum := 0
	for i := 0; i < div; i++ {
		sum += <-children
	}
	c <- sum
}

// BenchmarkSkynet runs one whole skynet tree per op (ns/op is ns per run)
// and fails if the root's sum is not the checksum. Like BenchmarkFanOut100k
// it reports the process's peak RSS, and wants a process of its own for that
// figure (-test.bench '^BenchmarkSkynet$' with a single -test.cpu value).
func BenchmarkSkynet(b *testing.B) {
	for i := 0; i < b.N; i++ {
		root := make(chan int)
		go skynet(root, 0, skynetLeaves, skynetFanOut)
		if sum := <-root; sum != skynetChecksum {
			b.Fatalf("skynet sum %d, want %d", sum, skynetChecksum)
		}
	}
	b.ReportMetric(peakRSSMiB(b), "peak_rss_mib")
}

// fibN is the n of the fork-join fib, that of nugo's fib
// (experiments/workloads/forkjoin.hpp): fib(27) starts fib(28)-1 = 317,810
// goroutines, tens of milliseconds per run.
const fibN = 27

// fib is fork-join fib as a Go programmer writes it: fib(n-1) in a new
// goroutine, fib(n-2) in the caller, joined by a WaitGroup. There is no
// serial cutoff: what is measured is goroutine creation, parking and
// stealing, not arithmetic.
func fib(n int) int {
	if n < 2 {
		return n
	}
	var joined sync.WaitGroup
	var first int
	joined.Add(1)
	go func() {
		defer joined.Done()
		first = fib(n - 1)
	}()
	second := fib(n - 2)
	joined.Wait()
	return first + second
}

// fibSerial is the value fib is checked against.
func fibSerial(n int) int {
	a, b := 0, 1
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

// BenchmarkFib runs one fork-join fib(fibN) per op (ns/op is ns per run)
// and fails if the result is wrong.
func BenchmarkFib(b *testing.B) {
	want := fibSerial(fibN)
	for i := 0; i < b.N; i++ {
		if got := fib(fibN); got != want {
			b.Fatalf("fib(%d) = %d, want %d", fibN, got, want)
		}
	}
}

// BenchmarkPingPongHog is runtime/proc_test.go's benchmark of that name: on
// one P, a goroutine spinning on a non-blocking select (the hog) competes
// with two goroutines that pass a token back and forth b.N times over
// unbuffered channels. ns/op is ns per round trip (two channel hand-offs) and
// measures whether the ping-pong pair keeps getting the P while the hog
// holds it for whole time slices. It forces GOMAXPROCS to 1 itself, as Go's
// does; micro.py runs it with -test.cpu 1 only.
func BenchmarkPingPongHog(b *testing.B) {
	if b.N == 0 {
		return
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))

	stop, done := make(chan bool), make(chan bool)
	go func() { // the hog
		for {
			select {
			case <-stop:
				done <- true
				return
			default:
			}
		}
	}()

	ping, pong := make(chan bool), make(chan bool)
	go func() {
		for i := 0; i < b.N; i++ {
			pong <- <-ping
		}
		close(stop)
		done <- true
	}()
	go func() {
		for i := 0; i < b.N; i++ {
			ping <- <-pong
		}
		done <- true
	}()
	b.ResetTimer()
	ping <- true // serve
	<-stop
	b.StopTimer()
	<-ping // the last return, so that the second player can finish
	for i := 0; i < 3; i++ {
		<-done
	}
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

// processCPUTime is the user plus system CPU time of all the process's
// threads so far.
func processCPUTime(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
