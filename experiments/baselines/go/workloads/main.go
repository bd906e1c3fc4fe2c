// go-workload: the Go 1.19 twin of nugo-workload (experiments/workloads/). The same
// workloads, sizes and checks, written the way a Go programmer writes them, and the same
// one-line JSON report, so that the experiment pipeline compares like with like.
//
//	go-workload fib -size small
//	GOMAXPROCS=4 go-workload triad
//
// Exit status 0 if the result is right, 1 if it is not, 2 for a bad command line. Go has no
// NUMA placement: the memory-bound workloads keep one array, split among GOMAXPROCS
// goroutines, as nugo-workload does on a one-node machine. "seconds" is the kernel only, as
// nugo-workload's: not the input's set-up, nor the check.
package main

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

type outcome struct {
	ok      bool
	seconds float64
	work    float64
	unit    string
	result  string
}

// timed runs f and returns how long it took.
func timed(f func()) float64 {
	start := time.Now()
	f()
	return time.Since(start).Seconds()
}

func checked(got, want int64) string {
	op := " == "
	if got != want {
		op = " != "
	}
	return strconv.FormatInt(got, 10) + op + strconv.FormatInt(want, 10)
}

// ---- fork-join ----

func fib(n int) int64 {
	if n < 2 {
		return int64(n)
	}
	var first int64
	var joined sync.WaitGroup
	joined.Add(1)
	go func() {
		first = fib(n - 1)
		joined.Done()
	}()
	second := fib(n - 2)
	joined.Wait()
	return first + second
}

func fibSerial(n int) int64 {
	a, b := int64(0), int64(1)
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

func skynet(c chan<- int64, num, size, div int64) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int64)
	for i := int64(0); i < div; i++ {
		go skynet(rc, num+i*(size/div), size/div, div)
	}
	var sum int64
	for i := int64(0); i < div; i++ {
		sum += <-rc
	}
	c <- sum
}

type utsTree struct {
	depth int
	b0    float64
	seed  uint32
	nodes int64
}

// sha1Short is the SHA-1 of a message of at most 55 bytes (one block), written out as
// nugo-workload's is, so that both twins spend the same work per node: crypto/sha1 is
// assembly. checkSha1 compares it with crypto/sha1 at start.
func sha1Short(msg []byte) [20]byte {
	var block [64]byte
	copy(block[:], msg)
	block[len(msg)] = 0x80
	binary.BigEndian.PutUint64(block[56:], uint64(len(msg))*8)
	var w [80]uint32
	for i := 0; i < 16; i++ {
		w[i] = binary.BigEndian.Uint32(block[4*i:])
	}
	for i := 16; i < 80; i++ {
		x := w[i-3] ^ w[i-8] ^ w[i-14] ^ w[i-16]
		w[i] = x<<1 | x>>31
	}
	h := [5]uint32{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0}
	a, b, c, d, e := h[0], h[1], h[2], h[3], h[4]
	for i := 0; i < 80; i++ {
		var f, k uint32
		switch {
		case i < 20:
			f, k = (b&c)|(^b&d), 0x5A827999
		case i < 40:
			f, k = b^c^d, 0x6ED9EBA1
		case i < 60:
			f, k = (b&c)|(b&d)|(c&d), 0x8F1BBCDC
		default:
			f, k = b^c^d, 0xCA62C1D6
		}
		t := (a<<5 | a>>27) + f + e + k + w[i]
		e, d, c, b, a = d, c, b<<30|b>>2, a, t
	}
	h[0] += a
	h[1] += b
	h[2] += c
	h[3] += d
	h[4] += e
	var out [20]byte
	for i := 0; i < 5; i++ {
		binary.BigEndian.PutUint32(out[4*i:], h[i])
	}
	return out
}

func checkSha1() {
	for _, msg := range []string{"", "abc", "a 24-byte message, or so"} {
		if sha1Short([]byte(msg)) != sha1.Sum([]byte(msg)) {
			fmt.Fprintln(os.Stderr, "go-workload: the hand-written SHA-1 disagrees with crypto/sha1")
			os.Exit(1)
		}
	}
}

func utsRoot(seed uint32) [20]byte {
	var s [20]byte
	binary.BigEndian.PutUint32(s[16:], seed)
	return sha1Short(s[:])
}

func utsChild(parent [20]byte, index uint32) [20]byte {
	var msg [24]byte
	copy(msg[:20], parent[:])
	binary.BigEndian.PutUint32(msg[20:], index)
	return sha1Short(msg[:])
}

func utsChildren(s [20]byte, depth int, t utsTree) int {
	if depth >= t.depth {
		return 0
	}
	r := binary.BigEndian.Uint32(s[16:]) & 0x7fffffff
	h := float64(r) / 2147483648.0
	p := 1.0 / (1.0 + t.b0)
	return int(math.Floor(math.Log(1-h) / math.Log(1-p)))
}

func utsCount(s [20]byte, depth int, t utsTree) int64 {
	n := utsChildren(s, depth, t)
	if n == 0 {
		return 1
	}
	sub := make([]int64, n)
	var joined sync.WaitGroup
	joined.Add(n)
	for i := 0; i < n; i++ {
		go func(i int) {
			sub[i] = utsCount(utsChild(s, uint32(i)), depth+1, t)
			joined.Done()
		}(i)
	}
	joined.Wait()
	total := int64(1)
	for _, c := range sub {
		total += c
	}
	return total
}

var queensSolutions = []int64{1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512}

func queensSerial(n, row int, cols, diag, anti uint32) int64 {
	if row == n {
		return 1
	}
	var found int64
	free := ^(cols | diag | anti) & (1<<uint(n) - 1)
	for free != 0 {
		bit := free & -free
		free ^= bit
		found += queensSerial(n, row+1, cols|bit, (diag|bit)<<1, (anti|bit)>>1)
	}
	return found
}

func queens(n, row int, cols, diag, anti uint32, spawnRows int) int64 {
	if row >= spawnRows {
		return queensSerial(n, row, cols, diag, anti)
	}
	var bits []uint32
	for free := ^(cols | diag | anti) & (1<<uint(n) - 1); free != 0; free &= free - 1 {
		bits = append(bits, free&-free)
	}
	sub := make([]int64, len(bits))
	var joined sync.WaitGroup
	joined.Add(len(bits))
	for i, bit := range bits {
		go func(i int, bit uint32) {
			sub[i] = queens(n, row+1, cols|bit, (diag|bit)<<1, (anti|bit)>>1, spawnRows)
			joined.Done()
		}(i, bit)
	}
	joined.Wait()
	var total int64
	for _, s := range sub {
		total += s
	}
	return total
}

// The same hand-written merge sort as nugo-workload's, serial below 4,096 elements and
// insertion sort below 32: the schedulers are compared, not sort libraries.
const serialBelow = 4096
const insertionBelow = 32

func merge(v, tmp []uint64, mid int) {
	i, j, k := 0, mid, 0
	for i < mid && j < len(v) {
		if v[j] < v[i] {
			tmp[k] = v[j]
			j++
		} else {
			tmp[k] = v[i]
			i++
		}
		k++
	}
	k += copy(tmp[k:], v[i:mid])
	copy(tmp[k:], v[j:])
	copy(v, tmp[:len(v)])
}

func serialSort(v, tmp []uint64) {
	if len(v) <= insertionBelow {
		for i := 1; i < len(v); i++ {
			for j := i; j > 0 && v[j] < v[j-1]; j-- {
				v[j], v[j-1] = v[j-1], v[j]
			}
		}
		return
	}
	mid := len(v) / 2
	serialSort(v[:mid], tmp[:mid])
	serialSort(v[mid:], tmp[mid:])
	merge(v, tmp, mid)
}

func mergeSort(v, tmp []uint64) {
	if len(v) <= serialBelow {
		serialSort(v, tmp)
		return
	}
	mid := len(v) / 2
	var joined sync.WaitGroup
	joined.Add(1)
	go func() {
		mergeSort(v[:mid], tmp[:mid])
		joined.Done()
	}()
	mergeSort(v[mid:], tmp[mid:])
	joined.Wait()
	merge(v, tmp, mid)
}

func sortInput(n int) []uint64 {
	v := make([]uint64, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = x
	}
	return v
}

// ---- memory-bound (one part: Go places nothing) ----

func split(n, parts, i int) (int, int) { return n * i / parts, n * (i + 1) / parts }

// The process's part of a data-parallel kernel (-part K/N): part K of N, the elements
// split(total, N, K) by their global index, so that N processes, one per NUMA node under
// numactl (the way Go users run on NUMA machines today, golang/go#47831), do the whole kernel
// between them. The default, 0/1, is all of it.
var part = struct{ k, n int }{0, 1}

// ready is called once the kernel's data is set up, just before its timed region: with
// -barrier it says "ready" on stdout and waits for a line on stdin, so that the driver of the
// N processes (scripts/pipeline/sweep.py, mode go_numactl) can start their kernels together.
var ready = func() {}

func barrier() {
	fmt.Println("ready")
	var line string
	if _, err := fmt.Scanln(&line); err != nil { // the driver is gone: run nothing on our own
		fmt.Fprintf(os.Stderr, "go-workload: -barrier: no word on stdin (%v)\n", err)
		os.Exit(2)
	}
}

// myPart is this process's part [first, last) of total elements, the first part weighing
// `heavy` times the others (the skewed triad: three times the data on the first node).
func myPart(total, heavy int) (int, int) {
	weight := heavy + part.n - 1
	before := 0
	if part.k > 0 {
		before = heavy + part.k - 1
	}
	mine := 1
	if part.k == 0 {
		mine = heavy
	}
	return total * before / weight, total * (before + mine) / weight
}

func parallel(parts, n int, f func(lo, hi int)) {
	var joined sync.WaitGroup
	joined.Add(parts)
	for j := 0; j < parts; j++ {
		go func(j int) {
			lo, hi := split(n, parts, j)
			f(lo, hi)
			joined.Done()
		}(j)
	}
	joined.Wait()
}

func triad(total, passes, parts, heavy int) outcome {
	const s = 3.0
	first, last := myPart(total, heavy)
	n := last - first
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	parallel(parts, n, func(lo, hi int) { // first touch by the workers, as nugo's
		for i := lo; i < hi; i++ {
			a[i] = 0
			b[i] = float64((first + i) % 1000)
			c[i] = 2.0
		}
	})
	ready()
	seconds := timed(func() {
		for p := 0; p < passes; p++ {
			parallel(parts, n, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					a[i] = b[i] + s*c[i]
				}
			})
		}
	})
	ok := true
	for i := range a {
		ok = ok && a[i] == float64((first+i)%1000)+s*2.0
	}
	return outcome{ok, seconds, 3 * 8 * float64(n) * float64(passes), "bytes",
		okText(ok, "every a[i] == b[i] + 3 c[i]", "WRONG values")}
}

func stencilInitial(n, r, c int) float64 {
	if r == 0 {
		if c > 0 && c+1 < n {
			return 100
		}
		return 0
	}
	if r+1 == n || c == 0 || c+1 == n {
		return 0
	}
	m := c
	if n-1-c < m {
		m = n - 1 - c
	}
	return float64((r*131 + m*71) % 101)
}

func stencil(n, sweeps, blocks int) outcome {
	g, o := make([]float64, n*n), make([]float64, n*n)
	parallel(blocks, n, func(lo, hi int) { // first touch by the workers, as nugo's
		for r := lo; r < hi; r++ {
			for c := 0; c < n; c++ {
				g[r*n+c], o[r*n+c] = stencilInitial(n, r, c), stencilInitial(n, r, c)
			}
		}
	})
	sweep := func(g, o []float64, lo, hi int) {
		for r := lo; r < hi; r++ {
			if r == 0 || r+1 == n {
				continue
			}
			for c := 1; c+1 < n; c++ {
				o[r*n+c] = ((g[(r-1)*n+c] + g[(r+1)*n+c]) + (g[r*n+c-1] + g[r*n+c+1])) * 0.25
			}
		}
	}
	seconds := timed(func() {
		for s := 0; s < sweeps; s++ { // goroutines spawned afresh each sweep, as nugo's
			parallel(blocks, n, func(lo, hi int) { sweep(g, o, lo, hi) })
			g, o = o, g
		}
	})
	sg, so := make([]float64, n*n), make([]float64, n*n) // the serial run
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			sg[r*n+c], so[r*n+c] = stencilInitial(n, r, c), stencilInitial(n, r, c)
		}
	}
	for s := 0; s < sweeps; s++ {
		sweep(sg, so, 0, n)
		sg, so = so, sg
	}
	ok := true
	sum := 0.0
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			v := g[r*n+c]
			sum += v
			ok = ok && v == sg[r*n+c] && v == g[r*n+n-1-c] && v >= 0 && v <= 100
		}
	}
	text := okText(ok, "equal to a serial run, symmetric, bounded, sum ", "WRONG grid, sum ")
	return outcome{ok, seconds, float64((n-2)*(n-2)) * float64(sweeps), "cells",
		text + strconv.FormatFloat(sum, 'f', 6, 64)}
}

// spmv: y = A x, A in compressed sparse rows with skewed row degrees (nugo's memory.hpp: the
// same degrees, columns, values and x, the same sums in the same order), rows in equal chunks.
func spmvDegree(rows, r int) int {
	u := 1 - float64(r)/float64(rows)
	return 2 + int(62*u*u)
}

func spmv(rows, passes, parts int) outcome {
	first, last := split(rows, part.n, part.k) // this part's rows; x is whole (each node its copy)
	n := last - first
	ptr := make([]int, n+1)
	for r := 0; r < n; r++ {
		ptr[r+1] = ptr[r] + spmvDegree(rows, first+r)
	}
	nnz := ptr[n]
	col, val, x, y := make([]uint32, nnz), make([]float64, nnz), make([]float64, rows), make([]float64, n)
	column := func(r, j int) int { return (r*7919 + j*104729 + j*j*31) % rows }
	value := func(r, j int) float64 { return 1 / float64(1+(r+j)%7) }
	xAt := func(i int) float64 { return float64(i%13) * 0.5 }
	parallel(parts, n, func(lo, hi int) { // first touch by the workers, as nugo's
		for r := lo; r < hi; r++ {
			y[r] = 0
			for i, j := ptr[r], 0; i < ptr[r+1]; i, j = i+1, j+1 {
				col[i], val[i] = uint32(column(first+r, j)), value(first+r, j)
			}
		}
		for i := rows * lo / n; i < rows*hi/n; i++ { // and the same share of x
			x[i] = xAt(i)
		}
	})
	ready()
	seconds := timed(func() {
		for p := 0; p < passes; p++ {
			parallel(parts, n, func(lo, hi int) {
				for r := lo; r < hi; r++ {
					sum := 0.0
					for i := ptr[r]; i < ptr[r+1]; i++ {
						sum += val[i] * x[col[i]]
					}
					y[r] = sum
				}
			})
		}
	})
	ok := true
	checksum := 0.0
	for r := 0; r < n; r++ {
		want := 0.0
		for j := 0; j < spmvDegree(rows, first+r); j++ {
			want += value(first+r, j) * xAt(column(first+r, j))
		}
		ok = ok && y[r] == want
		checksum += want
	}
	text := okText(ok, "every y[r] equal to a serial product's, sum ", "WRONG products, sum ")
	return outcome{ok, seconds, float64(nnz) * float64(passes), "non-zeros", text + strconv.FormatFloat(checksum, 'f', 6, 64)}
}

func histogram(total, passes, parts int) outcome {
	first, last := split(total/256, part.n, part.k) // whole runs of 256: every bucket the same
	first, last = first*256, last*256
	n := last - first
	input := make([]uint8, n)
	parallel(parts, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			input[i] = uint8(37 * (first + i))
		}
	})
	ready()
	ok := true
	seconds := 0.0
	for p := 0; p < passes; p++ {
		var total [256]uint64
		var mu sync.Mutex
		seconds += timed(func() {
			parallel(parts, n, func(lo, hi int) {
				var mine [256]uint64
				for _, b := range input[lo:hi] {
					mine[b]++
				}
				mu.Lock()
				for b := range total {
					total[b] += mine[b]
				}
				mu.Unlock()
			})
		})
		for _, count := range total {
			ok = ok && count == uint64(n/256)
		}
	}
	return outcome{ok, seconds, float64(n) * float64(passes), "bytes",
		okText(ok, "every bucket exact", "WRONG counts")}
}

// ---- communication ----

func sieve(n int) []int64 {
	numbers := make(chan int64)
	var stop atomic.Bool
	go func() {
		for i := int64(2); !stop.Load(); i++ {
			numbers <- i
		}
		close(numbers)
	}()
	var primes []int64
	in := numbers
	for i := 0; i < n; i++ {
		prime := <-in
		primes = append(primes, prime)
		out := make(chan int64)
		go func(in <-chan int64, out chan<- int64, prime int64) {
			for v := range in {
				if v%prime != 0 {
					out <- v
				}
			}
			close(out)
		}(in, out, prime)
		in = out
	}
	stop.Store(true)
	for range in {
	}
	return primes
}

func primesSerial(n int) []int64 {
	var primes []int64
	for v := int64(2); len(primes) < n; v++ {
		prime := true
		for _, p := range primes {
			if p*p > v {
				break
			}
			if v%p == 0 {
				prime = false
				break
			}
		}
		if prime {
			primes = append(primes, v)
		}
	}
	return primes
}

func pingPongHogs(rounds int64, hogs int) bool {
	var stop atomic.Bool
	var hogsDone atomic.Int32
	var hogsLeft sync.WaitGroup
	hogsLeft.Add(hogs)
	for h := 0; h < hogs; h++ {
		go func() {
			x := uint64(1)
			for !stop.Load() {
				for i := 0; i < 1000; i++ {
					x = x*6364136223846793005 + 1
				}
			}
			if x != 0 {
				hogsDone.Add(1)
			}
			hogsLeft.Done()
		}()
	}
	ping, pong := make(chan int64), make(chan int64)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	var v int64
	for r := int64(0); r < rounds; r++ {
		ping <- v
		v = <-pong
	}
	close(ping)
	stop.Store(true)
	hogsLeft.Wait()
	return v == rounds && int(hogsDone.Load()) == hogs
}

func fanIn(producers int, each int64, buffer int) (bool, int64) {
	c := make(chan int64, buffer)
	var sending sync.WaitGroup
	sending.Add(producers)
	for p := 0; p < producers; p++ {
		go func() {
			for i := int64(0); i < each; i++ {
				c <- i
			}
			sending.Done()
		}()
	}
	go func() {
		sending.Wait()
		close(c)
	}()
	var count, sum int64
	for v := range c {
		count++
		sum += v
	}
	total := int64(producers) * each
	return count == total && sum == int64(producers)*(each*(each-1)/2), total
}

// ---- the table: the same sizes as nugo-workload's ----

type workload struct {
	kind string
	run  func(size int) outcome
}

func okText(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

var workloads = map[string]workload{
	"fib": {"compute", func(s int) outcome {
		n := []int{15, 22, 27, 32}[s]
		var got int64
		seconds := timed(func() { got = fib(n) })
		want := fibSerial(n)
		return outcome{got == want, seconds, float64(fibSerial(n+1) - 1), "goroutines", checked(got, want)}
	}},
	"skynet": {"compute", func(s int) outcome {
		leaves := []int64{1000, 100000, 1000000, 10000000}[s]
		var got int64
		seconds := timed(func() {
			c := make(chan int64)
			go skynet(c, 0, leaves, 10)
			got = <-c
		})
		want := leaves * (leaves - 1) / 2
		return outcome{got == want, seconds, float64((10*leaves - 1) / 9), "goroutines", checked(got, want)}
	}},
	"uts": {"compute", func(s int) outcome {
		t := []utsTree{{4, 4, 19, 944}, {6, 4, 19, 16000}, {10, 4, 19, 4130071}, {13, 4, 29, 102181082}}[s]
		var got int64
		seconds := timed(func() { got = utsCount(utsRoot(t.seed), 0, t) })
		return outcome{got == t.nodes, seconds, float64(got), "nodes", checked(got, t.nodes)}
	}},
	"nqueens": {"compute", func(s int) outcome {
		n := []int{6, 10, 14, 16}[s]
		spawn := n
		if spawn > 4 {
			spawn = 4
		}
		var got int64
		seconds := timed(func() { got = queens(n, 0, 0, 0, 0, spawn) })
		want := queensSolutions[n]
		return outcome{got == want, seconds, float64(got), "solutions", checked(got, want)}
	}},
	"mergesort": {"compute", func(s int) outcome {
		n := []int{10000, 200000, 4000000, 32000000}[s]
		v, tmp := sortInput(n), make([]uint64, n)
		var before, after uint64
		for _, x := range v {
			before += x
		}
		seconds := timed(func() { mergeSort(v, tmp) })
		ok := true
		for i, x := range v {
			after += x
			ok = ok && (i == 0 || v[i-1] <= x)
		}
		ok = ok && before == after
		return outcome{ok, seconds, float64(n), "elements", okText(ok, "sorted, same sum", "NOT sorted, or elements lost")}
	}},
	"triad": {"memory", func(s int) outcome {
		return triad([]int{20000, 4000000, 16000000, 64000000}[s], []int{2, 5, 10, 20}[s], runtime.GOMAXPROCS(0), 1)
	}},
	"stencil": {"memory", func(s int) outcome {
		return stencil([]int{64, 1024, 2048, 4096}[s], []int{10, 30, 20, 40}[s], 2*runtime.GOMAXPROCS(0))
	}},
	"triad_skew": {"memory", func(s int) outcome { // nugo's 4 goroutines per P, times 3; with -part, 3x on part 0
		return triad([]int{20000, 4000000, 16000000, 64000000}[s], []int{2, 5, 10, 20}[s], 12*runtime.GOMAXPROCS(0), 3)
	}},
	"spmv": {"memory", func(s int) outcome {
		return spmv([]int{2000, 200000, 400000, 2000000}[s], []int{2, 5, 10, 20}[s], 4*runtime.GOMAXPROCS(0))
	}},
	"histogram": {"memory", func(s int) outcome {
		return histogram([]int{131072, 8000000, 128000000, 512000000}[s], []int{2, 3, 5, 5}[s], runtime.GOMAXPROCS(0))
	}},
	"sieve": {"communication", func(s int) outcome {
		n := []int{100, 500, 2000, 5000}[s]
		var got []int64
		seconds := timed(func() { got = sieve(n) })
		want := primesSerial(n)
		ok := len(got) == len(want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i] == want[i]
		}
		return outcome{ok, seconds, float64(n), "primes", "prime " + strconv.Itoa(n) + ": " + checked(got[len(got)-1], want[len(want)-1])}
	}},
	"pingpong_hogs": {"communication", func(s int) outcome {
		rounds := []int64{1000, 20000, 200000, 1000000}[s]
		var ok bool
		seconds := timed(func() { ok = pingPongHogs(rounds, runtime.GOMAXPROCS(0)) })
		return outcome{ok, seconds, float64(rounds), "round trips", okText(ok, "every round, every hog ended", "rounds or hogs lost")}
	}},
	"fanin": {"communication", func(s int) outcome {
		var ok bool
		var total int64
		seconds := timed(func() { ok, total = fanIn(16, []int64{1000, 50000, 500000, 2000000}[s], 64) })
		return outcome{ok, seconds, float64(total), "messages", okText(ok, "every message, exact sum", "messages lost")}
	}},
}

var sizeNames = []string{"tiny", "small", "default", "large"}

// The workloads whose data splits into parts that need nothing from each other (-part).
var divisible = map[string]bool{"triad": true, "triad_skew": true, "histogram": true, "spmv": true}

func usage(problem string) {
	names := make([]string, 0, len(workloads))
	for name := range workloads {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "go-workload: %s\nusage: go-workload WORKLOAD [-size tiny|small|default|large] [-part K/N [-barrier]]\nworkloads: %v\n", problem, names)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage("no workload named")
	}
	name := os.Args[1]
	w, known := workloads[name]
	if !known {
		usage("unknown workload '" + name + "'")
	}
	flags := flag.NewFlagSet("go-workload", flag.ContinueOnError)
	sizeName := flags.String("size", "default", "tiny, small, default or large")
	partName := flags.String("part", "0/1", "K/N: part K of N of a data-parallel kernel's data (triad, triad_skew, histogram, spmv)")
	withBarrier := flags.Bool("barrier", false, "say \"ready\" on stdout before the timed region and wait for a line on stdin")
	if err := flags.Parse(os.Args[2:]); err != nil || flags.NArg() != 0 {
		usage("bad arguments")
	}
	if n, err := fmt.Sscanf(*partName, "%d/%d", &part.k, &part.n); n != 2 || err != nil || part.n < 1 || part.k < 0 || part.k >= part.n {
		usage("-part '" + *partName + "': K/N with 0 <= K < N")
	}
	if part.n > 1 && !divisible[name] {
		usage("-part: " + name + " cannot be split into independent parts (only triad, triad_skew, histogram and spmv: " +
			"the stencil's bands exchange halo rows every sweep)")
	}
	if *withBarrier {
		if !divisible[name] {
			usage("-barrier: " + name + " has no set-up to wait after (only the workloads -part splits)")
		}
		ready = barrier
	}
	size := -1
	for i, s := range sizeNames {
		if s == *sizeName {
			size = i
		}
	}
	if size < 0 {
		usage("unknown size '" + *sizeName + "'")
	}
	checkSha1()
	o := w.run(size)
	throughput := 0.0
	if o.seconds > 0 {
		throughput = o.work / o.seconds
	}
	line, _ := json.Marshal(map[string]any{
		"workload": name, "kind": w.kind, "size": sizeNames[size], "procs": runtime.GOMAXPROCS(0),
		"mode": "go", "topology": "this machine", "emulated": false, "ok": o.ok, "seconds": o.seconds, "work": o.work,
		"unit": o.unit, "throughput": throughput, "result": o.result, "part": *partName,
	})
	fmt.Println(string(line))
	if !o.ok {
		fmt.Fprintf(os.Stderr, "go-workload: %s (%s): WRONG RESULT: %s\n", name, sizeNames[size], o.result)
		os.Exit(1)
	}
}
