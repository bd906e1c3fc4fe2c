// What the scheduler hands observing: views of its state, plain values the scheduler takes
// under its own locks (sched/inspect.cpp) and passes to obs's reports, so that the arrows run
// one way, sched -> obs: obs includes no scheduler header and calls no scheduler function
// (obs's include path has none; tests/walls_test.sh checks the relative paths and the closure).
// The public calls that read the scheduler (nugo::stats, nugo::trace::start and stop) live on
// the scheduler's side and hand obs what it formats. obs's own locks still sit in the order:
// the tracer's stop holds its session lock while the scheduler walks the Ms' trace slots under
// the M list's lock, and Ms record under domain locks into buffers guarded by the tracer's.
//
// Go's equivalents read the runtime's structures in place (schedtrace, forEachG, traceback);
// here the scheduler hands out plain values, which obs formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nugo/config.hpp"  // Mode, Bind
#include "stats.hpp"        // PCounters
#include "vtime.hpp"        // vtime::Report
#include "traceback.hpp"    // Traceback

namespace nugo::detail {

// ---- schedtrace (Go's GODEBUG=schedtrace, scheddetail) ----

struct DomainCounts {
  int os_node;       // the node's OS number (-1: flat mode's one domain)
  int idle_ps;       // npidle
  int spinning;      // nmspinning
  int idle_threads;  // nmidle
  int idle_locked;   // nmidlelocked
  int runq;          // the global queue and go_on's pinned queue
};

struct SchedCounts {
  std::int64_t uptime_ms = 0;
  int gomaxprocs = 0;
  int threads = 0;  // mcount
  bool sysmonwait = false;
  std::vector<DomainCounts> domains;  // one in flat mode
  std::vector<std::uint32_t> rings;   // each P's local run queue length, by P id
};

// Taken under every domain's lock at once, as Go's schedtrace takes sched.lock: the node
// groups add up to the totals.

// Statuses in Go's numbering: _Pidle 0, _Prunning 1, _Psyscall 2; _Gidle 0, _Grunnable 1,
// _Grunning 2, _Gsyscall 3, _Gwaiting 4, _Gdead 6.
struct PDetail {
  int id, status;
  std::uint32_t schedtick, syscalltick;
  int m;  // -1: none
  std::uint32_t runq;
  int gfree;
  std::size_t timers;
  int os_node;
};
struct MDetail {
  int id, p;  // p: -1 none
  std::int64_t curg, lockedg;  // goroutine ids, -1 none
  bool spinning;
};
struct GDetail {
  std::int64_t goid;
  int status;
  const char* wait_reason;  // "" unless waiting
  int m, lockedm;           // -1 none
  int home_os_node;
};
struct SchedDetail {
  std::vector<PDetail> ps;
  std::vector<MDetail> ms;
  std::vector<GDetail> gs;  // live goroutines: neither idle nor dead
};

// The P, M and G lines: each list copied under its lock and read without the scheduler's lock,
// as Go's are (a snapshot of moving state, for people).

// ---- statistics (nugo::stats, NUGO_STATS) ----

struct RunView {
  Mode mode = Mode::flat;
  Bind bind = Bind::none;
  std::string numa_policy;  // as NUGO_NUMA spells it; empty in flat mode
  int procs = 0;
  std::uint64_t seed = 0;  // Config::seed
  std::string topology_source;
  bool emulated = false;
  int topology_nodes = 0;
  bool virtual_time = false;  // the engine reports the rest (vtime::report)
  std::int64_t start_ns = 0;                     // nanotime() at run()'s start
  std::int64_t main_return_ns = 0;               // when the main goroutine returned, or 0
  // Virtual time's counts at main's return, once it has returned (else the engine's now).
  std::optional<vtime::Report> clock_at_return;
  std::int64_t now_ns = 0;                       // when the view was taken
  std::vector<int> distances;                    // the distance classes, by index
  struct PView {
    int p, os_node;
    const PCounters* counters;  // valid while the view is
  };
  std::vector<PView> ps;
  struct DomainView {
    int os_node;  // -1: flat mode's domain
    std::uint64_t created_foreign;
  };
  std::vector<DomainView> domains;
};


// ---- the execution tracer ----

struct TraceSetup {
  std::vector<int> p_node;   // each P's node, by OS number
  std::vector<int> node_os;  // the topology's nodes' OS numbers, by index
  std::string mode, topology;
  std::vector<std::string> wait_reasons;  // by number, as records carry them
  bool emulated = false;
  std::vector<int> cpus;  // the real CPUs the run may use (the writer thread's affinity)
};

// ---- tracebacks ----

struct CurrentGoroutine {
  std::int64_t goid;
  const char* stack_lo;  // the goroutine's stack
  const char* stack_hi;
};

}  // namespace nugo::detail
