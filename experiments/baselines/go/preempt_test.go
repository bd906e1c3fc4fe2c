package baselines

// The Go twins of experiments/bench/preempt_bench.cpp (scripts/pipeline/preempt.py runs both). Go's
// time slice is fixed at 10 ms (forcePreemptNS), so only the 10 ms rows have a twin.

import (
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

//go:noinline
func spinUntil(stop *uint32) {
	for atomic.LoadUint32(stop) == 0 {
	}
}

func nearestRank(v []float64, q float64) float64 {
	sort.Float64s(v)
	r := int(math.Ceil(q * float64(len(v))))
	if r < 1 {
		r = 1
	}
	return v[r-1]
}

// BenchmarkPreemptLatency: on one P, a call-free spinning hog and a goroutine sleeping 100 us
// in a loop; p50_us/p99_us of how late each sleep returns (100 samples per op).
func BenchmarkPreemptLatency(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var late []float64
	for i := 0; i < b.N; i++ {
		var stop uint32
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { spinUntil(&stop); wg.Done() }()
		runtime.Gosched()
		for s := 0; s < 100; s++ {
			t0 := time.Now()
			time.Sleep(100 * time.Microsecond)
			late = append(late, float64(time.Since(t0)-100*time.Microsecond)/1e3)
		}
		atomic.StoreUint32(&stop, 1)
		wg.Wait()
	}
	b.ReportMetric(nearestRank(late, 0.50), "p50_us")
	b.ReportMetric(nearestRank(late, 0.99), "p99_us")
}

//go:noinline
func compute(iters uint64) uint64 {
	x := uint64(88172645463325252)
	for i := uint64(0); i < iters; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var computeSink uint64

// threadCPUNs: on-CPU nanoseconds of each thread of this process, from
// /proc/self/task/*/schedstat (the same source as nugo-preempt-bench's).
func threadCPUNs() map[int]float64 {
	out := map[int]float64{}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			continue
		}
		tid, err1 := strconv.Atoi(t.Name())
		ns, err2 := strconv.ParseFloat(fields[0], 64)
		if err1 == nil && err2 == nil {
			out[tid] = ns
		}
	}
	return out
}

// othersCPUNs: the CPU time between two snapshots of every thread but the busiest (the one
// that ran the loop); a thread born in between counts from zero.
func othersCPUNs(before, after map[int]float64) float64 {
	total, busiest := 0.0, 0.0
	for tid, ns := range after {
		d := ns - before[tid]
		total += d
		busiest = math.Max(busiest, d)
	}
	return total - busiest
}

// BenchmarkPreemptOverhead: one P, ns per iteration of the xorshift loop, preempted every
// 10 ms (run it with GODEBUG=asyncpreemptoff=1 for the other side). other_cores: the CPU
// time of every thread but the loop's (sysmon, mostly) over the wall time.
func BenchmarkPreemptOverhead(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const iters = 200_000_000
	cpu0 := threadCPUNs()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		computeSink = compute(iters)
	}
	wall := float64(time.Since(t0).Nanoseconds())
	b.ReportMetric(wall/float64(b.N*iters), "ns_per_iter")
	b.ReportMetric(othersCPUNs(cpu0, threadCPUNs())/wall, "other_cores")
}

// BenchmarkSyscallGetpid: getpid through syscall.Syscall (entersyscall/exitsyscall).
func BenchmarkSyscallGetpid(b *testing.B) {
	for i := 0; i < b.N; i++ {
		syscall.Syscall(syscall.SYS_GETPID, 0, 0, 0)
	}
}

// BenchmarkRawGetpid: getpid through syscall.RawSyscall (the runtime is not told).
func BenchmarkRawGetpid(b *testing.B) {
	for i := 0; i < b.N; i++ {
		syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
	}
}

func threadsInProcess() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "Threads:") {
			n, _ := strconv.Atoi(strings.TrimSpace(line[8:]))
			return float64(n)
		}
	}
	return -1
}

// BenchmarkSyscallStorm: 400 goroutines each in a 1 s nanosleep syscall at once (run with
// -test.cpu 2); threads_peak while they sleep, threads_after 2 s after they return.
func BenchmarkSyscallStorm(b *testing.B) {
	var peak, after float64
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		wg.Add(400)
		for g := 0; g < 400; g++ {
			go func() {
				ts := syscall.Timespec{Sec: 1}
				syscall.Nanosleep(&ts, nil)
				wg.Done()
			}()
		}
		time.Sleep(500 * time.Millisecond)
		peak = threadsInProcess()
		wg.Wait()
		time.Sleep(2 * time.Second)
		after = threadsInProcess()
	}
	b.ReportMetric(peak, "threads_peak")
	b.ReportMetric(after, "threads_after")
}
