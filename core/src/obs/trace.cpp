// The execution tracer (nugo/trace.hpp; core/README.md, "Execution tracer").
//
// Recording. Each M appends records of one or two 16-byte slots (trace_file.hpp) to a buffer of
// its own (TraceSlot::buf), which only its thread writes, with plain stores. A full buffer goes on
// a lock-free stack for the writer thread, which appends it to a temporary file beside the
// trace (unlinked at once) and puts it back in the pool; the M takes a fresh buffer from the
// pool, under a mutex, once every 2,046 to 4,091 records, allocating only while the pool is
// empty. Threads without an M (sysmon, threads
// outside nugo) share one buffer under a mutex; they record rarely. However long the trace,
// memory holds a few buffers per M.
//
// Stopping while Ms run. stop() clears trace_on, then takes every M's buffer. An M recording
// marks itself busy first and looks at trace_on after (Dekker's protocol):
//   M:     busy = 1; StoreLoad; if (!trace_on) { busy = 0; return; }  record;  busy = 0 (release)
//   stop:  trace_on = 0; StoreLoad; wait while busy; take the buffer
// Either the M sees trace_on cleared, or stop() sees it busy and waits for the record. The M's
// StoreLoad fence is the costly part of a record: membarrier(2)'s PRIVATE_EXPEDITED command lets
// stop() issue it on every thread's behalf, which leaves the M a compiler barrier; where the
// kernel refuses membarrier, the M's store is an exchange.
//
// Writing (trace_json.cpp, over the file trace_file.hpp describes). A buffer holds one M's
// records in time order, so the temporary file is a sequence of sorted runs. stop() merges the runs by timestamp (a heap over them, the file mapped, not
// read) and writes the JSON in one pass, in time order: each track's events are monotonic,
// and a run slice's end comes after its begin. The merge also pairs what the runtime records
// apart: an unblock with the start of the goroutine it readied (a flow arrow), a goroutine's
// slice with the P it ran on when a system call took that P away.
#include "trace.hpp"
#include "trace_file.hpp"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fatal.hpp"
#include "futex.hpp"
#include "views.hpp"
#include "nugo/runtime.hpp"  // NUGO_TLS_IE
#include "vtime.hpp"

namespace nugo::detail {

std::atomic<bool> trace_on{false};

namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;

// A record's JSON is about 130 bytes, flows and slice ends included; recording stops when the
// records so far would make a file of the cap at this rate. The conversion enforces the cap
// exactly (JsonOut, trace_json.cpp).
constexpr std::uint64_t kJsonBytesPerEvent = 160;

// The TSC is the clock when the CPU says it is invariant and the kernel trusts it enough to
// base CLOCK_MONOTONIC on it (it is the current clocksource, which the kernel gives up when
// it finds the TSCs of its CPUs out of step); else CLOCK_MONOTONIC itself.
bool usable_tsc() {
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  if (!(source >> name) || name != "tsc") return false;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
  return false;
}

std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// Set by start, before trace_on, and the same for every trace of the process; atomics only
// because an M may look at them before it sees trace_on (either value is safe then).
std::atomic<bool> trace_tsc{false};
std::atomic<bool> trace_fence_by_membarrier{false};

inline std::uint64_t ticks() {
  if (vtime::on()) return static_cast<std::uint64_t>(vtime::now());  // start() turns the TSC off
  return trace_tsc.load(rlx) ? __rdtsc() : static_cast<std::uint64_t>(monotonic_ns());
}

bool membarrier_ready() {
  static const bool ok =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ok;
}

struct Session : TraceFile {
  std::vector<int> cpus;  // the CPUs the process may run on (the writer's affinity)

  std::thread writer;
  Note writer_note;
  std::atomic<bool> writer_exit{false};
  std::atomic<TraceBuf*> full{nullptr};
  std::atomic<int> nfull{0};
  std::uint64_t events_recorded = 0;  // the writer's count

  std::mutex pool_mu;
  std::vector<TraceBuf*> pool;
  std::vector<std::unique_ptr<TraceBuf>> owned;

  TraceBuf* shared = nullptr;  // threads without an M, under shared_mu

  TraceBuf* get_buffer(std::uint32_t m) {
    TraceBuf* b = nullptr;
    {
      std::lock_guard lock(pool_mu);
      if (!pool.empty()) {
        b = pool.back();
        pool.pop_back();
      } else {
        owned.push_back(std::make_unique<TraceBuf>());
        b = owned.back().get();
      }
    }
    b->m = m;
    b->n = 0;
    b->records = 0;
    b->last = 0;
    b->next = nullptr;
    return b;
  }

  void put_buffer(TraceBuf* b) {
    std::lock_guard lock(pool_mu);
    pool.push_back(b);
  }

  void push_full(TraceBuf* b) {
    TraceBuf* head = full.load(rlx);
    do b->next = head;
    while (!full.compare_exchange_weak(head, b, std::memory_order_release, rlx));
    if (nfull.fetch_add(1, rlx) + 1 >= 8) writer_note.wakeup();
  }
};

std::mutex session_mu;  // start and stop, one at a time
std::mutex shared_mu;   // Session::shared, and cur's changes
// The trace being recorded. Set (under shared_mu) before trace_on, cleared (under shared_mu)
// once no M can be recording; an M reads it only between its busy flag and seeing trace_on.
Session* cur = nullptr;

void write_chunk(Session* s, const TraceBuf* b) {
  if (b->n == 0 || s->write_errno) return;
  const ChunkHeader header{kChunkMagic, b->m, b->n, b->records, b->base};
  write_all(s->raw_fd, &header, sizeof header, &s->write_errno);
  write_all(s->raw_fd, b->slot, b->n * sizeof(Slot), &s->write_errno);
  s->raw_bytes += sizeof header + b->n * sizeof(Slot);
}

// The writer thread: full buffers to the temporary file, and the cap.
void writer_main(Session* s) {
  // Started from a goroutine, the thread inherits its M's binding (one CPU with NUGO_BIND=pu):
  // it would compete with that P alone. Any CPU the process may use will do: those it started
  // with (Topology::real_cpus), not every CPU, which would leave a taskset or numactl mask.
  if (!s->cpus.empty()) {
    const int top = *std::max_element(s->cpus.begin(), s->cpus.end());
    cpu_set_t* allowed = CPU_ALLOC(top + 1);
    const std::size_t bytes = CPU_ALLOC_SIZE(top + 1);
    CPU_ZERO_S(bytes, allowed);
    for (int cpu : s->cpus) CPU_SET_S(cpu, bytes, allowed);
    sched_setaffinity(0, bytes, allowed);
    CPU_FREE(allowed);
  }
  for (;;) {
    bool exiting = s->writer_exit.load(std::memory_order_acquire);
    TraceBuf* list = s->full.exchange(nullptr, std::memory_order_acquire);
    s->nfull.store(0, rlx);
    TraceBuf* ordered = nullptr;  // oldest first (the order does not matter to the merge)
    while (list) {
      TraceBuf* next = list->next;
      list->next = ordered;
      ordered = list;
      list = next;
    }
    for (TraceBuf* b = ordered; b;) {
      TraceBuf* next = b->next;
      write_chunk(s, b);
      s->events_recorded += b->records;
      s->put_buffer(b);
      b = next;
    }
    if ((s->events_recorded * kJsonBytesPerEvent > s->max_bytes || s->write_errno) &&
        !s->capped.exchange(true)) {
      trace_on.store(false, sc);  // stop() collects what the Ms hold
      if (s->write_errno)
        std::fprintf(stderr, "nugo: trace: cannot write the temporary file beside %s: %s; "
                     "recording stopped\n", s->path.c_str(), std::strerror(s->write_errno));
      else
        std::fprintf(stderr, "nugo: trace: the cap of %zu bytes (NUGO_TRACE_MAX) is reached "
                     "after %llu events; recording stopped, %s ends there\n", s->max_bytes,
                     static_cast<unsigned long long>(s->events_recorded), s->path.c_str());
    }
    if (exiting) return;
    if (!ordered) s->writer_note.sleep_until(monotonic_ns() + 10'000'000);
    s->writer_note.clear();
  }
}

[[gnu::noinline]] void shared_event(const Event& e) {
  std::lock_guard lock(shared_mu);
  if (!trace_on.load(std::memory_order_acquire) || !cur) return;
  Session* s = cur;
  if (!s->shared || s->shared->full()) {
    if (s->shared) s->push_full(s->shared);
    s->shared = s->get_buffer(kNoM);
  }
  Event r = e;
  r.ts = ticks();  // under the lock: the shared buffer stays in time order
  s->shared->put(r);
}

// The calling thread's M's slot (trace_bind_thread), null on threads that are not Ms.
thread_local TraceSlot* tls_slot NUGO_TLS_IE = nullptr;

// The M's next buffer: the first of this trace, or a fresh one for a full one.
[[gnu::noinline]] TraceBuf* next_buffer(TraceSlot* m) {
  TraceBuf* full = m->buf;
  if (!full) m->lent = 0;  // the M's first record of this trace: a loan would be an older trace's
  TraceBuf* next = m->buf = cur->get_buffer(m->m);
  if (full) {
    next->last = full->last;  // the M's clock goes on from there
    cur->push_full(full);
  }
  return next;
}

}  // namespace

void trace_bind_thread(TraceSlot* slot, std::uint32_t m_id) {
  if (slot) {
    slot->m = m_id;
    slot->lent = 0;  // a reused M's loan was its previous thread's
  }
  tls_slot = slot;
}

void trace_event(Ev kind, int p, std::int64_t g, std::uint64_t arg, std::uint32_t x,
                 std::uint8_t b, Stamp stamp) {
  TraceSlot* m = tls_slot;
  if (!m) return shared_event({0, kind, b, static_cast<std::int16_t>(p), x, g, arg});
  // Counted as a lock (virtual time): trace stop spins on TraceSlot::busy, so the quantum's
  // signal must not pause a recorder inside this window (vtime.hpp).
  vtime::lock_taken();
  if (trace_fence_by_membarrier.load(rlx)) {
    m->busy.store(1, rlx);
    std::atomic_signal_fence(sc);
  } else {
    m->busy.exchange(1, sc);
  }
  if (!trace_on.load(std::memory_order_acquire)) [[unlikely]] {
    m->busy.store(0, std::memory_order_release);
    vtime::lock_released();
    return;
  }
  TraceBuf* buf = m->buf;
  if (!buf || buf->full()) [[unlikely]] buf = next_buffer(m);
  const std::uint64_t lent = m->lent;
  const std::uint64_t ts = stamp == Stamp::borrow && lent ? lent : ticks();
  const std::uint64_t at = buf->put({ts, kind, b, static_cast<std::int16_t>(p), x, g, arg});
  m->lent = stamp == Stamp::lend ? at : 0;
  m->busy.store(0, std::memory_order_release);
  vtime::lock_released();
}

namespace {

void close_fds(Session* s) {
  if (s->out_fd >= 0) ::close(s->out_fd);
  if (s->raw_fd >= 0) ::close(s->raw_fd);
  s->out_fd = s->raw_fd = -1;
}

// Opens the trace file and its temporary file, or throws std::runtime_error naming what failed.
void open_files(Session* s) {
  s->out_fd = ::open(s->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (s->out_fd < 0)
    throw std::runtime_error("cannot write the trace to \"" + s->path + "\": " + std::strerror(errno));
  std::string dir = s->path.find('/') == std::string::npos
                        ? std::string(".")
                        : s->path.substr(0, s->path.rfind('/') + 1);
  if (dir.empty()) dir = "/";
  s->raw_fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (s->raw_fd < 0) {  // a file system without O_TMPFILE: a named one, unlinked at once
    std::string tmp = s->path + ".records.XXXXXX";
    s->raw_fd = mkostemp(tmp.data(), O_CLOEXEC);
    if (s->raw_fd >= 0) ::unlink(tmp.c_str());
  }
  if (s->raw_fd < 0) {
    int err = errno;
    close_fds(s);
    throw std::runtime_error("cannot create a temporary file beside \"" + s->path +
                             "\": " + std::strerror(err));
  }
}

void start_locked(const std::string& path, std::size_t max_bytes, const TraceSetup& setup) {
  if (cur) throw std::logic_error("nugo::trace::start: a trace is already being recorded (to " +
                                  cur->path + ")");
  if (max_bytes < Config::kMinTraceMax)
    throw std::invalid_argument("nugo::trace::start: max_bytes=" + std::to_string(max_bytes) +
                                ": expected at least 64k");
  auto s = std::make_unique<Session>();
  s->path = path;
  s->max_bytes = max_bytes;
  open_files(s.get());
  s->p_node = setup.p_node;
  s->node_os = setup.node_os;
  s->mode = setup.mode;
  s->topology = setup.topology;
  s->wait_reasons = setup.wait_reasons;
  s->emulated = setup.emulated;
  s->cpus = setup.cpus;
  for (std::size_t i = 0; i < 2 * s->p_node.size() + 8; ++i)
    s->pool.push_back(s->owned.emplace_back(std::make_unique<TraceBuf>()).get());
  static const bool usable = usable_tsc();
  const bool tsc = usable && !vtime::on();  // in virtual time, ticks() is the virtual clock
  trace_tsc.store(tsc, rlx);
  s->tsc = tsc;
  s->virtual_clock = vtime::on();
  trace_fence_by_membarrier.store(membarrier_ready(), rlx);
  s->ns0 = monotonic_ns();
  s->tick0 = ticks();
  Session* raw = s.get();
  try {
    s->writer = std::thread(writer_main, raw);
  } catch (const std::system_error& e) {
    close_fds(raw);
    throw std::runtime_error(std::string("nugo::trace::start: cannot create the writer thread: ") +
                             e.what());
  }
  {
    std::lock_guard lock(shared_mu);
    cur = s.release();
  }
  trace_on.store(true, sc);
}

// Stops recording and writes the file (with write, else removes it); throws
// std::runtime_error if that failed.
bool stop_locked(bool write, ForEachTraceSlot for_each_slot) {
  if (!cur) return false;
  std::unique_ptr<Session> owned(cur);  // freed however this ends
  Session* s = owned.get();
  trace_on.store(false, sc);
  if (trace_fence_by_membarrier.load(rlx)) {
    // The Ms' StoreLoad fences (see the top of the file). Without them stop() could take a
    // buffer that an M is still writing: no way on.
    long r;
    for (int tries = 0; (r = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) != 0 &&
                        (errno == ENOMEM || errno == EINTR || errno == EAGAIN) && tries < 1000;
         ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (r != 0) fatal("nugo::trace::stop: membarrier failed: %s", std::strerror(errno));
  }
  // Nothing here may throw before cur is cleared: the Session is freed on the way out.
  // What the Ms hold goes on a list through TraceBuf::next (no allocation).
  TraceBuf* partial = nullptr;
  auto keep = [&partial](TraceBuf* b) {
    if (!b) return;
    b->next = partial;
    partial = b;
  };
  // Under the M list's lock, held while waiting: a recording M never takes it.
  for_each_slot(
      [](TraceSlot& m, void* keep_partial) {
        while (m.busy.load(std::memory_order_acquire)) cpu_relax();
        (*static_cast<decltype(keep)*>(keep_partial))(m.buf);
        m.buf = nullptr;
      },
      &keep);
  {
    std::lock_guard lock(shared_mu);
    keep(s->shared);
    s->shared = nullptr;
    cur = nullptr;  // shared_event checks it under the same lock
  }
  s->writer_exit.store(true, std::memory_order_release);
  s->writer_note.wakeup();
  s->writer.join();
  for (TraceBuf* b = partial; b; b = b->next) write_chunk(s, b);
  const std::int64_t ns1 = monotonic_ns();
  const std::uint64_t tick1 = ticks();
  double ns_per_tick = tick1 > s->tick0 ? static_cast<double>(ns1 - s->ns0) /
                                              static_cast<double>(tick1 - s->tick0)
                                        : 1.0;
  if (!trace_tsc.load(rlx)) ns_per_tick = 1.0;
  std::string error;
  try {
    if (!write)
      ::unlink(s->path.c_str());
    else if (s->write_errno)
      error = std::string("cannot write the temporary file: ") + std::strerror(s->write_errno);
    else
      error = convert(*s, ns_per_tick);
  } catch (const std::exception& e) {  // out of memory in the conversion's tables
    error = e.what();
  }
  close_fds(s);
  if (!error.empty()) throw std::runtime_error("nugo::trace: " + s->path + ": " + error);
  return true;
}

}  // namespace

void trace_start(const std::string& path, std::size_t max_bytes, const TraceSetup& setup) {
  std::lock_guard lock(session_mu);
  start_locked(path, max_bytes, setup);
}

bool trace_stop(bool write, ForEachTraceSlot for_each_slot) {
  std::lock_guard lock(session_mu);
  return stop_locked(write, for_each_slot);
}

bool trace_active() {
  std::lock_guard lock(shared_mu);
  return cur != nullptr;
}

void trace_stop_run(ForEachTraceSlot for_each_slot) {
  try {
    trace_stop(true, for_each_slot);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

}  // namespace nugo::detail
