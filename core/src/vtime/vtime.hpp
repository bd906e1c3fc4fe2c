// Virtual time: the runtime's own threads on a virtual many-CPU machine, one at a time, in the
// order of their virtual clocks (core/src/vtime/README.md is the design essay).
//
// The room is the lowest of core/src: base's locks and futex call its hooks, and it needs
// nothing of base. The engine is vtime.cpp, the cost model costs.hpp. Built only with -DNUGO_VIRTUAL_TIME=ON and switched on by NUGO_VIRTUAL, which config.cpp
// parses once into Config::VirtualTime: start() takes that record, and everything else reads
// what the engine reports. Every other build sees the inline stubs below: on() is a constant
// false, and each hook folds away, so a normal build does not pay for the mode.
//
// The model, in brief. Every thread of the runtime (each M, and sysmon) is a member with a
// virtual clock. Exactly one member runs at a time: it holds the turn. When it waits (a futex
// wait, the one place where the runtime sleeps), spins (a yield or a nap) or has run a quantum
// of its clock (at a checkpoint, or stopped by the watchdog's signal), its clock advances by
// the CPU time it used, and the turn goes to the member that can go on earliest in virtual
// time: the ready member with the smallest clock, or a waiting member whose deadline comes
// first (conservative discrete-event order; ties go to the older member). A wake-up makes its
// waiter ready at the waker's time plus the cost of a wake-up. Threads that are not members
// (the program's main thread, the tracer's writer, a foreign thread, a member inside a system
// call) run outside virtual time, as before, and see the clock of the latest turn.
#pragma once

#include <atomic>
#include <cstdint>

#include "nugo/virtual_time.hpp"  // the settings of a run (Config::virtual_time)
#include "nugo/topology.hpp"  // the cost model's distances

namespace nugo::detail::vtime {

struct Member;

// What the cost model charges for (charge): a steal's reads of the victim's run queue, a
// take from a global queue, a goroutine's state moving to the P that runs it next, an M's
// wake-up across Ps, and what a program charges itself (nugo::charge_virtual_time: the
// workloads' memory-latency model). vtime/README.md, "The cost model".
enum class Cost { steal, queue, migrate, wake, program };
inline constexpr int kCosts = 5;
inline constexpr const char* kCostNames[kCosts] = {"steal", "queue", "migrate", "wake", "program"};

// What a finished or running virtual run did, for the statistics: its settings as they ran
// (the wake-up's latency measured if it was not set), and its counts.
struct Report {
  std::int64_t quantum_ns = 0, wake_ns = 0;
  std::int64_t line_ns = 0, remote_line_ns = 0;  // the cost model's prices
  std::int64_t end_ns = 0;     // the latest clock a turn was granted at (so far)
  std::uint64_t turns = 0;     // turns granted to a member other than the one giving it up
  std::uint64_t quanta = 0;    // turns given up because a quantum was used
  std::uint64_t paused_by_signal = 0;  // of those, where the quantum's signal found the thread
  std::uint64_t timed_out = 0;  // waits that ended at their deadline
  int peak_members = 0;
  int first_turn_members = 0;  // the members there were when the first turn was granted
  std::int64_t charged_ns[kCosts] = {};  // the cost model's charges, by Cost
  // A hash over every turn granted, in order (the member's creation order and the clock the
  // turn began at): two runs with equal fingerprints granted the same turns at the same
  // clocks. order_fingerprint hashes the members alone: the same interleaving, at any clocks.
  std::uint64_t fingerprint = 0, order_fingerprint = 0;
};

#if NUGO_VIRTUAL_TIME

namespace internal {
extern std::atomic<bool> enabled;
// The cost model's price of a line, by pair of node indexes (costs.hpp, line_costs), row-major:
// set by start() before enabled, constant until stop().
extern const std::int64_t* line_prices;
extern int line_nodes;
// The runtime locks (Lock, SpinLock, spin_lock) the thread holds: the quantum's signal pauses
// a thread only while it holds none (a waiter would spin or sleep for a thread that waits for
// its turn behind it).
inline thread_local int locks_held __attribute__((tls_model("initial-exec"))) = 0;
}
// Ordered against the quantum's handler on the same thread, as NoPreempt's count is.
inline void lock_taken() {
  ++internal::locks_held;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
inline void lock_released() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  --internal::locks_held;
}
inline bool holds_locks() { return internal::locks_held != 0; }
inline bool on() { return internal::enabled.load(std::memory_order_relaxed); }

// Starts virtual time for a run of settings on topology t (the caller is not a member):
// measures what the settings leave to measurement, prices a cache line between t's nodes, and
// installs the quantum's signal. pausable(uc) says whether a member that the signal
// interrupted at uc may wait for its next turn right there (sched/preempt.cpp: in a
// goroutine's own code, holding no lock); else it gives up its turn at its next hook.
void start(const VirtualTime& settings, const topo::Topology& t, bool (*pausable)(const void* uc));
// Opens the turn: until then no member is granted one, so that the runtime's first members
// (sysmon, the first M) are all made before any of them runs, and start at the same clock
// whatever the real time their creator took between them.
void open();
// After the last member left (run() joined them): the clock is the real one again until the
// next start(), which goes on from the virtual time this run ended at.
void stop();
Report report();
// The quantum's signal (blocked in the preemption's handler, which it must not interrupt).
int quantum_signal();

// The creator's half of a new member thread: its record, ready at the creator's time plus
// a wake-up's latency (the creator's own cost, the clone, is in its CPU time). The new thread
// calls attach first, which moves it to the members' one real CPU and waits for its turn.
Member* prepare_member();
void attach(Member* m);
// The calling member leaves: it gives up its turn for good (the last thing a thread does).
void detach();
bool member();

// The clock: a member's virtual clock, anyone else's the clock of the latest turn.
std::int64_t now();
// A cheap lower bound of now() (the last value the member was shown; no clock read): the stamp
// of a goroutine made runnable (sched/g.hpp), which a thief's clock is moved forward to.
std::int64_t stamp();

// The futex, emulated for members (base/futex.cpp calls these when on()). wait returns when
// woken, at the deadline (0: none; virtual nanoseconds), or at once if *addr != expected.
void wait(std::atomic<std::uint32_t>* addr, std::uint32_t expected, std::int64_t deadline_ns);
void wake(std::atomic<std::uint32_t>* addr, int count);
// A non-member's kernel wait on addr, which wake must then also wake in the kernel.
void wait_outside(std::atomic<std::uint32_t>* addr, std::uint32_t expected,
                  std::int64_t deadline_ns);

// A spin loop's turn: lets any member whose clock is earlier run first.
void yield();
// Sleeps ns of virtual time (a member with nothing to do for a while).
void nap(std::int64_t ns);
// Gives up the turn if the quantum is used up (called where no lock is held: schedule, the
// end of runtime code, the last unlock of a thread lock).
void checkpoint();
bool quantum_due();
// Adds a modelled cost (ns >= 0) to the calling member's clock; a non-member's is not charged.
void charge(std::int64_t ns, Cost what);
// The virtual ns a cache line costs from node index `from` to `to` (costs.hpp), 0 when either
// is unknown (-1).
inline std::int64_t line_price(int from, int to) {
  if (!on() || from < 0 || to < 0) return 0;
  return internal::line_prices[from * internal::line_nodes + to];
}
// Charges `lines` cache lines moved from node index `from` to `to` (costs.hpp says how many
// each event moves).
inline void charge_lines(int from, int to, std::int64_t lines, Cost what) {
  if (const std::int64_t ns = line_price(from, to)) charge(lines * ns, what);
}
// Moves the calling member's clock forward to t if it is behind: it takes something (a P, a
// goroutine) that another member released at virtual time t, and cannot have it earlier.
void advance_to(std::int64_t t);
// A blocking system call: the member leaves virtual time (and the members' CPU: it may run on
// any of the process's meanwhile), and comes back with its clock advanced by the real time it
// spent outside.
void leave();
void rejoin();

#else

inline bool on() { return false; }
inline void lock_taken() {}
inline void lock_released() {}
inline bool holds_locks() { return false; }
inline std::int64_t now() { return 0; }
inline std::int64_t stamp() { return 0; }
inline bool member() { return false; }
inline void wait(std::atomic<std::uint32_t>*, std::uint32_t, std::int64_t) {}
inline void wake(std::atomic<std::uint32_t>*, int) {}
inline void wait_outside(std::atomic<std::uint32_t>*, std::uint32_t, std::int64_t) {}
inline void yield() {}
inline void nap(std::int64_t) {}
inline void checkpoint() {}
inline bool quantum_due() { return false; }
inline void charge(std::int64_t, Cost) {}
inline std::int64_t line_price(int, int) { return 0; }
inline void charge_lines(int, int, std::int64_t, Cost) {}
inline void advance_to(std::int64_t) {}
inline void leave() {}
inline void rejoin() {}
inline Report report() { return {}; }
inline void start(const VirtualTime&, const topo::Topology&, bool (*)(const void*)) {}
inline void open() {}
inline void stop() {}
inline Member* prepare_member() { return nullptr; }
inline void attach(Member*) {}
inline void detach() {}
inline int quantum_signal() { return 0; }

#endif

}  // namespace nugo::detail::vtime
