// The tracer's temporary file, shared by its two halves: recording (trace.cpp, on the Ms)
// writes it, the conversion (trace_json.cpp, at stop) reads it. A file is a sequence of
// chunks, each a header {kChunkMagic, M id or kNoM, event count, 0} and that M's events in
// time order: one sorted run per chunk.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fdwrite.hpp"  // write_all, for the writer thread and the conversion alike
#include "trace.hpp"

namespace nugo::detail {

struct Event {
  std::uint64_t ts;  // ticks: the TSC where it is invariant, else CLOCK_MONOTONIC ns
  Ev kind;
  std::uint8_t b;
  std::int16_t p;  // P id, or -1
  std::uint32_t x;
  std::int64_t g;
  std::uint64_t arg;
};
static_assert(sizeof(Event) == 32);

inline constexpr std::uint32_t kEvents = 2047;  // a buffer is 64 KiB
inline constexpr std::uint32_t kChunkMagic = 0x5447554e;  // "NUGT"
inline constexpr std::uint32_t kNoM = 0xffffffff;  // the shared buffer of threads without an M

struct TraceBuf {
  TraceBuf* next = nullptr;
  std::uint32_t m = 0;
  std::uint32_t n = 0;
  Event ev[kEvents];
};
static_assert(sizeof(TraceBuf) <= 65536);


// What the conversion reads: the files, and what the recording took of the runtime at start
// (P id -> its node's OS number, node index -> OS number, a description), so that the
// conversion needs nothing of the scheduler.
struct TraceFile {
  std::string path;
  std::size_t max_bytes = 0;
  int out_fd = -1;
  int raw_fd = -1;
  std::uint64_t raw_bytes = 0;
  std::uint64_t tick0 = 0;
  std::int64_t ns0 = 0;

  std::vector<int> p_node;
  std::vector<int> node_os;
  std::string mode, topology;
  bool emulated = false;
  bool tsc = false;  // ticks are the TSC's, else CLOCK_MONOTONIC ns

  std::atomic<bool> capped{false};  // recording stopped at the size cap
  int write_errno = 0;              // the writer's first failure
};

// The runs of f's temporary file, merged by timestamp into the JSON at f.out_fd (at most
// f.max_bytes). Returns the error text, empty on success.
std::string convert(const TraceFile& f, double ns_per_tick);

}  // namespace nugo::detail
