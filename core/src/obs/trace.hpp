// The execution tracer's recording side: what the scheduler calls (core/README.md, "Execution
// tracer"). Each call site is one relaxed load and a predicted branch while no trace is being
// recorded; while one is, trace_event appends a 16- or 32-byte record to the calling M's buffer
// (trace.cpp) without a lock or an allocation, and trace_json.cpp turns the records into
// Chrome trace-event JSON when the trace stops.
//
// Call sites run on g0, or on a goroutine's stack inside NoPreempt: the record goes to the
// buffer of the calling thread's M (its TraceSlot, bound by mstart), which must stay that
// goroutine's M until it is written. Never from a signal handler (the handler could interrupt
// a record half written).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nugo::detail {

struct TraceBuf;  // trace_file.hpp

// An M's recording state (M::trace, m.hpp): its buffer, and the flag it raises while writing a
// record there, which stop() waits on before taking the buffer (for_each_trace_slot,
// views.hpp). lent: the time a go_stop lent to the go_start the scheduler writes next
// (Stamp, below), 0 for none; the scheduler's paths that can wait clear it (trace_end_loan).
struct TraceSlot {
  std::atomic<std::uint32_t> busy{0};
  TraceBuf* buf = nullptr;
  std::uint64_t lent = 0;
  std::uint32_t m = 0;  // the M's id, which its buffers carry
};

// The calling thread's slot from now on (mstart: its M's, with the M's id), or none (null).
void trace_bind_thread(TraceSlot* slot, std::uint32_t m_id);

// What a record says. `g`, `arg`, `x` and `b` are the fields of Event (trace_file.hpp).
enum class Ev : std::uint8_t {
  go_create,      // g created by goroutine arg (0: a thread outside nugo); x: its home node index
  go_start,       // g starts running on p (execute); x: its home node index
  go_stop,        // g leaves p; b: StopWhy; x: its WaitReason when it blocked
  go_unblock,     // g made runnable by goroutine arg (0: the runtime, b says which side)
  steal,          // p took x goroutines from P arg's run queue; g: the one it runs; b: 1 if remote
  syscall_enter,  // g enters a system call on p, keeping its M
  syscall_exit,   // g returns from it on p (-1: no P free; it queues and waits for one); x: home
  handoff,        // p, left by goroutine g (0: the one that entered a system call on p, as
                  // sysmon records it) in a system call, is given to another M or idled
  proc_start,     // p attaches to the M (acquirep)
  proc_stop,      // p detaches from the M (releasep)
  m_park,         // the M sleeps with no P (stopm)
  m_unpark,       // and wakes with one
  timer_fire,     // p ran x due timers
  poll,           // the network poller readied x goroutines; b: PollFrom
};
inline constexpr Ev kLastEv = Ev::poll;

// A record's time. Most records read the clock; a go_stop that the scheduler follows at once
// with the next start on the same M, with nothing between but the primitive's unlock and a
// pop from the local run queue (goexit0, park_m, goyield_m), lends its time to that go_start,
// which borrows it: one clock read for the two (an rdtsc is 13 ns on the development VM).
// Any other record on the M, and every step that can wait or enter the kernel before the
// start (the domain's lock, stealing, sleeping, waking an M: trace_end_loan), takes the loan
// back (TraceSlot::lent).
enum class Stamp : std::uint8_t { own, lend, borrow };

enum class StopWhy : std::uint8_t { end, yield, preempt_signal, preempt_cooperative, block };
enum class UnblockBy : std::uint8_t { goroutine, scheduler, thread };  // who called goready
enum class PollFrom : std::uint8_t { findrunnable, idle_m, sysmon };

extern std::atomic<bool> trace_on;

void trace_event(Ev kind, int p, std::int64_t g, std::uint64_t arg, std::uint32_t x,
                 std::uint8_t b, Stamp stamp = Stamp::own);

inline bool tracing() { return trace_on.load(std::memory_order_relaxed); }

inline void traceev(Ev kind, int p, std::int64_t g, std::uint64_t arg = 0, std::uint32_t x = 0,
                    std::uint8_t b = 0, Stamp stamp = Stamp::own) {
  if (tracing()) [[unlikely]] trace_event(kind, p, g, arg, x, b, stamp);
}

struct TraceSetup;  // views.hpp
// Calls visit(slot, arg) for the trace slot of every M, with the M list's lock held: no M is
// made or freed meanwhile (a recording M never takes that lock). The scheduler's
// for_each_trace_slot (sched/inspect.cpp), handed to the tracer's stop.
using ForEachTraceSlot = void (*)(void (*visit)(TraceSlot& slot, void* arg), void* arg);

// Starts recording into path (at most max_bytes of JSON) for a run the scheduler describes in
// setup; throws std::logic_error if a trace is on, std::invalid_argument for a cap below
// Config::kMinTraceMax, std::runtime_error naming a file that cannot be written.
void trace_start(const std::string& path, std::size_t max_bytes, const TraceSetup& setup);
// Stops recording (waiting for each M's record in progress, through the scheduler's
// for_each_slot) and writes the file, or removes it unless write; false if no trace was on;
// throws std::runtime_error naming what failed.
bool trace_stop(bool write, ForEachTraceSlot for_each_slot);
bool trace_active();

// run() starts a trace from Config::trace_path with trace_start before the main goroutine
// exists, and stops whatever trace is on once every M has been joined (runtime.cpp); this
// stop reports a failure on stderr.
void trace_stop_run(ForEachTraceSlot for_each_slot);

}  // namespace nugo::detail
