// sysmon: the runtime's monitor thread, after Go's (proc.go: sysmon, retake, preemptone).
//
// A plain thread: no M, no P, never runs goroutines, so it keeps watching when every M is
// busy. Each cycle it looks at every P that is running or in a system call:
//   - a P whose schedtick has not moved for a whole time slice runs one G too long: its slice
//     is ended (pp->preempt) and its M signalled (preempt.cpp);
//   - a P whose M has been in the same system call for a whole cycle is taken back (CAS
//     syscall -> idle) and handed to another M (handoffp), unless there is nothing for it
//     to do and someone is already spinning or idle to pick up new work, and the call is
//     younger than 10 ms;
//   - if goroutines wait for I/O and nobody has polled the network for 10 ms, it polls and
//     queues the goroutines it readied globally.
//
// Sleep between cycles: 20 us, doubled after 50 cycles without taking a P back from a system
// call, up to 10 ms, as in Go (a preemption is not such activity: Go's retake counts only
// hand-offs). But it never sleeps longer than half a slice, and while any P is running it
// also wakes when the earliest slice it watches is due to end. A slice first seen at one
// look began after the previous look, which is taken as its start: slices end on time, or
// early by less than half a slice, never late. So beside a CPU hog sysmon wakes two or three
// times a slice and preempts it one slice after its slice began. That is the departure from
// Go, whose sysmon backs off to 10 ms beside a hog and so preempts it about 20 ms after its
// slice began. A G that the signal finds inside runtime code yields as it leaves it
// (kPreemptAtExit, link.hpp), and one holding a lock of its thread yields at the unlock
// the program makes (threadlocks.hpp). A G the signal finds in code that is not preemptible
// (a library, preempt.cpp; or an unlock made there) is signalled again every 20 us until it
// yields (retake); without asynchronous preemption nothing is repeated, and beside a hog
// sysmon wakes only at its tick, as Go's backs off.
// When every P is idle, sysmon sleeps until acquirep wakes it (sysmonwait).
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "fatal.hpp"
#include "views.hpp"
#include "netpoll.hpp"
#include "preempt.hpp"
#include "signals.hpp"
#include "trace.hpp"
#include "proc.hpp"
#include "schedtrace.hpp"
#include "timer.hpp"

namespace nugo::detail {
namespace {

constexpr std::int64_t kMinDelayNs = 20'000;        // Go: 20 us
constexpr std::int64_t kMaxDelayNs = 10'000'000;    // Go: 10 ms
constexpr int kIdleCyclesBeforeBackoff = 50;        // Go: 50
constexpr std::int64_t kSyscallGraceNs = 10'000'000;  // Go: a syscall younger than 10 ms
constexpr std::int64_t kNetpollForgottenNs = 10'000'000;  // Go: poll if not polled for 10 ms

// Go's preemptone: end pp's slice. Its M is signalled only while it runs a G (not in a
// syscall, where nothing needs stopping).
void preemptone(P* pp) {
  pp->preempt.store(true, std::memory_order_relaxed);
  if (pp->status.load(std::memory_order_relaxed) != PStatus::running) return;
  // Racy by design, as in Go: the M may be switching Gs or giving the P up. A signal that
  // arrives late finds no safe point or no preempt flag and does nothing; M structures are
  // never freed while the runtime runs.
  if (M* mp = std::atomic_ref<M*>(pp->m).load(std::memory_order_relaxed)) preempt::signal_m(mp);
}

// Go's retake. `seen` is when sysmon last looked (the earliest a slice it sees for the first
// time can have started). Returns how many Ps it took back from system calls, and in *next
// the earliest time it must look again at a P that runs: when the slice it watches ends, or,
// for a P whose slice ended and whose G has not yet yielded, when that P is signalled again.
//
// A preemption not yet taken is signalled again every 20 us while the signal can be sent:
// the G is in code that is not preemptible (a library, preempt.cpp), and each signal is a
// chance to find it back in the program's own code. A G that loops over a library call
// spends nearly all its time inside it (libc's memcpy of 256 KiB at a time), so the chances
// have to come often: doubling the wait up to half a slice instead made such a G keep its P
// for seconds rather than tens of milliseconds (preempt_latency/library_hog). Without
// the signal (asyncpreemptoff) there is nothing to repeat: the request waits in pp->preempt
// for the G's next scheduling point, no retry shortens sysmon's sleep, and sysmon costs what
// Go's does.
int retake(std::int64_t now, std::int64_t seen, std::int64_t* next) {
  const std::int64_t slice = sched->timeslice_ns;
  const bool async = preempt::async_on();
  int n = 0;
  for (auto& owned : sched->allp) {
    P* pp = owned.get();
    PStatus s = pp->status.load(std::memory_order_acquire);
    if (s != PStatus::running && s != PStatus::syscall) continue;
    P::SysmonTick& pd = pp->sysmontick;
    bool sysretake = false;
    std::uint32_t t = pp->schedtick.load(std::memory_order_relaxed);
    if (pd.schedtick != t) {
      pd.schedtick = t;
      pd.schedwhen = seen;
      pd.preempt_pending = false;
    } else if (now - pd.schedwhen >= slice) {
      if (!pd.preempt_pending || now >= pd.retry_at) {
        preemptone(pp);
        pd.retry_at = now + kMinDelayNs;
        pd.preempt_pending = true;
      }
      sysretake = true;
      if (s == PStatus::running && async) *next = std::min(*next, pd.retry_at);
    }
    if (s == PStatus::running && !sysretake) *next = std::min(*next, pd.schedwhen + slice);
    if (s != PStatus::syscall) continue;
    std::uint32_t st = pp->syscalltick.load(std::memory_order_relaxed);
    if (!sysretake && pd.syscalltick != st) {
      pd.syscalltick = st;
      pd.syscallwhen = now;
      continue;
    }
    Domain* d = pp->domain;
    if (runqempty(pp) && d->nmspinning.load() + d->npidle.load() > 0 &&
        pd.syscallwhen + kSyscallGraceNs > now)
      continue;
    PStatus expected = PStatus::syscall;
    if (pp->status.compare_exchange_strong(expected, PStatus::idle, std::memory_order_acq_rel)) {
      traceev(Ev::handoff, pp->id, 0);  // before anyone else can run pp (trace.cpp pairs it)
      handoffp(pp);
      ++n;
    }
  }
  return n;
}

// Goroutines wait for I/O, but no M is blocked in netpoll and none has polled for 10 ms
// (every P busy running goroutines): poll for them, and queue what is ready globally.
void netpoll_if_forgotten(std::int64_t now) {
  if (!netpoll_any_waiters()) return;
  std::int64_t last = sched->lastpoll.load();
  if (last == 0 || last + kNetpollForgottenNs > now || !sched->lastpoll.compare_exchange_strong(last, now))
    return;
  G* gl[kNetpollMaxReady];
  int n = netpoll_nonblocking(gl);  // nothing if another M polls (-1)
  if (n > 0) traceev(Ev::poll, -1, 0, 0, static_cast<std::uint32_t>(n),
                     static_cast<std::uint8_t>(PollFrom::sysmon));
  injectglist(gl, n);
}

bool every_p_idle() {
  for (auto& d : sched->domains)
    if (d->npidle.load() != static_cast<int>(d->ps.size())) return false;
  return true;
}

// SIGQUIT (signals.hpp): where everything is, then exit 2, as Go's SIGQUIT traceback does.
// Sysmon does it because it runs no goroutine and holds no lock between its looks.
[[noreturn]] void quit_with_dump() {
  std::fputs("SIGQUIT: quit\n", stderr);
  const SchedDetail detail = inspect_detail();
  schedtrace(inspect_counts(), &detail);
  std::fflush(stderr);
  exit_fatal();
}

}  // namespace

void sysmon_main() {
  vtime::attach(sched->sysmon_vmember);  // in virtual time, a member of its own
  prctl(PR_SET_NAME, "nugo-sysmon");
  prctl(PR_SET_TIMERSLACK, 1);  // short sleeps mean what they say (the default slack is 50 us)
  // While Ps run, sysmon looks at least every half slice: a slice it first sees at one look
  // began after the previous one, so its end is then known to within half a slice (early).
  const std::int64_t tick = std::clamp(sched->timeslice_ns / 2, kMinDelayNs, kMaxDelayNs);
  std::int64_t next_end = INT64_MAX;  // when the earliest slice sysmon watches is over
  std::int64_t delay = kMinDelayNs;
  std::int64_t seen = nanotime();
  int idle = 0;
  // schedtrace (NUGO_DEBUG=schedtrace=MS): due at next_trace; sysmon's sleeps, the deep one
  // included, end by then.
  const std::int64_t trace_ns = std::chrono::nanoseconds(sched->cfg.schedtrace).count();
  std::int64_t next_trace = trace_ns > 0 ? seen + trace_ns : INT64_MAX;
  auto trace_if_due = [&] {
    if (signals::quit_requested.load()) [[unlikely]]
      quit_with_dump();
    if (std::int64_t now = nanotime(); now >= next_trace && !sched->stopping.load()) {
      if (sched->cfg.scheddetail) {
        const SchedDetail detail = inspect_detail();
        schedtrace(inspect_counts(), &detail);
      } else {
        schedtrace(inspect_counts(), nullptr);
      }
      next_trace += trace_ns;  // intervals missed while sysmon was late are skipped, as Go's
      if (next_trace <= now) next_trace = now + trace_ns;
    }
  };
  while (!sched->sysmon_exit.load()) {
    if (sched->stopping.load()) {
      if (signals::quit_requested.load()) [[unlikely]]
        quit_with_dump();  // a stop that hangs is worth a dump too
      // run() is joining the Ms: each leaves once back on g0, so stop whatever still runs,
      // and wake the poller every tick (run()'s one break could go to a poller that left).
      for (auto& pp : sched->allp)
        if (pp->status.load() == PStatus::running) preemptone(pp.get());
      if (sched->lastpoll.load() == 0) netpoll_break();
      sched->sysmon_note.sleep_until(nanotime() + tick);
      sched->sysmon_note.clear();
      continue;
    }
    if (idle == 0)
      delay = kMinDelayNs;
    else if (idle > kIdleCyclesBeforeBackoff)
      delay = std::min(delay * 2, kMaxDelayNs);
    // At most half a slice even when every P looks idle right now: a P may start running a
    // moment later, and only the deep sleep below is woken by acquirep (preemptions do not
    // reset the backoff, so without this cap the sleep could be 10 ms).
    std::int64_t now0 = nanotime();
    std::int64_t wake = std::min(now0 + delay, now0 + tick);
    if (!every_p_idle()) wake = std::min(wake, std::max(next_end, now0 + kMinDelayNs));
    sched->sysmon_note.sleep_until(std::min(wake, next_trace));
    sched->sysmon_note.clear();
    if (sched->stopping.load()) continue;
    trace_if_due();
    if (every_p_idle()) {
      // Deep sleep. Set the flag under every domain's lock: pidleget takes its domain's too,
      // so an acquirep in any domain that follows our check sees the flag and wakes us.
      lock_all_domains();
      bool still = every_p_idle();
      if (still) sched->sysmonwait.store(true);
      unlock_all_domains();
      if (still) {
        while (sched->sysmonwait.load() && !sched->stopping.load()) {
          if (next_trace == INT64_MAX)
            sched->sysmon_note.sleep();
          else
            sched->sysmon_note.sleep_until(next_trace);
          sched->sysmon_note.clear();
          trace_if_due();
        }
        sched->sysmonwait.store(false);
        idle = 0;
        seen = nanotime();
        continue;
      }
    }
    std::int64_t now = nanotime();
    netpoll_if_forgotten(now);
    next_end = INT64_MAX;
    idle = retake(now, seen, &next_end) > 0 ? 0 : idle + 1;
    seen = now;
  }
  vtime::detach();
}

}  // namespace nugo::detail
