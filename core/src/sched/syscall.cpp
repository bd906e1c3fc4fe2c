// System calls: Go's entersyscall, exitsyscall and entersyscallblock, and nugo::syscall and
// its wrappers around them, with errno carried across the exit, which may resume the
// goroutine on another thread.
//
// A G in a syscall keeps its M, and the M leaves its P in state `syscall`: nobody runs the
// P, but it stays reserved for the M's return. Whoever moves the P out of that state first
// owns it: exitsyscall (the fast path, the common case for a short call) or sysmon's retake,
// which hands it to another M once the call has lasted a sysmon tick and there is work.
#include "nugo/syscall.hpp"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "fatal.hpp"
#include "preempt.hpp"
#include "proc.hpp"
#include "threadlocks.hpp"
#include "trace.hpp"
#include "errno.hpp"

namespace nugo::detail {
namespace {
constexpr auto rlx = std::memory_order_relaxed;
}  // namespace

void entersyscall(bool block) {
  NoPreempt np;
  M* m = getm();
  G* gp = m->curg;
  P* pp = m->p;
  if (!pp) fatal("entersyscall: no P (nested nugo::syscall?)");
  gp->status.store(GStatus::syscall, rlx);
  traceev(Ev::syscall_enter, pp->id, gp->goid);
  pp->syscalltick.store(pp->syscalltick.load(rlx) + 1, rlx);
  m->oldp = pp;
  m->p = nullptr;
  std::atomic_ref<M*>(pp->m).store(nullptr, rlx);
  in_syscall_body = true;
  if (!block) {
    pp->status.store(PStatus::syscall, std::memory_order_release);
  } else {
    // Known to block: hand the P off at once (the M will not be back soon).
    m->oldp = nullptr;
    traceev(Ev::handoff, pp->id, gp->goid);
    pp->status.store(PStatus::idle, std::memory_order_release);
    handoffp(pp);
  }
  // In virtual time the body runs outside it, beside the members, and the M comes back with
  // its clock advanced by the real time the call took (vtime/README.md).
  vtime::leave();
}

// The slow path, on g0: no P to be had. Queue gp globally and park the M (Go's exitsyscall0).
namespace {

Next exitsyscall0(M* m, G* gp) {
  stamp_runnable(gp);
  gp->status.store(GStatus::runnable, rlx);
  if (acquire_idle_p_nearest(m)) return {gp, false};
  // No idle P anywhere just now. Queue it in our domain, under the lock that a P going idle
  // there takes to re-check the queue; a P of another domain going idle will find it by
  // stealing, as any other spinner would.
  Domain* d = m->domain;
  d->lock.lock();
  P* pp = pidleget(d);
  if (!pp) globrunqput(d, gp, thread_node(d));
  d->lock.unlock();
  if (pp) {
    acquirep(pp);
    return {gp, false};
  }
  return {};  // findrunnable sleeps without a P until startm hands it one
}

}  // namespace

void exitsyscall() {
  NoPreempt np;
  vtime::rejoin();
  in_syscall_body = false;  // still on the thread that entered: the body never switches
  M* m = getm();
  G* gp = m->curg;
  P* oldp = m->oldp;
  m->oldp = nullptr;
  PStatus expected = PStatus::syscall;
  if (oldp && oldp->status.compare_exchange_strong(expected, PStatus::idle, std::memory_order_acquire)) {
    acquirep(oldp);  // fast path: nobody took it
  } else {
    // Any idle P, our domain's first (Go's exitsyscallfast).
    if (!acquire_idle_p_nearest(m)) {
      traceev(Ev::syscall_exit, -1, gp->goid);
      mcall(exitsyscall0);  // returns on whichever M runs gp again, status set by execute
      return;
    }
  }
  P* pp = getm()->p;
  traceev(Ev::syscall_exit, pp->id, gp->goid, 0, static_cast<std::uint32_t>(gp->home));
  pp->syscalltick.store(pp->syscalltick.load(rlx) + 1, rlx);
  gp->status.store(GStatus::running, rlx);
}

// The read where NUGO_INLINE_TLS is 0 (nugo/runtime.hpp). Never inlined (not even by LTO): the
// point is an address computed afresh at each call. And never preempted: without the
// initial-exec model the read is three instructions (the thread pointer, the variable's
// address, the load), and a goroutine moved to another thread between the first and the last
// read the old thread's flag, which may be set by whatever runs there (a false "inside a
// nugo::syscall body": 2 of 24 runs of the hostile programs at 50 us slices, two at once, and
// once in CI). In the no-preemption section, as the out-of-line getg and getm are.
NUGO_NOPREEMPT bool in_syscall_body_now() { return in_syscall_body; }

void syscall_body_misuse(const char* call) {
  G* gp = getg();
  fatal("goroutine %lld: %s inside a nugo::syscall body. The body holds no P (to the "
        "scheduler it is in the kernel): it may make system calls and run plain code, but not "
        "call into the scheduler (nugo/syscall.hpp lists what is allowed)",
        gp ? static_cast<long long>(gp->goid) : 0LL, call);
}

}  // namespace nugo::detail

namespace nugo {
SyscallScope::SyscallScope(Kind kind) {
  detail::NoPreempt np;  // the M we look at stays ours
  detail::M* m = detail::getm();
  // Outside goroutines, and inside another syscall (no P), there is nothing to do.
  active_ = m && m->curg && m->p;
  if (active_) detail::entersyscall(kind == blocks_long);
}

SyscallScope::~SyscallScope() {
  if (!active_) return;
  int saved = detail::thread_errno();
  detail::exitsyscall();
  detail::set_thread_errno(saved);
}

namespace sys {

ssize_t read(int fd, void* buf, std::size_t count) {
  return nugo::syscall([&] { return ::read(fd, buf, count); });
}

ssize_t write(int fd, const void* buf, std::size_t count) {
  return nugo::syscall([&] { return ::write(fd, buf, count); });
}

ssize_t pread(int fd, void* buf, std::size_t count, off_t offset) {
  return nugo::syscall([&] { return ::pread(fd, buf, count, offset); });
}

ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset) {
  return nugo::syscall([&] { return ::pwrite(fd, buf, count, offset); });
}

int fsync(int fd) {
  return nugo::syscall([&] { return ::fsync(fd); });
}

pid_t waitpid(pid_t pid, int* status, int options) {
  if (options & WNOHANG) return nugo::syscall([&] { return ::waitpid(pid, status, options); });
  return nugo::blocking_syscall([&] { return ::waitpid(pid, status, options); });
}

void nanosleep(std::chrono::nanoseconds d) {
  if (d.count() <= 0) return;
  timespec req{static_cast<time_t>(d.count() / 1'000'000'000),
               static_cast<long>(d.count() % 1'000'000'000)};
  nugo::syscall([&] {
    timespec rem{};
    while (::nanosleep(&req, &rem) != 0 && errno == EINTR) req = rem;
  });
}

}  // namespace sys
}  // namespace nugo
