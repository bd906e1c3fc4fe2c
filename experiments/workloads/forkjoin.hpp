// The compute-bound fork-join workloads (experiments/workloads/README.md): skynet, fib, UTS,
// n-queens and merge sort. nugo-bench (micro_bench.cpp, timed in a loop), nugo-locality
// (locality.cpp, run once for the runtime's statistics) and nugo-workload (the experiment
// pipeline's driver) all run these, so that every figure describes exactly the same work.
// Each function must be called from a goroutine. The Go twins are in
// experiments/baselines/go/sched_test.go and experiments/baselines/go/workloads/.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <nugo/nugo.hpp>
#include <vector>

namespace workloads {

// ---- skynet: a 10-way tree of 1,111,111 goroutines over channels ----

inline constexpr long kSkynetLeaves = 1'000'000;
inline constexpr long kSkynetFanOut = 10;
inline constexpr long kSkynetChecksum = kSkynetLeaves * (kSkynetLeaves - 1) / 2;

// The classic program's goroutine: num is the first leaf of its subtree, size the number of
// leaves in it; it sends the sum of its leaves' numbers on c.
inline void skynet(nugo::Chan<long> c, long num, long size, long div) {
  if (size == 1) {
    c.send(num);
    return;
  }
  nugo::Chan<long> rc;
  for (long i = 0; i < div; ++i) {
    long sub = num + i * (size / div);
    nugo::go([=] { skynet(rc, sub, size / div, div); });
  }
  long sum = 0;
  for (long i = 0; i < div; ++i) sum += *rc.recv();
  c.send(sum);
}

// One whole tree of `leaves` leaves (a power of the fan-out); the root's sum, which is
// skynet_checksum(leaves) when nothing was lost.
inline long run_skynet(long leaves = kSkynetLeaves) {
  nugo::Chan<long> c;
  nugo::go([=] { skynet(c, 0, leaves, kSkynetFanOut); });
  return *c.recv();
}
constexpr long skynet_checksum(long leaves) { return leaves * (leaves - 1) / 2; }

// ---- fib: fork-join, one goroutine per call ----

// fib(n) as a Go programmer writes it: fib(n-1) in a new goroutine, fib(n-2) in the caller,
// joined by a WaitGroup. There is deliberately no serial cutoff: the point is goroutine
// creation, parking, and the stealing that spreads the tree over the Ps.
inline long fib(int n) {
  if (n < 2) return n;
  long first = 0;
  nugo::WaitGroup joined;
  joined.add(1);
  nugo::go([&first, &joined, n] {
    first = fib(n - 1);
    joined.done();
  });
  long second = fib(n - 2);
  joined.wait();
  return first + second;
}

// The reference value that fib(n) is checked against.
constexpr long fib_serial(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    long next = a + b;
    a = b;
    b = next;
  }
  return a;
}

// fib(kFibN) creates fib(kFibN + 1) - 1 = 317,810 goroutines: tens of milliseconds at 1 P,
// so that Google Benchmark gets several iterations and every P of a run gets work to steal.
inline constexpr int kFibN = 27;
static_assert(fib_serial(kFibN) == 196'418);

// ---- UTS: the Unbalanced Tree Search benchmark's geometric trees ----
//
// Every node is a 20-byte SHA-1 state; its children's states are SHA-1(state, child index),
// so the tree is the same however it is traversed, and its node count is the check (T1:
// geometric, fixed shape, branching factor 4, depth 10, root seed 19: 4,130,071 nodes). A
// node's number of children is geometric with mean b0 above the depth limit, none below it.

namespace uts {

using State = std::array<unsigned char, 20>;

inline void put_be32(unsigned char* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (24 - 8 * i));
}
inline std::uint32_t get_be32(const unsigned char* in) {
  return std::uint32_t{in[0]} << 24 | std::uint32_t{in[1]} << 16 | std::uint32_t{in[2]} << 8 | in[3];
}
inline std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// SHA-1 (FIPS 180-4) of a message of at most 55 bytes: one padded block. Written as the Go
// twin's sha1Short is, so that both spend the same work per node.
inline State sha1_short(const unsigned char* msg, std::size_t len) {
  unsigned char block[64] = {};
  std::copy(msg, msg + len, block);
  block[len] = 0x80;
  put_be32(block + 60, static_cast<std::uint32_t>(len * 8));  // the length's high word is 0
  std::uint32_t w[80];
  for (int i = 0; i < 16; ++i) w[i] = get_be32(block + 4 * i);
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    std::uint32_t f = i < 20 ? (b & c) | (~b & d) : i < 40 ? b ^ c ^ d
                    : i < 60 ? (b & c) | (b & d) | (c & d) : b ^ c ^ d;
    std::uint32_t k = i < 20 ? 0x5A827999 : i < 40 ? 0x6ED9EBA1 : i < 60 ? 0x8F1BBCDC : 0xCA62C1D6;
    std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  State out;
  for (int i = 0; i < 5; ++i) put_be32(out.data() + 4 * i, h[i]);
  return out;
}

inline State root(std::uint32_t seed) {
  unsigned char s[20] = {};
  put_be32(s + 16, seed);
  return sha1_short(s, sizeof s);
}

inline State child(const State& parent, std::uint32_t index) {
  unsigned char msg[24];
  std::copy(parent.begin(), parent.end(), msg);
  put_be32(msg + 20, index);
  return sha1_short(msg, sizeof msg);
}

struct Tree {
  int depth;         // no children at this depth and below (UTS's -d)
  double b0;         // mean branching factor above it (-b)
  std::uint32_t seed;  // the root's (-r)
  long nodes;        // the known count: the check
};
inline constexpr Tree kT1{10, 4.0, 19, 4'130'071};   // -t 1 -a 3 -d 10 -b 4 -r 19
inline constexpr Tree kT1L{13, 4.0, 29, 102'181'082};  // -t 1 -a 3 -d 13 -b 4 -r 29
inline constexpr Tree kT1Depth6{6, 4.0, 19, 16'000};  // T1 cut at depth 6, for quick runs
inline constexpr Tree kT1Depth4{4, 4.0, 19, 944};

inline int children(const State& s, int depth, const Tree& t) {
  if (depth >= t.depth) return 0;
  const std::uint32_t r = get_be32(s.data() + 16) & 0x7fffffff;
  const double h = r / 2147483648.0;      // uniform in [0, 1)
  const double p = 1.0 / (1.0 + t.b0);    // geometric with mean b0
  return static_cast<int>(std::floor(std::log(1 - h) / std::log(1 - p)));
}

// The subtree's node count, as a Go programmer writes it: a goroutine per child, joined with
// a WaitGroup, each writing its own slot.
inline long count(const State& s, int depth, const Tree& t) {
  const int n = children(s, depth, t);
  if (n == 0) return 1;
  std::vector<long> sub(static_cast<std::size_t>(n));
  nugo::WaitGroup joined;
  joined.add(n);
  for (int i = 0; i < n; ++i)
    nugo::go([&, i] {
      sub[static_cast<std::size_t>(i)] = count(child(s, static_cast<std::uint32_t>(i)), depth + 1, t);
      joined.done();
    });
  joined.wait();
  long total = 1;
  for (long c : sub) total += c;
  return total;
}

inline long run(const Tree& t) { return count(root(t.seed), 0, t); }

}  // namespace uts

// ---- n-queens: the number of ways to place n queens, BOTS' nqueens ----

namespace nqueens {

// Solutions for n = 0..16 (OEIS A000170): the check.
inline constexpr long kSolutions[] = {1,     1,     0,      0,       2,         10,       4,
                                      40,    92,    352,    724,     2680,      14200,    73712,
                                      365596, 2279184, 14772512};

// Rows are filled top down; cols, diag and anti are the attacked columns as bit masks.
inline long serial(int n, int row, std::uint32_t cols, std::uint32_t diag, std::uint32_t anti) {
  if (row == n) return 1;
  long found = 0;
  std::uint32_t free = ~(cols | diag | anti) & ((1u << n) - 1);
  while (free) {
    std::uint32_t bit = free & -free;
    free ^= bit;
    found += serial(n, row + 1, cols | bit, (diag | bit) << 1, (anti | bit) >> 1);
  }
  return found;
}

// A goroutine per placement in the first `spawn_rows` rows (BOTS' cut-off), serial below.
inline long count(int n, int row, std::uint32_t cols, std::uint32_t diag, std::uint32_t anti,
                  int spawn_rows) {
  if (row >= spawn_rows) return serial(n, row, cols, diag, anti);
  std::uint32_t free = ~(cols | diag | anti) & ((1u << n) - 1);
  std::vector<long> sub;
  std::vector<std::uint32_t> bits;
  for (; free; free &= free - 1) bits.push_back(free & -free);
  sub.resize(bits.size());
  nugo::WaitGroup joined;
  joined.add(static_cast<std::int64_t>(bits.size()));
  for (std::size_t i = 0; i < bits.size(); ++i)
    nugo::go([&, i] {
      std::uint32_t bit = bits[i];
      sub[i] = count(n, row + 1, cols | bit, (diag | bit) << 1, (anti | bit) >> 1, spawn_rows);
      joined.done();
    });
  joined.wait();
  long total = 0;
  for (long s : sub) total += s;
  return total;
}

inline long run(int n) { return count(n, 0, 0, 0, 0, std::min(n, 4)); }

}  // namespace nqueens

// ---- merge sort: sort halves in parallel, merge, serial below a cut-off ----
//
// Below the cut-off the same hand-written serial merge sort runs in both twins (insertion
// sort below 32 elements), so that the comparison is of the schedulers, not of std::sort
// against Go's sort.Slice.

namespace mergesort {

inline constexpr std::size_t kSerialBelow = 4096;
inline constexpr std::size_t kInsertionBelow = 32;

// Merges v[lo, mid) and v[mid, hi) through tmp[lo, hi) back into v.
inline void merge(std::uint64_t* v, std::uint64_t* tmp, std::size_t lo, std::size_t mid, std::size_t hi) {
  std::size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) tmp[k++] = v[j] < v[i] ? v[j++] : v[i++];
  while (i < mid) tmp[k++] = v[i++];
  while (j < hi) tmp[k++] = v[j++];
  for (k = lo; k < hi; ++k) v[k] = tmp[k];
}

inline void serial_sort(std::uint64_t* v, std::uint64_t* tmp, std::size_t lo, std::size_t hi) {
  if (hi - lo <= kInsertionBelow) {
    for (std::size_t i = lo + 1; i < hi; ++i)
      for (std::size_t j = i; j > lo && v[j] < v[j - 1]; --j) std::swap(v[j], v[j - 1]);
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  serial_sort(v, tmp, lo, mid);
  serial_sort(v, tmp, mid, hi);
  merge(v, tmp, lo, mid, hi);
}

// Sorts v[lo, hi) using tmp[lo, hi) as scratch.
inline void sort(std::uint64_t* v, std::uint64_t* tmp, std::size_t lo, std::size_t hi) {
  if (hi - lo <= kSerialBelow) {
    serial_sort(v, tmp, lo, hi);
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  nugo::WaitGroup joined;
  joined.add(1);
  nugo::go([&] {
    sort(v, tmp, lo, mid);
    joined.done();
  });
  sort(v, tmp, mid, hi);
  joined.wait();
  merge(v, tmp, lo, mid, hi);
}

// The input: a fixed xorshift sequence, so every run sorts the same numbers.
inline std::vector<std::uint64_t> input(std::size_t n) {
  std::vector<std::uint64_t> v(n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& e : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    e = x;
  }
  return v;
}

}  // namespace mergesort

}  // namespace workloads
