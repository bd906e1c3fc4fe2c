// What each workload computes, at each size, and what its result is checked against: the part
// of every workload that does not depend on a runtime. nugo-workload (main.cpp, with the kernels
// of forkjoin.hpp, memory.hpp and communication.hpp) and the C++ peers' twins
// (experiments/baselines/cpp: oneTBB, OpenMP, Boost.Fiber) all take their sizes, inputs and
// checks from here, so that every runtime is given exactly the same work and the same test of
// its answer. The Go twin (experiments/baselines/go/workloads) is the same in Go.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#if WORKLOADS_NUGO_CLOCK
#include "nugo/time.hpp"
#endif

namespace workloads {

// The timed region of every twin: the kernel only (not the input's set-up, nor the check).
// nugo-workload times on nugo::Clock (WORKLOADS_NUGO_CLOCK, set by experiments/CMakeLists.txt
// for it alone): steady_clock, except in the virtual-time build, where it is virtual time.
#if WORKLOADS_NUGO_CLOCK
using Clock = nugo::Clock;
#else
using Clock = std::chrono::steady_clock;
#endif
// A modelled cost (the latency model's charge): added to the virtual clock in a virtual-time
// run of nugo-workload (nugo::charge_virtual_time), else false: the caller spends it.
inline bool charge_virtual([[maybe_unused]] Clock::duration d) {
#if WORKLOADS_NUGO_CLOCK
  return nugo::charge_virtual_time(std::chrono::duration_cast<std::chrono::nanoseconds>(d));
#else
  return false;
#endif
}
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// ---- sizes ----

enum Size { tiny, small, standard, large };
inline constexpr const char* kSizeNames[] = {"tiny", "small", "default", "large"};
inline std::optional<Size> size_named(const char* name) {
  for (int s = tiny; s <= large; ++s)
    if (std::strcmp(name, kSizeNames[s]) == 0) return static_cast<Size>(s);
  return std::nullopt;
}

// A data-parallel kernel's size: a total (elements, rows, or the grid's side) and its passes.
struct Sweep {
  std::size_t total;
  int passes;
};

// Each workload's size, by Size (the README's table).
namespace sizes {
inline constexpr std::array fib{15, 22, 27, 32};
inline constexpr std::array skynet_leaves{1'000L, 100'000L, 1'000'000L, 10'000'000L};
inline constexpr std::array queens{6, 10, 14, 16};
inline constexpr std::array<std::size_t, 4> sort{10'000, 200'000, 4'000'000, 32'000'000};
inline constexpr std::array<Sweep, 4> triad{{{20'000, 2}, {4'000'000, 5}, {16'000'000, 10}, {64'000'000, 20}}};
inline constexpr std::array<Sweep, 4> stencil{{{64, 10}, {1024, 30}, {2048, 20}, {4096, 40}}};
inline constexpr std::array<Sweep, 4> histogram{
    {{131'072, 2}, {8'000'000, 3}, {128'000'000, 5}, {512'000'000, 5}}};
inline constexpr std::array<Sweep, 4> spmv{{{2'000, 2}, {200'000, 5}, {400'000, 10}, {2'000'000, 20}}};
inline constexpr std::array sieve_primes{100, 500, 2000, 5000};
inline constexpr std::array pingpong_rounds{1'000L, 20'000L, 200'000L, 1'000'000L};
inline constexpr std::array fanin_each{1'000L, 50'000L, 500'000L, 2'000'000L};
}  // namespace sizes
inline constexpr int kFanInProducers = 16;
inline constexpr std::size_t kFanInBuffer = 64;

// What a run of a workload reports (every twin prints it as one JSON line).
struct Outcome {
  bool ok = false;
  double seconds = 0;     // the kernel only: not the input's set-up, nor the check
  double work = 0;        // units of work done, for throughput
  const char* unit = "";  // what work counts
  std::string result;     // the value checked, and what it was checked against
};

// Runs f, timed; its result.
template <class F>
auto timed(double* seconds, F f) {
  auto start = Clock::now();
  auto result = f();
  *seconds = seconds_since(start);
  return result;
}

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

template <class T>
std::string checked(T got, T want) {
  return std::to_string(got) + (got == want ? " == " : " != ") + std::to_string(want);
}

// ---- skynet and fib ----

inline constexpr long kSkynetFanOut = 10;
constexpr long skynet_checksum(long leaves) { return leaves * (leaves - 1) / 2; }
// Every node of a tree of `leaves` leaves: the goroutines (tasks, fibers) it makes.
constexpr long skynet_nodes(long leaves) { return (kSkynetFanOut * leaves - 1) / (kSkynetFanOut - 1); }

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
// fib(n) as fork-join makes fib(n + 1) - 1 tasks.
constexpr long fib_tasks(int n) { return fib_serial(n + 1) - 1; }

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
inline constexpr std::array kTrees{kT1Depth4, kT1Depth6, kT1, kT1L};  // by Size

inline int children(const State& s, int depth, const Tree& t) {
  if (depth >= t.depth) return 0;
  const std::uint32_t r = get_be32(s.data() + 16) & 0x7fffffff;
  const double h = r / 2147483648.0;      // uniform in [0, 1)
  const double p = 1.0 / (1.0 + t.b0);    // geometric with mean b0
  return static_cast<int>(std::floor(std::log(1 - h) / std::log(1 - p)));
}

}  // namespace uts

// ---- n-queens: the number of ways to place n queens, BOTS' nqueens ----

namespace nqueens {

// Solutions for n = 0..16 (OEIS A000170): the check.
inline constexpr long kSolutions[] = {1,     1,     0,      0,       2,         10,       4,
                                      40,    92,    352,    724,     2680,      14200,    73712,
                                      365596, 2279184, 14772512};

// A task per placement in the first rows (BOTS' cut-off), serial below.
inline int spawn_rows(int n) { return std::min(n, 4); }

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

// The columns still free in a row, one bit each.
inline std::vector<std::uint32_t> free_bits(int n, std::uint32_t cols, std::uint32_t diag, std::uint32_t anti) {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t free = ~(cols | diag | anti) & ((1u << n) - 1); free; free &= free - 1)
    bits.push_back(free & -free);
  return bits;
}

}  // namespace nqueens

// ---- merge sort: sort halves in parallel, merge, serial below a cut-off ----
//
// Below the cut-off the same hand-written serial merge sort runs in every twin (insertion
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

inline std::uint64_t sum(const std::vector<std::uint64_t>& v) {
  std::uint64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

}  // namespace mergesort

// ---- the memory-bound kernels' data and references ----

// triad: a[i] = b[i] + kTriadScale c[i], with b[i] = i mod 1000 (i the global index) and c = 2.
inline constexpr double kTriadScale = 3.0;
inline double triad_b(std::size_t i) { return static_cast<double>(i % 1000); }
inline double triad_want(std::size_t i) { return triad_b(i) + kTriadScale * 2.0; }
inline void triad_range(double* a, const double* b, const double* c, std::size_t lo, std::size_t hi) {
  for (std::size_t i = lo; i < hi; ++i) a[i] = b[i] + kTriadScale * c[i];
}
// Each pass reads b and c and writes a.
inline double triad_bytes(std::size_t total, int passes) { return 3.0 * sizeof(double) * static_cast<double>(total) * passes; }

// stencil: the grid starts uneven everywhere (a left-right symmetric pattern inside, a hot top
// edge), so that a wrong halo, block or swap changes the result. Each cell is computed from the
// previous sweep's grid only, so the result is the same bits at any P count.
inline double stencil_initial(std::size_t n, std::size_t r, std::size_t c) {
  if (r == 0) return c > 0 && c + 1 < n ? 100.0 : 0.0;
  if (r + 1 == n || c == 0 || c + 1 == n) return 0.0;
  return static_cast<double>((r * 131 + std::min(c, n - 1 - c) * 71) % 101);
}
// One cell of the next sweep, from its four neighbours: (n + s) + (w + e) is the same sum for
// a cell and its mirror image.
inline double stencil_cell(double up, double down, double left, double right) {
  return ((up + down) + (left + right)) * 0.25;
}
// One inner row of the next sweep, from the row and its neighbours (its two ends stay).
inline void stencil_row(const double* up, const double* here, const double* down, double* out, std::size_t n) {
  for (std::size_t c = 1; c + 1 < n; ++c) out[c] = stencil_cell(up[c], down[c], here[c - 1], here[c + 1]);
}
// The grid after `sweeps` sweeps of a serial run: the reference.
inline std::vector<double> stencil_serial(std::size_t n, int sweeps) {
  std::vector<double> g(n * n), o(n * n);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c) g[r * n + c] = o[r * n + c] = stencil_initial(n, r, c);
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for (std::size_t r = 1; r + 1 < n; ++r) stencil_row(&g[(r - 1) * n], &g[r * n], &g[(r + 1) * n], &o[r * n], n);
    std::swap(g, o);
  }
  return g;
}
inline double stencil_cells(std::size_t n, int sweeps) { return static_cast<double>((n - 2) * (n - 2)) * sweeps; }

// histogram: byte(37 i): 37 is odd, so any 256 consecutive i hit every byte once, and with a
// total that is a multiple of 256 every bucket holds exactly total / 256.
inline std::size_t histogram_total(std::size_t total) { return total - total % 256; }
inline std::uint8_t histogram_input(std::size_t i) { return static_cast<std::uint8_t>(37 * i); }

// spmv: row r of the square matrix has 2 + 62 (1 - r/rows)^2 non-zeros (64 for the first row,
// 2 for the last) in scattered columns.
inline std::size_t spmv_degree(std::size_t rows, std::size_t r) {
  const double u = 1.0 - static_cast<double>(r) / static_cast<double>(rows);
  return 2 + static_cast<std::size_t>(62.0 * u * u);
}
inline std::size_t spmv_column(std::size_t rows, std::size_t r, std::size_t j) {
  return (r * 7919 + j * 104729 + j * j * 31) % rows;
}
inline double spmv_value(std::size_t r, std::size_t j) { return 1.0 / static_cast<double>(1 + (r + j) % 7); }
inline double spmv_x(std::size_t i) { return static_cast<double>(i % 13) * 0.5; }
// Rows [lo, hi) of the part of the matrix that begins at global row `first` (ptr, col, val and
// y indexed from there): their columns and values set, y zeroed.
inline void spmv_fill(std::size_t rows, std::size_t first, const std::size_t* ptr, std::uint32_t* col, double* val,
                      double* y, std::size_t lo, std::size_t hi) {
  for (std::size_t lr = lo; lr < hi; ++lr) {
    y[lr] = 0;
    for (std::size_t i = ptr[lr], j = 0; i < ptr[lr + 1]; ++i, ++j) {
      col[i] = static_cast<std::uint32_t>(spmv_column(rows, first + lr, j));
      val[i] = spmv_value(first + lr, j);
    }
  }
}
// y = A x for rows [lo, hi), as spmv_fill indexes them.
inline void spmv_rows(const std::size_t* ptr, const std::uint32_t* col, const double* val, const double* x, double* y,
                      std::size_t lo, std::size_t hi) {
  for (std::size_t lr = lo; lr < hi; ++lr) {
    double sum = 0;
    for (std::size_t i = ptr[lr]; i < ptr[lr + 1]; ++i) sum += val[i] * x[col[i]];
    y[lr] = sum;
  }
}
// y[r] of a serial product, summed in the kernels' order: the reference.
inline double spmv_want(std::size_t rows, std::size_t r) {
  double want = 0;
  for (std::size_t j = 0; j < spmv_degree(rows, r); ++j) want += spmv_value(r, j) * spmv_x(spmv_column(rows, r, j));
  return want;
}

// ---- communication ----

// The first n primes by trial division: the sieve's check.
inline std::vector<long> primes_serial(int n) {
  std::vector<long> primes;
  for (long v = 2; static_cast<int>(primes.size()) < n; ++v) {
    bool prime = true;
    for (long p : primes) {
      if (p * p > v) break;
      if (v % p == 0) {
        prime = false;
        break;
      }
    }
    if (prime) primes.push_back(v);
  }
  return primes;
}

}  // namespace workloads
