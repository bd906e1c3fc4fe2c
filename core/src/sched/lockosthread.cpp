// lock_os_thread: a goroutine wired to its M (Go's LockOSThread, startlockedm, stoplockedm).
// See core/README.md, "lock_os_thread".
#include <cstdint>
#include <stdexcept>

#include "fatal.hpp"
#include "preempt.hpp"
#include "proc.hpp"

namespace nugo::detail {
namespace {
constexpr auto rlx = std::memory_order_relaxed;
}  // namespace

// gp is locked to another M: hand that M our P, and go idle (Go's startlockedm).
void startlockedm(M* m, G* gp) {
  M* mp = gp->lockedm;
  if (mp == m || mp->lockedg != gp) fatal("startlockedm: inconsistent locked M");
  // Counted before the wake-up: mp stays in nmidlelocked until it runs, which on a busy
  // machine may be after another M has gone idle and sleeps out the grace period; checkdead
  // then sees this count and knows mp (and gp, which travels with it in no queue) is coming.
  mp->domain->nmlockedwaking.fetch_add(1, std::memory_order_seq_cst);
  mp->nextp.store(releasep(), std::memory_order_release);
  mp->park.wakeup();
}

// This M is locked to a G that is not running: give the P away and sleep until
// startlockedm hands one back to run that G (Go's stoplockedm). False: the runtime stops.
bool stoplockedm(M* m) {
  Domain* d = m->domain;
  if (m->p) handoffp(releasep());
  d->lock.lock();
  ++d->nmidlelocked;
  d->lock.unlock();
  for (;;) {
    m->park.sleep();
    m->park.clear();
    if (m->nextp.load(std::memory_order_acquire) || sched->stopping.load(rlx)) break;
  }
  P* next = m->nextp.load(std::memory_order_acquire);
  d->lock.lock();
  --d->nmidlelocked;
  if (next) d->nmlockedwaking.fetch_sub(1, std::memory_order_seq_cst);  // startlockedm's
  d->lock.unlock();
  if (!next) return false;
  acquirep(next);
  m->nextp.store(nullptr, rlx);
  return true;
}

void lock_os_thread() {
  NoPreempt np;
  M* m = getm();
  G* gp = m->curg;
  if (m->lockedcount == UINT32_MAX) fatal("lock_os_thread: nested too deeply");
  ++m->lockedcount;
  m->lockedg = gp;
  gp->lockedm = m;
}

void unlock_os_thread() {
  NoPreempt np;
  M* m = getm();
  G* gp = m->curg;
  if (m->lockedcount == 0 || --m->lockedcount > 0) return;
  m->lockedg = nullptr;
  gp->lockedm = nullptr;
}

}  // namespace nugo::detail

namespace nugo {

void lock_os_thread() {
  if (!detail::getg()) throw std::logic_error("nugo::lock_os_thread: not called from a goroutine");
  detail::lock_os_thread();
}

void unlock_os_thread() {
  if (!detail::getg()) throw std::logic_error("nugo::unlock_os_thread: not called from a goroutine");
  detail::unlock_os_thread();
}

}  // namespace nugo
