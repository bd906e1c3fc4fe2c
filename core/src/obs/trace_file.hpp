// The tracer's temporary file, shared by its two halves: recording (trace.cpp, on the Ms)
// writes it, the conversion (trace_json.cpp, at stop) reads it. A file is a sequence of
// chunks, each a ChunkHeader and one M's records (or those of the threads without an M) in
// time order: one sorted run per chunk.
//
// A record is one 16-byte slot, or two when a field does not fit the first (Slot). Its time is
// a delta from the record before it in the same chunk (from the chunk's base for the first),
// never negative: a clock read that comes out earlier than the M's last record (a thread moved
// to a CPU whose counter lags by a few ticks) is recorded at that last time, in this chunk or
// the M's previous one, so an M's records never go back in time. Short records are what the
// scheduler writes most (starts, stops, most system calls); creations and unblocks name two
// goroutines and take two slots.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fdwrite.hpp"  // write_all, for the writer thread and the conversion alike
#include "trace.hpp"

namespace nugo::detail {

// A record as the recorder takes it and the conversion reads it back.
struct Event {
  std::uint64_t ts;  // ticks: the TSC where it is invariant, else CLOCK_MONOTONIC ns
  Ev kind;
  std::uint8_t b;
  std::int16_t p;  // P id, or -1
  std::uint32_t x;
  std::int64_t g;
  std::uint64_t arg;
};

// One 16-byte slot, two words. The first slot of a record: `head` holds, from its low bits,
// the ticks since the chunk's previous record (32 bits), the kind (8, kLong set when a second
// slot follows), b (8) and p (16); `word` holds, in a short record, g in the low 48 bits and x
// in the high 16, in a long one g. The second slot: arg, then x and the delta's high 32 bits.
struct Slot {
  std::uint64_t head;
  std::uint64_t word;
};
static_assert(sizeof(Slot) == 16);

inline constexpr std::uint8_t kLong = 0x80;
inline constexpr int kShortGBits = 48;

struct ChunkHeader {
  std::uint32_t magic;  // kChunkMagic
  std::uint32_t m;      // M id, or kNoM
  std::uint32_t slots;  // the records' slots that follow
  std::uint32_t records;
  std::uint64_t base;   // the ticks the first record's delta counts from
};
static_assert(sizeof(ChunkHeader) == 24);

inline constexpr std::uint32_t kSlots = 4092;  // a buffer is just under 64 KiB
inline constexpr std::uint32_t kChunkMagic = 0x3247554e;  // "NUG2"
inline constexpr std::uint32_t kNoM = 0xffffffff;  // the shared buffer of threads without an M

struct TraceBuf {
  TraceBuf* next = nullptr;
  std::uint32_t m = 0;
  std::uint32_t n = 0;        // slots used
  std::uint32_t records = 0;
  std::uint64_t base = 0;     // the first record's ticks
  std::uint64_t last = 0;     // the last record's (before the first: the M's previous chunk's)
  Slot slot[kSlots];

  bool full() const { return n + 2 > kSlots; }

  // Appends e (room for two slots is the caller's to check: !full()). Returns the ticks it
  // was recorded at: e.ts, or the last record's if e.ts is earlier.
  std::uint64_t put(const Event& e) {
    const std::uint64_t ts = e.ts > last ? e.ts : last;
    if (records == 0) base = last = ts;
    const std::uint64_t dts = ts - last;
    last = ts;
    ++records;
    const auto ug = static_cast<std::uint64_t>(e.g);
    const bool fits = e.arg == 0 && ug >> kShortGBits == 0 && e.x >> 16 == 0 && dts >> 32 == 0;
    const std::uint64_t head = (dts & 0xffffffff) |
                               std::uint64_t{static_cast<std::uint8_t>(e.kind)} << 32 |
                               std::uint64_t{e.b} << 40 |
                               std::uint64_t{static_cast<std::uint16_t>(e.p)} << 48;
    if (fits) {
      slot[n++] = {head, ug | static_cast<std::uint64_t>(e.x) << kShortGBits};
      return ts;
    }
    slot[n++] = {head | std::uint64_t{kLong} << 32, ug};
    slot[n++] = {e.arg, static_cast<std::uint64_t>(e.x) | (dts >> 32) << 32};
    return ts;
  }
};
static_assert(sizeof(TraceBuf) <= 65536);

// Reads one chunk's records back, in order.
class ChunkReader {
 public:
  ChunkReader(const Slot* at, const Slot* end, std::uint64_t base) : at_(at), end_(end), ts_(base) {}

  bool done() const { return at_ == end_; }

  // The next record, or false if the chunk is malformed (a long record cut off, a kind the
  // recorder does not write).
  bool next(Event* e) {
    const Slot s = *at_++;
    std::uint64_t dts = s.head & 0xffffffff;
    const auto kind = static_cast<std::uint8_t>(s.head >> 32);
    const std::uint8_t bare = kind & ~kLong;
    if (bare > static_cast<std::uint8_t>(kLastEv)) return false;
    e->kind = static_cast<Ev>(bare);
    e->b = static_cast<std::uint8_t>(s.head >> 40);
    e->p = static_cast<std::int16_t>(static_cast<std::uint16_t>(s.head >> 48));
    if (!(kind & kLong)) {
      e->g = static_cast<std::int64_t>(s.word & ((std::uint64_t{1} << kShortGBits) - 1));
      e->x = static_cast<std::uint32_t>(s.word >> kShortGBits);
      e->arg = 0;
    } else {
      if (at_ == end_) return false;
      const Slot t = *at_++;
      e->g = static_cast<std::int64_t>(s.word);
      e->arg = t.head;
      e->x = static_cast<std::uint32_t>(t.word);
      dts |= (t.word >> 32) << 32;
    }
    e->ts = ts_ += dts;
    return true;
  }

 private:
  const Slot* at_;
  const Slot* end_;
  std::uint64_t ts_;
};

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
  std::vector<std::string> wait_reasons;  // by number, as go_stop records carry them
  bool emulated = false;
  bool tsc = false;  // ticks are the TSC's, else CLOCK_MONOTONIC ns
  bool virtual_clock = false;  // ticks are virtual ns (NUGO_VIRTUAL, vtime/vtime.hpp)

  std::atomic<bool> capped{false};  // recording stopped at the size cap
  int write_errno = 0;              // the writer's first failure
};

// The runs of f's temporary file, merged by timestamp into the JSON at f.out_fd (at most
// f.max_bytes). Returns the error text, empty on success.
std::string convert(const TraceFile& f, double ns_per_tick);

}  // namespace nugo::detail
