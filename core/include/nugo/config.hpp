// nugo::Config: what a runtime instance is started with.
//
// Environment variables (Config::from_env): every value has one strict syntax, with no
// spaces on either side and no sign.
//   numbers    decimal digits: NUGO_PROCS=8 (" 8", "8 " and "+8" are refused)
//   sizes      digits and an optional binary unit k, m or g (x1024), in either case, which
//              may be followed by b or ib: 262144, 256k, 256K, 256kb, 256KiB, 1g
//   durations  digits and a unit: ns, us (or µs), ms, s: 500us, 10ms, 1s
// A malformed value is a ConfigError naming the variable. A NUGO_* variable nugo does not
// know (NUGO_PROC for NUGO_PROCS) is ignored with a warning on stderr, once per process,
// naming the nearest known one.
//
// nugo::run(main) reports a bad environment as "nugo: ..." and exits with status 2. A program
// that reads the configuration itself, to change it before run, does the same with
// Config::from_env_or_exit(), or catches the error:
//   nugo::Config cfg = nugo::Config::from_env_or_exit();
//   cfg.detect_deadlock = false;
//   return nugo::run(app, cfg);
// Letting the ConfigError escape main ends the program with std::terminate (status 134).
#pragma once

#include <signal.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "nugo/virtual_time.hpp"

namespace nugo {

// A configuration value (usually an environment variable) was malformed; what() names it.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// How Ps are grouped into scheduling domains (core/README.md, "Domains"; numa/README.md).
enum class Mode {
  automatic,  // numa when the topology has more than one node with CPUs, else flat
  flat,       // one domain holding every P: exactly Go's scheduler
  numa,       // one domain per node with CPUs; stealing prefers the thief's own node
};

// Which CPUs an M may run on while it holds a P.
enum class Bind {
  automatic,  // node in NUMA mode, none in flat mode
  node,       // the CPUs of the P's node (folded onto the real CPUs for an emulated topology)
  pu,         // the single CPU of the P's PU (likewise folded)
  none,       // wherever the process may run
};

// NUMA mode's policies (numa/README.md, "Policies", for what each does and why its default is
// what it is). Env: NUGO_NUMA, comma-separated key=value like NUGO_DEBUG, one key per field.
// They change nothing in flat mode, which is exactly Go's scheduler.
struct NumaPolicy {
  // How much of a remote victim's run queue a thief takes: one G, a quarter or half (a local
  // victim always gives half, as in Go). Key remote_take=1|quarter|half.
  enum class Take { one, quarter, half };
  // Where a goroutine readied by a goroutine running on another node goes: to the waker's P,
  // as in Go, or back to its home node, to run there next (its pinned queue, which no other
  // node's thief takes). Key ready=waker|home.
  enum class Ready { waker, home };
  // Which Ps a thief tries in its four rounds before any other node, and in what order it
  // visits the other nodes after them. nearest: its own node's Ps, then the other nodes
  // grouped by distance, nearest group first (the full hierarchy). node: its own node's Ps,
  // then every other node as one group, in random order (the hierarchy without distance).
  // flat: every P of every node, as Go's thieves do (remote runnexts included, in the last
  // round), then the other nodes by distance. Other nodes' global queues and timers come
  // after the rounds in every case. Key steal=nearest|node|flat. For the ablation that
  // separates placement, the node-first rule and the distance order.
  enum class Steal { nearest, node, flat };
  // Where go_on puts a goroutine: its node's pinned queue, which only that node's Ps take
  // from (it starts there, always), or its node's global queue, from which another node's
  // thief may take it as from any global queue (it starts there unless another node is idle
  // and the stealing rules let that node rob it). Key go_on=pinned|queued.
  enum class GoOn { pinned, queued };

  // A P robs another node only after it has found no work for this long (its own node's
  // queues and Ps were empty every time it looked). Key remote_delay (a duration: 0, 50us).
  std::chrono::nanoseconds remote_delay{0};
  Take remote_take = Take::half;
  Ready ready = Ready::waker;
  // A goroutine stolen across nodes takes the thief's node as its new home. Key adopt=0|1.
  bool adopt = false;
  Steal steal = Steal::nearest;
  GoOn go_on = GoOn::pinned;

  static constexpr std::chrono::nanoseconds kMaxRemoteDelay{100'000'000};  // 100 ms
};

// Every key of p as NUGO_NUMA spells it, in the order of the fields: "remote_delay=0,
// remote_take=half,ready=waker,adopt=0,steal=nearest,go_on=pinned" (what parsing reads back).
std::string to_string(const NumaPolicy& p);

struct Config {
  static constexpr int kMaxProcs = 1024;                      // as Go's _MaxGomaxprocs
  static constexpr std::size_t kMinStack = 16 * 1024;
  static constexpr std::size_t kMaxStack = std::size_t{1} << 30;
  static constexpr std::size_t kDefaultStack = 256 * 1024;

  // Number of Ps (GOMAXPROCS). 0: one per PU of the topology, at most kMaxProcs (an emulated
  // topology may have more PUs; Go caps GOMAXPROCS the same way). Env: NUGO_PROCS.
  int procs = 0;
  // Usable bytes per goroutine stack; lazily committed, so this is address space, not RAM.
  // Env: NUGO_STACK ("256k", "1m", bytes).
  std::size_t stack_size = kDefaultStack;
  // Where the topology comes from: "" (this machine, via hwloc), "xml:<path>" or
  // "synthetic:<hwloc synthetic description>". Env: NUGO_TOPOLOGY.
  std::string topology;
  // Env: NUGO_MODE ("flat", "numa"; unset: automatic).
  Mode mode = Mode::automatic;
  // Env: NUGO_BIND ("node", "pu", "none"; unset: automatic). Ignored in virtual time, whose
  // threads all run on one real CPU (the statistics then say none).
  Bind bind = Bind::automatic;
  // Go's deadlock report ("all goroutines are asleep"), on by default. It cannot see plain
  // threads that will wake a goroutine without having called into nugo yet: turn it off for
  // such programs. Env: NUGO_DEBUG=deadlock=0.
  bool detect_deadlock = true;

  // How long a goroutine may run before sysmon preempts it (Go's forcePreemptNS, 10 ms).
  // Env: NUGO_TIMESLICE ("10ms", "1ms", "200us", "500000ns"), from 20us to 10s.
  static constexpr std::chrono::nanoseconds kMinTimeslice{20'000};  // one sysmon tick
  static constexpr std::chrono::nanoseconds kMaxTimeslice{10'000'000'000};
  std::chrono::nanoseconds timeslice{10'000'000};
  // Signal-based asynchronous preemption (a goroutine in a loop without calls is stopped at
  // the end of its slice). Off: slices end only at scheduling points and preempt_point().
  // Env: NUGO_DEBUG=asyncpreemptoff=1, as Go's GODEBUG.
  bool async_preempt = true;
  // The signal sysmon sends to preempt (Go uses SIGURG). A handler installed for it before
  // run() is still called for every delivery. Env: NUGO_PREEMPT_SIGNAL ("SIGURG", "URG",
  // "SIGUSR2", a number); SIGSEGV, SIGBUS, SIGKILL, SIGSTOP and the like are refused.
  int preempt_signal = SIGURG;
  // Which code the signal may stop a goroutine in (core/README.md, "What is preemptible"). Go
  // preempts only code its compiler prepared; nugo preempts only the program's own code: the
  // main executable's text (less, in an executable linked with -static-libstdc++, the C++
  // runtime inside it, found by name in its symbol table) and the shared objects named here.
  // Every other shared object (libc, libstdc++, allocators such as jemalloc, SQLite, OpenSSL)
  // is never preempted: a goroutine in it runs on until it is back in the program's code.
  // Env: NUGO_PREEMPTIBLE, comma-separated object names: "libfoo" names libfoo.so.1 and
  // libfoo-2.3.so; a name with a '/' is a whole path. The C library, the C++ runtime, the
  // loader and nugo itself are refused: they keep per-thread state.
  std::vector<std::string> preemptible_libraries;
  // Functions of the main executable the signal must not stop either: those whose symbol
  // names begin with one of these prefixes (a library linked in statically, "sqlite3" or
  // "ZSTD_"). Needs the executable's symbol table (not stripped). Env: NUGO_NOPREEMPT_SYMBOLS,
  // comma-separated prefixes.
  std::vector<std::string> nopreempt_symbols;
  // Where the runtime cannot tell the C library's or the C++ runtime's code from the program's
  // (a fully static executable; -static-libstdc++ without a symbol table), it refuses
  // asynchronous preemption at start and says so on stderr. This preempts there all the same:
  // the program vouches that nothing it links keeps per-thread state across a preemption.
  // Env: NUGO_DEBUG=asyncpreemptforce=1.
  bool async_preempt_force = false;

  // NUMA mode's policies. Env: NUGO_NUMA (see NumaPolicy).
  NumaPolicy numa;
  // Where run() writes the scheduler statistics as JSON when it returns (nugo/stats.hpp):
  // "" for nowhere, "-" for stderr, else a file, created or truncated when run() starts (so
  // that a path that cannot be written is reported before anything runs). Env: NUGO_STATS.
  std::string stats_path;
  // Where run() records an execution trace of the whole run (nugo/trace.hpp): "" for no trace,
  // else a file, created or truncated when run() starts and written when it returns. The file
  // stays below trace_max bytes (recording stops there, with a message). Env: NUGO_TRACE and
  // NUGO_TRACE_MAX ("256m", "1g", bytes).
  std::string trace_path;
  std::size_t trace_max = std::size_t{256} << 20;
  static constexpr std::size_t kMinTraceMax = std::size_t{64} << 10;
  // Says on stderr what NUMA mode could not do as asked (memory not bound on an emulated
  // topology). Env: NUGO_DEBUG=numa=1.
  bool debug_numa = false;
  // Go's GODEBUG=schedtrace=MS and scheddetail=1: every so often sysmon prints a SCHED line on
  // stderr (in NUMA mode with a group per node), and with scheddetail a line per P, M and G
  // (core/README.md, "schedtrace"). 0: off. Env: NUGO_DEBUG=schedtrace=MS,scheddetail=1.
  std::chrono::milliseconds schedtrace{0};
  bool scheddetail = false;
  static constexpr std::chrono::milliseconds kMaxSchedtrace{3'600'000};

  // Virtual time (core/src/vtime/README.md): in a build configured with
  // -DNUGO_VIRTUAL_TIME=ON, the runtime's threads run one at a time, in the order of their
  // virtual clocks, so that a machine of hundreds of CPUs (the topology's PUs, or procs) runs
  // on this one and is measured in virtual time. Other builds refuse it. Env: NUGO_VIRTUAL
  // ("on", or quantum=DURATION,wake=DURATION,line=DURATION,remote_line=DURATION,costs=off).
#if NUGO_VIRTUAL_TIME
  static constexpr bool kVirtualTimeBuilt = true;
#else
  static constexpr bool kVirtualTimeBuilt = false;
#endif
  // The settings of a virtual-time run (nugo/virtual_time.hpp).
  using VirtualTime = nugo::VirtualTime;
  VirtualTime virtual_time;

  // The run's seed: every random choice of the scheduler (each M's fastrand, which orders
  // steal victims and select's cases; a thread without an M's) derives from it and from the
  // thread's creation order, never from an address. Recorded in the statistics, so that a run
  // names what it drew from. Env: NUGO_SEED (a whole number).
  std::uint64_t seed = kDefaultSeed;
  static constexpr std::uint64_t kDefaultSeed = 1;

  // Reads NUGO_PROCS, NUGO_STACK, NUGO_TOPOLOGY, NUGO_MODE, NUGO_BIND, NUGO_TIMESLICE,
  // NUGO_PREEMPT_SIGNAL, NUGO_PREEMPTIBLE, NUGO_NOPREEMPT_SYMBOLS, NUGO_NUMA, NUGO_VIRTUAL, NUGO_SEED, NUGO_STATS, NUGO_TRACE, NUGO_TRACE_MAX and NUGO_DEBUG (comma-separated key=value, as
  // GODEBUG: deadlock=0|1, asyncpreemptoff=0|1, asyncpreemptforce=0|1, numa=0|1, schedtrace=MS, scheddetail=0|1);
  // throws ConfigError naming the variable.
  static Config from_env();
  // As from_env, but a malformed variable is printed on stderr ("nugo: NUGO_PROCS=...") and
  // the process exits with status 2, as nugo::run(main) does.
  static Config from_env_or_exit();
  // Throws ConfigError if a field is out of range.
  void validate() const;
};

}  // namespace nugo
