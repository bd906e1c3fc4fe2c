// The execution tracer (nugo/trace.hpp; core/README.md, "Execution tracer").
//
// Recording. Each M appends 32-byte records to a buffer of its own (M::trace_buf), which only
// its thread writes, with plain stores. A full buffer goes on a lock-free stack for the writer
// thread, which appends it to a temporary file beside the trace (unlinked at once) and puts it
// back in the pool; the M takes a fresh buffer from the pool, under a mutex, once every
// kEvents records, allocating only while the pool is empty. Threads without an M (sysmon, threads
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
// Writing. A buffer holds one M's records in time order, so the temporary file is a sequence of
// sorted runs. stop() merges the runs by timestamp (a heap over them, the file mapped, not
// read) and writes the JSON in one pass, in time order: each track's events are monotonic,
// and a run slice's end comes after its begin. The merge also pairs what the runtime records
// apart: an unblock with the start of the goroutine it readied (a flow arrow), a goroutine's
// slice with the P it ran on when a system call took that P away.
#include "trace.hpp"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
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
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "g.hpp"
#include "m.hpp"
#include "nugo/syscall.hpp"
#include "nugo/trace.hpp"
#include "preempt.hpp"
#include "fatal.hpp"
#include "proc.hpp"

namespace nugo::detail {

std::atomic<bool> trace_on{false};

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

namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;

// A record's JSON is about 130 bytes, flows and slice ends included; recording stops when the
// records so far would make a file of the cap at this rate. The conversion enforces the cap
// exactly (Session::json_cap).
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
  return trace_tsc.load(rlx) ? __rdtsc() : static_cast<std::uint64_t>(monotonic_ns());
}

bool membarrier_ready() {
  static const bool ok =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return ok;
}

struct Session {
  std::string path;
  std::size_t max_bytes = 0;
  int out_fd = -1;
  int raw_fd = -1;
  std::uint64_t raw_bytes = 0;
  std::uint64_t tick0 = 0;
  std::int64_t ns0 = 0;

  // What the conversion needs of the runtime, taken at start: P id -> its node's OS number,
  // node index -> OS number, and a description.
  std::vector<int> p_node;
  std::vector<int> node_os;
  std::string mode, topology;
  bool emulated = false;
  std::vector<int> cpus;  // the CPUs the process may run on (the writer's affinity)

  std::thread writer;
  Note writer_note;
  std::atomic<bool> writer_exit{false};
  std::atomic<TraceBuf*> full{nullptr};
  std::atomic<int> nfull{0};
  std::uint64_t events_recorded = 0;  // the writer's count
  std::atomic<bool> capped{false};
  int write_errno = 0;  // the writer's first failure

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

void write_all(int fd, const void* data, std::size_t n, int* err) {
  const char* p = static_cast<const char*>(data);
  while (n > 0 && *err == 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno != EINTR) *err = errno;
      continue;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_chunk(Session* s, const TraceBuf* b) {
  if (b->n == 0 || s->write_errno) return;
  std::uint32_t header[4] = {kChunkMagic, b->m, b->n, 0};
  write_all(s->raw_fd, header, sizeof header, &s->write_errno);
  write_all(s->raw_fd, b->ev, b->n * sizeof(Event), &s->write_errno);
  s->raw_bytes += sizeof header + b->n * sizeof(Event);
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
      s->events_recorded += b->n;
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

void shared_event(const Event& e) {
  std::lock_guard lock(shared_mu);
  if (!trace_on.load(std::memory_order_acquire) || !cur) return;
  Session* s = cur;
  if (!s->shared || s->shared->n == kEvents) {
    if (s->shared) s->push_full(s->shared);
    s->shared = s->get_buffer(kNoM);
  }
  Event& r = s->shared->ev[s->shared->n++];
  r = e;
  r.ts = ticks();  // under the lock: the shared buffer stays in time order
}

}  // namespace

void trace_event(Ev kind, int p, std::int64_t g, std::uint64_t arg, std::uint32_t x,
                 std::uint8_t b) {
  M* m = getm();
  if (!m) return shared_event({0, kind, b, static_cast<std::int16_t>(p), x, g, arg});
  if (trace_fence_by_membarrier.load(rlx)) {
    m->trace_busy.store(1, rlx);
    std::atomic_signal_fence(sc);
  } else {
    m->trace_busy.exchange(1, sc);
  }
  if (!trace_on.load(std::memory_order_acquire)) [[unlikely]] {
    m->trace_busy.store(0, std::memory_order_release);
    return;
  }
  TraceBuf* buf = m->trace_buf;
  if (!buf || buf->n == kEvents) [[unlikely]] {
    if (buf) cur->push_full(buf);
    buf = m->trace_buf = cur->get_buffer(static_cast<std::uint32_t>(m->id));
  }
  buf->ev[buf->n] = {ticks(), kind, b, static_cast<std::int16_t>(p), x, g, arg};
  ++buf->n;
  m->trace_busy.store(0, std::memory_order_release);
}

// ---- conversion: the temporary file's runs, merged, to Chrome trace-event JSON ----

namespace {

constexpr int kThreadsPid = 1000;    // the process holding the M tracks
constexpr int kOtherTid = 1000000;   // sysmon and threads outside nugo

// Chrome's reserved colour names (chrome://tracing honours "cname"; Perfetto colours by name).
constexpr const char* kNodeColours[] = {"thread_state_running", "rail_response", "rail_animation",
                                        "bad",  "yellow", "olive", "rail_load", "grey"};

const char* stop_why(std::uint8_t b) {
  switch (static_cast<StopWhy>(b)) {
    case StopWhy::end: return "end";
    case StopWhy::yield: return "yield";
    case StopWhy::preempt_signal: return "preempted";
    case StopWhy::preempt_cooperative: return "preempted";
    case StopWhy::block: return "block";
  }
  return "?";
}

class JsonOut {
 public:
  JsonOut(int fd, std::uint64_t cap) : fd_(fd), cap_(cap) { buf_.reserve(kFlush + 4096); }
  // Appends one event object; false once the file has reached the cap (nothing appended).
  bool event(const std::string& obj) {
    if (written_ + buf_.size() + obj.size() + 2 > cap_) return false;
    if (!first_) buf_ += ",\n";
    first_ = false;
    buf_ += obj;
    ++events_;
    if (buf_.size() >= kFlush) flush();
    return true;
  }
  void raw(const std::string& s) {
    buf_ += s;
    if (buf_.size() >= kFlush) flush();
  }
  void flush() {
    write_all(fd_, buf_.data(), buf_.size(), &err_);
    written_ += buf_.size();
    buf_.clear();
  }
  int error() const { return err_; }
  std::uint64_t events() const { return events_; }

 private:
  static constexpr std::size_t kFlush = 1 << 20;
  int fd_;
  std::uint64_t cap_;
  std::uint64_t written_ = 0;
  std::uint64_t events_ = 0;
  bool first_ = true;
  int err_ = 0;
  std::string buf_;
};

std::string fmt(const char* f, auto... args) {
  char small[512];
  int n = std::snprintf(small, sizeof small, f, args...);
  if (n < static_cast<int>(sizeof small)) return std::string(small, static_cast<std::size_t>(n));
  std::string big(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(big.data(), big.size(), f, args...);
  big.resize(static_cast<std::size_t>(n));
  return big;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt("\\u%04x", c);
      continue;
    }
    out += c;
  }
  return out + "\"";
}

class Converter {
 public:
  Converter(const Session& s, JsonOut& out, double ns_per_tick)
      : s_(s), out_(out), ns_per_tick_(ns_per_tick), open_(s.p_node.size()),
        in_syscall_(s.p_node.size(), 0) {}

  void metadata(const std::vector<std::uint32_t>& ms, bool other) {
    std::vector<int> nodes = s_.p_node;
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (int node : nodes) {
      meta(node, -1, "process_name", fmt("node %d", node));
      meta(node, -1, "process_sort_index", "", node);
    }
    for (std::size_t p = 0; p < s_.p_node.size(); ++p) {
      meta(s_.p_node[p], static_cast<int>(p), "thread_name", fmt("P%zu", p));
      meta(s_.p_node[p], static_cast<int>(p), "thread_sort_index", "", static_cast<int>(p));
    }
    meta(kThreadsPid, -1, "process_name", "threads (Ms without a P)");
    meta(kThreadsPid, -1, "process_sort_index", "", kThreadsPid);
    for (std::uint32_t m : ms) meta(kThreadsPid, static_cast<int>(m), "thread_name", fmt("M%u", m));
    if (other) meta(kThreadsPid, kOtherTid, "thread_name", "sysmon and other threads");
  }

  // False once the file is full.
  bool event(const Event& e, std::uint32_t m) {
    last_ts_ = e.ts;
    const std::string ts = when(e.ts);
    const bool on_p = e.p >= 0 && static_cast<std::size_t>(e.p) < open_.size();
    const int pid = on_p ? s_.p_node[e.p] : kThreadsPid;
    const int tid = on_p ? e.p : m == kNoM ? kOtherTid : static_cast<int>(m);
    const long long g = e.g;
    switch (e.kind) {
      case Ev::go_create:
        return instant("go create", pid, tid, ts,
                       fmt("\"g\":%lld,\"parent\":%llu,\"home\":%d", g,
                           static_cast<unsigned long long>(e.arg), home_os(e.x)));
      case Ev::go_start:
        if (!on_p) return true;
        return begin(e.p, g, e.x, ts, nullptr);
      case Ev::go_stop: {
        if (!on_p) return true;
        std::string args = fmt("\"why\":\"%s\"", stop_why(e.b));
        if (static_cast<StopWhy>(e.b) == StopWhy::block)
          args += ",\"reason\":" + json_string(to_string(static_cast<WaitReason>(e.x)));
        if (!end(e.p, g, ts, args)) return false;
        if (static_cast<StopWhy>(e.b) == StopWhy::end) pending_.erase(g);  // ids are not reused
        bool by_signal = static_cast<StopWhy>(e.b) == StopWhy::preempt_signal;
        if (by_signal || static_cast<StopWhy>(e.b) == StopWhy::preempt_cooperative)
          return instant("preempt", pid, tid, ts,
                         fmt("\"g\":%lld,\"by\":\"%s\"", g, by_signal ? "signal" : "cooperative"));
        return true;
      }
      case Ev::go_unblock: {
        const char* by = e.arg ? "goroutine"
                         : static_cast<UnblockBy>(e.b) == UnblockBy::scheduler
                             ? "scheduler (timer or poller)"
                             : "sysmon or a thread outside nugo";
        if (!instant("unblock", pid, tid, ts,
                     fmt("\"g\":%lld,\"by\":\"%s\",\"waker\":%llu", g, by,
                         static_cast<unsigned long long>(e.arg))))
          return false;
        // An arrow from the waker's slice to the woken goroutine's next start.
        if (e.arg && on_p && open_[e.p].on && open_[e.p].g == static_cast<std::int64_t>(e.arg))
          return flow_start("unblock", pid, tid, ts, g);
        return true;
      }
      case Ev::steal: {
        const int victim = static_cast<int>(e.arg);
        const bool remote = e.b != 0;
        const int vnode = victim < static_cast<int>(s_.p_node.size()) ? s_.p_node[victim] : -1;
        if (!instant(remote ? "steal (remote)" : "steal", pid, tid, ts,
                     fmt("\"g\":%lld,\"victim\":\"P%d\",\"victim_node\":%d,\"n\":%u,\"remote\":%s",
                         g, victim, vnode, e.x, remote ? "true" : "false")))
          return false;
        // Across nodes, an arrow from the victim's running slice to the thief's next one.
        if (remote && vnode >= 0 && open_[victim].on)
          return flow_start("remote steal", vnode, victim, ts, g);
        return true;
      }
      case Ev::syscall_enter:
        if (on_p) in_syscall_[e.p] = g;
        return instant("syscall", pid, tid, ts, fmt("\"g\":%lld", g));
      case Ev::syscall_exit: {
        if (!instant(on_p ? "syscall exit" : "syscall exit (no P)", pid, tid, ts,
                     fmt("\"g\":%lld", g)))
          return false;
        if (!on_p) return end_anywhere(g, ts, "\"why\":\"syscall\"");
        if (open_[e.p].on && open_[e.p].g == g) return true;  // it kept its P
        return begin(e.p, g, e.x, ts, "syscall");           // it resumes on another one
      }
      case Ev::handoff: {
        // sysmon records no goroutine: the one whose system call entered on this P. Only its
        // slice ends (on another CPU's clock, the next goroutine's start on this P may sort
        // before the handoff).
        if (!on_p) return true;
        std::int64_t in_call = g ? g : in_syscall_[e.p];
        if (open_[e.p].on && open_[e.p].g == in_call &&
            !end(e.p, in_call, ts, "\"why\":\"syscall\""))
          return false;
        return instant("handoff", pid, tid, ts, fmt("\"g\":%lld,\"reason\":\"syscall\"",
                                                    static_cast<long long>(in_call)));
      }
      case Ev::proc_start:
        return instant("P start", pid, tid, ts, "");
      case Ev::proc_stop:
        return instant("P stop", pid, tid, ts, "");
      case Ev::m_park:
        return instant("M park", pid, tid, ts, "");
      case Ev::m_unpark:
        return instant("M unpark", pid, tid, ts, "");
      case Ev::timer_fire:
        return instant("timers", pid, tid, ts, fmt("\"n\":%u", e.x));
      case Ev::poll:
        return instant("netpoll", pid, tid, ts, fmt("\"n\":%u,\"from\":\"%s\"", e.x,
                       e.b == 0 ? "findrunnable" : e.b == 1 ? "idle M" : "sysmon"));
    }
    return true;
  }

  // Slices still open when the trace stops end there.
  void finish() {
    const std::string ts = when(last_ts_);
    for (std::size_t p = 0; p < open_.size(); ++p)
      if (open_[p].on) end(static_cast<int>(p), open_[p].g, ts, "\"why\":\"trace stopped\"", true);
  }

  std::uint64_t repaired() const { return repaired_; }

 private:
  struct Open {
    bool on = false;
    std::int64_t g = 0;
  };

  std::string when(std::uint64_t t) const {
    std::uint64_t ns = t > s_.tick0 ? static_cast<std::uint64_t>(
                                          static_cast<double>(t - s_.tick0) * ns_per_tick_)
                                    : 0;
    return fmt("%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
               static_cast<unsigned long long>(ns % 1000));
  }

  int home_os(std::uint32_t index) const {
    return index < s_.node_os.size() ? s_.node_os[index] : -1;
  }

  void meta(int pid, int tid, const char* name, const std::string& value, int sort = 0) {
    std::string obj = fmt("{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d", name, pid);
    if (tid >= 0) obj += fmt(",\"tid\":%d", tid);
    obj += value.empty() ? fmt(",\"args\":{\"sort_index\":%d}}", sort)
                         : ",\"args\":{\"name\":" + json_string(value) + "}}";
    out_.event(obj);
  }

  bool instant(const char* name, int pid, int tid, const std::string& ts, const std::string& args) {
    return out_.event(fmt("{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%s,\"pid\":%d,"
                          "\"tid\":%d,\"args\":{%s}}", name, ts.c_str(), pid, tid, args.c_str()));
  }

  bool flow_start(const char* name, int pid, int tid, const std::string& ts, std::int64_t g) {
    std::uint64_t id = next_flow_++;
    pending_[g].push_back({id, name});
    return out_.event(fmt("{\"name\":\"%s\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%llu,\"ts\":%s,"
                          "\"pid\":%d,\"tid\":%d}", name, static_cast<unsigned long long>(id),
                          ts.c_str(), pid, tid));
  }

  bool begin(int p, std::int64_t g, std::uint32_t home, const std::string& ts, const char* after) {
    if (open_[p].on) {  // cannot happen with consistent records; end it rather than nest
      ++repaired_;
      if (!end(p, open_[p].g, ts, "\"why\":\"unknown\"")) return false;
    }
    if (!end_anywhere(g, ts, "\"why\":\"moved\"")) return false;
    const int pid = s_.p_node[p];
    std::string obj = fmt("{\"name\":\"G%lld\",\"cat\":\"goroutine\",\"ph\":\"B\",\"ts\":%s,"
                          "\"pid\":%d,\"tid\":%d,\"cname\":\"%s\",\"args\":{\"g\":%lld,\"home\":%d",
                          static_cast<long long>(g), ts.c_str(), pid, p,
                          kNodeColours[home % std::size(kNodeColours)], static_cast<long long>(g),
                          home_os(home));
    if (after) obj += fmt(",\"after\":\"%s\"", after);
    if (!out_.event(obj + "}}")) return false;
    open_[p] = {true, g};
    where_[g] = p;
    if (auto it = pending_.find(g); it != pending_.end()) {
      for (const auto& [id, name] : it->second)
        if (!out_.event(fmt("{\"name\":\"%s\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\","
                            "\"id\":%llu,\"ts\":%s,\"pid\":%d,\"tid\":%d}", name,
                            static_cast<unsigned long long>(id), ts.c_str(), pid, p)))
          return false;
      pending_.erase(it);
    }
    return true;
  }

  bool end(int p, std::int64_t g, const std::string& ts, const std::string& args,
           bool force = false) {
    if (!open_[p].on || open_[p].g != g) return true;  // its begin was before the trace started
    std::string obj = fmt("{\"ph\":\"E\",\"ts\":%s,\"pid\":%d,\"tid\":%d,\"args\":{\"g\":%lld,%s}}",
                          ts.c_str(), s_.p_node[p], p, static_cast<long long>(g), args.c_str());
    // The closing events of finish() are written past the cap: without them the file would not
    // balance, and the cap leaves them room (JsonOut's reserve).
    if (!(force ? (out_.raw(",\n" + obj), true) : out_.event(obj))) return false;
    open_[p].on = false;
    where_.erase(g);
    return true;
  }

  bool end_anywhere(std::int64_t g, const std::string& ts, const char* args) {
    auto it = where_.find(g);
    return it == where_.end() || end(it->second, g, ts, args);
  }

  const Session& s_;
  JsonOut& out_;
  double ns_per_tick_;
  std::vector<Open> open_;
  std::vector<std::int64_t> in_syscall_;  // by P: the goroutine of its last syscall_enter
  std::unordered_map<std::int64_t, int> where_;
  struct Pending { std::uint64_t id; const char* name; };
  std::unordered_map<std::int64_t, std::vector<Pending>> pending_;
  std::uint64_t next_flow_ = 1;
  std::uint64_t last_ts_ = 0;
  std::uint64_t repaired_ = 0;
};

// The runs of the temporary file, merged by timestamp into the JSON. Returns the error text,
// empty on success.
std::string convert(Session* s, double ns_per_tick) {
  const std::uint64_t nps = s->p_node.size();
  const std::uint64_t reserve = 4096 + 192 * nps;  // finish()'s slice ends and the trailer
  JsonOut out(s->out_fd, s->max_bytes > reserve ? s->max_bytes - reserve : 0);
  const char* base = nullptr;
  if (s->raw_bytes > 0) {
    void* p = mmap(nullptr, s->raw_bytes, PROT_READ, MAP_PRIVATE, s->raw_fd, 0);
    if (p == MAP_FAILED) return std::string("cannot map the temporary file: ") + std::strerror(errno);
    base = static_cast<const char*>(p);
    madvise(p, s->raw_bytes, MADV_SEQUENTIAL);
  }
  struct Run {
    const Event* at;
    const Event* end;
    std::uint32_t m;
    std::uint64_t floor;  // the run's last timestamp: a thread's clock never goes back
  };
  std::vector<Run> runs;
  std::vector<std::uint32_t> ms;
  bool other = false;
  for (std::uint64_t off = 0; off < s->raw_bytes;) {
    std::uint32_t header[4];
    std::memcpy(header, base + off, sizeof header);
    if (header[0] != kChunkMagic) return "the temporary file is corrupt";
    const Event* first = reinterpret_cast<const Event*>(base + off + sizeof header);
    runs.push_back({first, first + header[2], header[1], 0});
    if (header[1] == kNoM) other = true; else ms.push_back(header[1]);
    off += sizeof header + header[2] * sizeof(Event);
  }
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());

  out.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  Converter conv(*s, out, ns_per_tick);
  conv.metadata(ms, other);
  auto ts_of = [&](std::size_t r) { return std::max(runs[r].at->ts, runs[r].floor); };
  auto later = [&](std::size_t a, std::size_t b) {
    std::uint64_t ta = ts_of(a), tb = ts_of(b);
    return ta != tb ? ta > tb : a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heap(later);
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (runs[r].at != runs[r].end) heap.push(r);
  bool truncated = s->capped.load() && !s->write_errno;
  std::uint64_t events = 0;
  while (!heap.empty()) {
    std::size_t r = heap.top();
    heap.pop();
    Event e = *runs[r].at;
    e.ts = runs[r].floor = ts_of(r);
    ++runs[r].at;
    if (runs[r].at != runs[r].end) heap.push(r);
    if (!conv.event(e, runs[r].m)) {
      truncated = true;
      std::fprintf(stderr, "nugo: trace: %s reached its cap of %zu bytes (NUGO_TRACE_MAX); the "
                   "events after that are left out\n", s->path.c_str(), s->max_bytes);
      break;
    }
    ++events;
  }
  conv.finish();
  if (base) munmap(const_cast<char*>(base), s->raw_bytes);
  out.raw(fmt("\n],\n\"otherData\":{\"generator\":\"nugo\",\"version\":1,\"mode\":\"%s\","
              "\"topology\":%s,\"emulated\":%s,\"procs\":%zu,\"clock\":\"%s\",\"records\":%llu,"
              "\"truncated\":%s,\"repaired\":%llu}}\n",
              s->mode.c_str(), json_string(s->topology).c_str(), s->emulated ? "true" : "false",
              s->p_node.size(), trace_tsc.load(rlx) ? "tsc" : "monotonic",
              static_cast<unsigned long long>(events), truncated ? "true" : "false",
              static_cast<unsigned long long>(conv.repaired())));
  out.flush();
  if (out.error()) return std::string("cannot write it: ") + std::strerror(out.error());
  return {};
}

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

void start_locked(const std::string& path, std::size_t max_bytes) {
  if (cur) throw std::logic_error("nugo::trace::start: a trace is already being recorded (to " +
                                  cur->path + ")");
  if (max_bytes < Config::kMinTraceMax)
    throw std::invalid_argument("nugo::trace::start: max_bytes=" + std::to_string(max_bytes) +
                                ": expected at least 64k");
  auto s = std::make_unique<Session>();
  s->path = path;
  s->max_bytes = max_bytes;
  open_files(s.get());
  const Sched& sc_ = *sched;
  for (const auto& pp : sc_.allp) s->p_node.push_back(sc_.topology.nodes[pp->node].os_index);
  for (const auto& n : sc_.topology.nodes) s->node_os.push_back(n.os_index);
  s->mode = sc_.mode == Mode::numa ? "numa" : "flat";
  s->topology = sc_.cfg.topology.empty() ? "this machine" : sc_.cfg.topology;
  s->emulated = sc_.topology.emulated;
  s->cpus = sc_.topology.real_cpus;
  for (std::size_t i = 0; i < 2 * s->p_node.size() + 8; ++i)
    s->pool.push_back(s->owned.emplace_back(std::make_unique<TraceBuf>()).get());
  static const bool tsc = usable_tsc();
  trace_tsc.store(tsc, rlx);
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
bool stop_locked(bool write) {
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
  {
    NoPreempt np;  // a runtime lock, maybe taken on a goroutine's stack (threadlocks.hpp)
    sched->mlock.lock();  // held while waiting: a recording M never takes it
    for (M* m : sched->allm) {
      while (m->trace_busy.load(std::memory_order_acquire)) cpu_relax();
      keep(m->trace_buf);
      m->trace_buf = nullptr;
    }
    sched->mlock.unlock();
  }
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
      error = convert(s, ns_per_tick);
  } catch (const std::exception& e) {  // out of memory in the conversion's tables
    error = e.what();
  }
  close_fds(s);
  if (!error.empty()) throw std::runtime_error("nugo::trace: " + s->path + ": " + error);
  return true;
}

}  // namespace

void trace_start_run() {
  std::lock_guard lock(session_mu);
  start_locked(sched->cfg.trace_path, sched->cfg.trace_max);
}

void trace_stop_run() {
  std::lock_guard lock(session_mu);
  try {
    stop_locked(true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

}  // namespace nugo::detail

namespace nugo::trace {

namespace {
// The calls below come from goroutines or from threads outside nugo: the instance must not
// go away under them (ForeignCall, read only), and a goroutine should not hold its P through
// the file's writing.
class InRuntime {
 public:
  InRuntime() : call_(detail::ForeignCall::Purpose::read) {
    if (!call_.running())
      throw std::logic_error("nugo::trace: the runtime is not running (call within nugo::run)");
  }

 private:
  detail::ForeignCall call_;
};
}  // namespace

// Runs f as a blocking system call: the goroutine's P goes on without it while files are
// opened or written (nugo::blocking_syscall carries an exception out of the call).
template <class F>
auto outside_p(F f) {
  InRuntime in;
  return blocking_syscall(f);
}

void start(const std::string& path, std::size_t max_bytes) {
  outside_p([&] {
    std::lock_guard lock(detail::session_mu);
    detail::start_locked(path, max_bytes);
    return true;
  });
}

bool stop() {
  return outside_p([] {
    std::lock_guard lock(detail::session_mu);
    return detail::stop_locked(true);
  });
}

bool discard() {
  return outside_p([] {
    std::lock_guard lock(detail::session_mu);
    return detail::stop_locked(false);
  });
}

bool active() {
  std::lock_guard lock(detail::shared_mu);
  return detail::cur != nullptr;
}

}  // namespace nugo::trace
