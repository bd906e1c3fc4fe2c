// The tracer's conversion (core/README.md, "Execution tracer"): the temporary file's runs,
// merged by timestamp, to Chrome trace-event JSON, which Perfetto and chrome://tracing read.
// It reads only the file and what trace_file.hpp's TraceFile took at start: nothing of the
// scheduler's state (of its vocabulary, the names of wait reasons).
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <queue>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "trace_file.hpp"

namespace nugo::detail {

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
  Converter(const TraceFile& s, JsonOut& out, double ns_per_tick)
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
          args += ",\"reason\":" + json_string(e.x < s_.wait_reasons.size() ? s_.wait_reasons[e.x] : std::string("?"));
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

  const TraceFile& s_;
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

}  // namespace

std::string convert(const TraceFile& file, double ns_per_tick) {
  const TraceFile* s = &file;
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
  struct Unmap {
    const char* base;
    std::uint64_t bytes;
    ~Unmap() {
      if (base) munmap(const_cast<char*>(base), bytes);
    }
  } unmap{base, s->raw_bytes};
  // A chunk's records come out of it one at a time (ChunkReader), in time order: the
  // recorder never lets a chunk's clock go back.
  struct Run {
    ChunkReader reader;
    Event head;  // the next record
    std::uint32_t m;
  };
  std::vector<Run> runs;
  std::vector<std::uint32_t> ms;
  bool other = false;
  for (std::uint64_t off = 0; off < s->raw_bytes;) {
    ChunkHeader header;
    if (s->raw_bytes - off < sizeof header) return "the temporary file is corrupt";
    std::memcpy(&header, base + off, sizeof header);
    const std::uint64_t bytes = sizeof header + std::uint64_t{header.slots} * sizeof(Slot);
    if (header.magic != kChunkMagic || header.slots == 0 || bytes > s->raw_bytes - off)
      return "the temporary file is corrupt";
    const Slot* first = reinterpret_cast<const Slot*>(base + off + sizeof header);
    Run run{ChunkReader(first, first + header.slots, header.base), {}, header.m};
    if (!run.reader.next(&run.head)) return "the temporary file is corrupt";
    runs.push_back(run);
    if (header.m == kNoM) other = true; else ms.push_back(header.m);
    off += bytes;
  }
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());

  out.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  Converter conv(*s, out, ns_per_tick);
  conv.metadata(ms, other);
  // Equal timestamps go in the order of their Ms' ids (the shared buffer's, kNoM, last), and
  // of one M's chunks in the order they were written (its own time order): never in the order
  // the writer happened to write different threads' chunks.
  auto later = [&](std::size_t a, std::size_t b) {
    std::uint64_t ta = runs[a].head.ts, tb = runs[b].head.ts;
    if (ta != tb) return ta > tb;
    if (runs[a].m != runs[b].m) return runs[a].m > runs[b].m;
    return a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heap(later);
  for (std::size_t r = 0; r < runs.size(); ++r) heap.push(r);
  bool truncated = s->capped.load() && !s->write_errno;
  std::uint64_t events = 0;
  std::string error;
  while (!heap.empty()) {
    std::size_t r = heap.top();
    heap.pop();
    const Event e = runs[r].head;
    if (!runs[r].reader.done()) {
      if (!runs[r].reader.next(&runs[r].head)) {
        error = "the temporary file is corrupt";
        truncated = true;  // the JSON written so far stays valid, and says it is not whole
        break;
      }
      heap.push(r);
    }
    if (!conv.event(e, runs[r].m)) {
      truncated = true;
      std::fprintf(stderr, "nugo: trace: %s reached its cap of %zu bytes (NUGO_TRACE_MAX); the "
                   "events after that are left out\n", s->path.c_str(), s->max_bytes);
      break;
    }
    ++events;
  }
  conv.finish();
  out.raw(fmt("\n],\n\"otherData\":{\"generator\":\"nugo\",\"version\":1,\"mode\":\"%s\","
              "\"topology\":%s,\"emulated\":%s,\"procs\":%zu,\"clock\":\"%s\",\"records\":%llu,"
              "\"truncated\":%s,\"repaired\":%llu}}\n",
              s->mode.c_str(), json_string(s->topology).c_str(), s->emulated ? "true" : "false",
              s->p_node.size(), s->virtual_clock ? "virtual" : s->tsc ? "tsc" : "monotonic",
              static_cast<unsigned long long>(events), truncated ? "true" : "false",
              static_cast<unsigned long long>(conv.repaired())));
  out.flush();
  if (out.error()) return std::string("cannot write it: ") + std::strerror(out.error());
  return error;
}

}  // namespace nugo::detail
