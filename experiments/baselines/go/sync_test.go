package baselines

// Go twins of nugo's benchmarks of channels, select, mutexes and timers.
// Where Go has a benchmark of its own (runtime/chan_test.go, sync/
// mutex_test.go) the twin runs the same algorithm, so that its ns/op means
// what Go's means; the timer benchmarks have no counterpart in Go's tree and
// are defined here (see experiments/baselines/README.md).

import (
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// callsPerChunk is the CallsPerSched of Go's channel benchmarks: their
// goroutines take b.N/callsPerChunk chunks of work from an atomic counter.
const callsPerChunk = 1000

// BenchmarkChanSync is Go's BenchmarkChanSync (benchmarkChanSync with no
// local work): two goroutines, whatever GOMAXPROCS is, exchange values over
// one unbuffered channel. Each takes chunks of callsPerChunk steps from a
// shared counter; in an even chunk a step is receive then send, in an odd
// one send then receive, and since the two goroutines take consecutive
// chunk numbers they always pair up. ns/op is ns per value passed through
// the channel (b.N values in all, rounded down to whole pairs of chunks).
func BenchmarkChanSync(b *testing.B) {
	const goroutines = 2
	chunks := int32(b.N / callsPerChunk / goroutines * goroutines)
	finished := make(chan bool, goroutines)
	exchange := make(chan int)
	for g := 0; g < goroutines; g++ {
		go func() {
			for {
				chunk := atomic.AddInt32(&chunks, -1)
				if chunk < 0 {
					break
				}
				for step := 0; step < callsPerChunk; step++ {
					if chunk%2 == 0 {
						<-exchange
						exchange <- 0
					} else {
						exchange <- 0
						<-exchange
					}
				}
			}
			finished <- true
		}()
	}
	for g := 0; g < goroutines; g++ {
		<-finished
	}
}

// benchmarkChanProdCons is Go's benchmarkChanProdCons with no local work:
// GOMAXPROCS producers and GOMAXPROCS consumers share one channel of
// capacity chanSize. Producers take chunks of callsPerChunk sends from a
// shared counter and, when it runs out, send one 0 each; a consumer stops at
// the first 0 it receives. ns/op is ns per value sent and received.
func benchmarkChanProdCons(b *testing.B, chanSize int) {
	procs := runtime.GOMAXPROCS(-1)
	chunks := int32(b.N / callsPerChunk)
	finished := make(chan bool, 2*procs)
	values := make(chan int, chanSize)
	for p := 0; p < procs; p++ {
		go func() { // producer
			for atomic.AddInt32(&chunks, -1) >= 0 {
				for i := 0; i < callsPerChunk; i++ {
					values <- 1
				}
			}
			values <- 0
			finished <- true
		}()
		go func() { // consumer
			for <-values != 0 {
			}
			finished <- true
		}()
	}
	for p := 0; p < 2*procs; p++ {
		<-finished
	}
}

func BenchmarkChanProdCons0(b *testing.B)   { benchmarkChanProdCons(b, 0) }
func BenchmarkChanProdCons100(b *testing.B) { benchmarkChanProdCons(b, 100) }

// BenchmarkSelectUncontended is Go's benchmark of that name: b.RunParallel
// starts GOMAXPROCS goroutines that share out b.N iterations; each has two
// private channels of capacity 1 and a token in the first, and per iteration
// selects on receiving from either, sending the token to the other one.
// ns/op is wall time per iteration (one select and one send), all goroutines
// together.
func BenchmarkSelectUncontended(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		first := make(chan int, 1)
		second := make(chan int, 1)
		first <- 0
		for pb.Next() {
			select {
			case <-first:
				second <- 0
			case <-second:
				first <- 0
			}
		}
	})
}

// BenchmarkSelectContended is Go's BenchmarkSelectContended, which Go's
// chan_test.go has called BenchmarkSelectAsyncContended since it gained a
// BenchmarkSelectSyncContended: the same loop as BenchmarkSelectUncontended,
// but all GOMAXPROCS goroutines share the two channels, of capacity
// GOMAXPROCS, and each puts one token in the first.
func BenchmarkSelectContended(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	first := make(chan int, procs)
	second := make(chan int, procs)
	b.RunParallel(func(pb *testing.PB) {
		first <- 0
		for pb.Next() {
			select {
			case <-first:
				second <- 0
			case <-second:
				first <- 0
			}
		}
	})
}

// BenchmarkMutexUncontended is sync's benchmark of that name: b.RunParallel
// goroutines (GOMAXPROCS of them) each lock and unlock a mutex of their own,
// padded so that no two share a cache line. ns/op is wall time per
// Lock+Unlock pair, all goroutines together.
func BenchmarkMutexUncontended(b *testing.B) {
	type paddedMutex struct {
		sync.Mutex
		_ [128]uint8
	}
	b.RunParallel(func(pb *testing.PB) {
		var mu paddedMutex
		for pb.Next() {
			mu.Lock()
			mu.Unlock()
		}
	})
}

// BenchmarkMutexContended is sync's BenchmarkMutex (benchmarkMutex without
// slack or work): the same, but all GOMAXPROCS goroutines share one mutex.
func BenchmarkMutexContended(b *testing.B) {
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			mu.Unlock()
		}
	})
}

// BenchmarkTimerChurn keeps timerChurnGoroutines goroutines sleeping
// timerChurnSleep again and again, and measures how fast the runtime's
// timers and scheduler complete sleeps once that churn is in its steady
// state. One op is timerChurnWindow of that steady state:
//
//  1. start timerChurnGoroutines goroutines, each of which signals that it
//     is running and blocks on a gate (a WaitGroup of count 1), then, once
//     the gate opens, loops: stop if told to, else time.Sleep
//     (timerChurnSleep) and add 1 to a shared count of completed sleeps;
//  2. once all of them wait at the gate, open it (untimed so far);
//  3. warm-up: when the count reaches timerChurnGoroutines (one sleep per
//     goroutine on average), the goroutine that made it so wakes the
//     benchmark goroutine, which starts the clock (b.ResetTimer) and notes
//     the time, the count and the process's CPU time;
//  4. the benchmark goroutine sleeps b.N x timerChurnWindow, then notes the
//     time, the count and the CPU time again and stops the clock;
//  5. untimed: tell the goroutines to stop and wait until all have exited.
//
// An op thus lasts about timerChurnWindow (ns/op is about 1e9), and Go's
// harness, seeing its first call (b.N = 1) last as long as any
// -test.benchtime up to 1 s, stops there: one window per run. The results are metrics over the window of steps 3-4: ns_per_sleep,
// its wall time over the sleeps completed in it, and cpu_cores, the
// process's CPU time (user + system, all threads) over its wall time: how
// many cores the runtime kept busy doing it. Starting the goroutines, the
// first wave of wake-ups from the gate and the drain at the end are outside
// the window, and the window is long enough (several sleeps of every
// goroutine even in a runtime that cannot keep up) to smooth over the waves
// in which they wake.
func BenchmarkTimerChurn(b *testing.B) {
	const (
		timerChurnGoroutines = 100_000
		timerChurnSleep      = time.Millisecond
		timerChurnWindow     = time.Second
	)
	var completed int64
	var stop int32
	warmedUp := make(chan struct{})
	var running, gate, exited sync.WaitGroup
	running.Add(timerChurnGoroutines)
	gate.Add(1)
	exited.Add(timerChurnGoroutines)
	for g := 0; g < timerChurnGoroutines; g++ {
		go func() {
			defer exited.Done()
			running.Done()
			gate.Wait()
			for atomic.LoadInt32(&stop) == 0 {
				time.Sleep(timerChurnSleep)
				if atomic.AddInt64(&completed, 1) == timerChurnGoroutines {
					close(warmedUp)
				}
			}
		}()
	}
	running.Wait()
	gate.Done()
	<-warmedUp
	b.ResetTimer()
	wallStart, sleepsStart, cpuStart := time.Now(), atomic.LoadInt64(&completed), processCPUTime(b)
	time.Sleep(time.Duration(b.N) * timerChurnWindow)
	wall := time.Since(wallStart)
	sleeps, cpu := atomic.LoadInt64(&completed)-sleepsStart, processCPUTime(b)-cpuStart
	b.StopTimer()
	atomic.StoreInt32(&stop, 1)
	exited.Wait()
	b.ReportMetric(float64(wall.Nanoseconds())/float64(sleeps), "ns_per_sleep")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu_cores")
}

// BenchmarkTimerWake measures how late sleeping goroutines wake, and what
// sleeping costs in CPU. One op is one round:
//
//  1. start timerWakeGoroutines goroutines, each of which signals that it is
//     running and then blocks on a gate (a WaitGroup of count 1);
//  2. once all of them wait at the gate, note the wall clock and the
//     process's CPU time, and open the gate;
//  3. each goroutine then takes deadline = now + timerWakeSleep, calls
//     time.Sleep(timerWakeSleep), and records its wake delay, the monotonic
//     clock on return from the sleep minus deadline;
//  4. once the last goroutine has recorded its delay, note both clocks again.
//
// ns/op is the wall time of the whole round (1 to 4). Reported metrics, over
// all rounds of the run: p50_us and p99_us, the nearest-rank 50th and 99th
// percentiles of all goroutines' wake delays in microseconds; cpu_cores, the
// process's CPU time (user + system) over the wall time of steps 2-4 summed
// over rounds. The target is p99 <= 2 ms with cpu_cores <= 1 at
// GOMAXPROCS 2; micro.py runs it with -test.cpu 2 only, in a process of its
// own.
func BenchmarkTimerWake(b *testing.B) {
	const (
		timerWakeGoroutines = 100_000
		timerWakeSleep      = 10 * time.Millisecond
	)
	delays := make([]time.Duration, 0, b.N*timerWakeGoroutines)
	roundDelays := make([]time.Duration, timerWakeGoroutines)
	var sleepWall, sleepCPU time.Duration
	for round := 0; round < b.N; round++ {
		var running, gate, woken sync.WaitGroup
		running.Add(timerWakeGoroutines)
		gate.Add(1)
		woken.Add(timerWakeGoroutines)
		for g := range roundDelays {
			go func(delay *time.Duration) {
				running.Done()
				gate.Wait()
				deadline := time.Now().Add(timerWakeSleep)
				time.Sleep(timerWakeSleep)
				*delay = time.Since(deadline)
				woken.Done()
			}(&roundDelays[g])
		}
		running.Wait()
		wallStart, cpuStart := time.Now(), processCPUTime(b)
		gate.Done()
		woken.Wait()
		sleepWall += time.Since(wallStart)
		sleepCPU += processCPUTime(b) - cpuStart
		delays = append(delays, roundDelays...)
	}
	b.StopTimer()
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	b.ReportMetric(nearestRankMicros(delays, 0.50), "p50_us")
	b.ReportMetric(nearestRankMicros(delays, 0.99), "p99_us")
	b.ReportMetric(sleepCPU.Seconds()/sleepWall.Seconds(), "cpu_cores")
}

// nearestRankMicros is the q-th quantile of sorted by the nearest-rank
// method (the smallest value with at least q of the values at or below it),
// in microseconds.
func nearestRankMicros(sorted []time.Duration, q float64) float64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return float64(sorted[rank-1]) / float64(time.Microsecond)
}
