// The network poller over epoll. See netpoll.hpp for the semaphore protocol and
// core/README.md for how the scheduler drives it.
#include "netpoll.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <mutex>
#include <vector>

#include "fatal.hpp"
#include "futex.hpp"
#include "preempt.hpp"
#include "sched.hpp"

namespace nugo::detail {
namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;

constexpr int kPollDescChunk = 64;
int epfd = -1;
int breakfd = -1;  // eventfd; its epoll data is &breakfd, which no PollDesc can be
std::atomic<std::uint32_t> wake_sig{0};  // a break is pending (Go's netpollWakeSig)
std::atomic<std::int32_t> waiters{0};
std::atomic<bool> polling{false};  // a netpoll_nonblocking is under way
bool have_pwait2 = true;  // epoll_pwait2 (Linux 5.11) gives ns timeouts; else ms

// The PollDesc cache: chunks that are never freed, and a free list.
Lock cache_lock;
PollDesc* cache_free = nullptr;
std::vector<PollDesc*> chunks;  // under cache_lock

PollDesc* pd_alloc() {
  cache_lock.lock();
  if (!cache_free) {
    constexpr int kChunk = kPollDescChunk;
    auto* chunk = new PollDesc[kChunk];
    chunks.push_back(chunk);
    for (int i = 0; i < kChunk; ++i) {
      chunk[i].link = cache_free;
      cache_free = &chunk[i];
    }
  }
  PollDesc* pd = cache_free;
  cache_free = pd->link;
  cache_lock.unlock();
  pd->link = nullptr;
  return pd;
}

void pd_free(PollDesc* pd) {
  cache_lock.lock();
  pd->link = cache_free;
  cache_free = pd;
  cache_lock.unlock();
}

std::atomic<std::uintptr_t>& sema(PollDesc* pd, int mode) { return mode == 'r' ? pd->rg : pd->wg; }

// Go's netpollunblock: takes the waiter (if any) off mode's semaphore, leaving kPdReady if
// the descriptor became ready (ioready), else 0. Returns the goroutine to ready, or nullptr.
G* netpollunblock(PollDesc* pd, int mode, bool ioready) {
  std::atomic<std::uintptr_t>& gpp = sema(pd, mode);
  for (;;) {
    std::uintptr_t old = gpp.load(sc);  // after the caller's store of closing/rd/wd (StoreLoad)
    if (old == kPdReady) return nullptr;
    if (old == 0 && !ioready) return nullptr;  // nobody to wake, nothing to remember
    std::uintptr_t next = ioready ? kPdReady : 0;
    if (gpp.compare_exchange_weak(old, next, sc)) {
      if (old == kPdWait || old == 0) return nullptr;  // poll_wait will see the new value
      waiters.fetch_sub(1, rlx);
      return reinterpret_cast<G*>(old);
    }
  }
}

// Go's netpollcheckerr.
PollResult checkerr(PollDesc* pd, int mode) {
  if (pd->closing.load(sc)) return PollResult::closing;
  if ((mode == 'r' ? pd->rd : pd->wd).load(sc) < 0) return PollResult::timeout;
  return PollResult::ready;
}

// gopark's commit: publish the goroutine, unless readiness or an error got there first.
// Counted as a waiter before the CAS, so netpollunblock's decrement never comes first.
bool netpollblockcommit(G* gp, void* gpp) {
  waiters.fetch_add(1, rlx);
  std::uintptr_t expected = kPdWait;
  if (static_cast<std::atomic<std::uintptr_t>*>(gpp)->compare_exchange_strong(
          expected, reinterpret_cast<std::uintptr_t>(gp), std::memory_order_acq_rel))
    return true;
  waiters.fetch_sub(1, rlx);
  return false;
}

// Go's netpollblock: true if readiness was reported, false on a wake-up by deadline or close
// (the caller re-checks which).
PollResult netpollblock(PollDesc* pd, int mode) {
  std::atomic<std::uintptr_t>& gpp = sema(pd, mode);
  for (;;) {
    std::uintptr_t v = kPdReady;
    if (gpp.compare_exchange_strong(v, 0, std::memory_order_acq_rel)) return PollResult::ready;
    v = 0;
    if (gpp.compare_exchange_strong(v, kPdWait, sc)) break;
    v = gpp.load(std::memory_order_acquire);
    if (v != kPdReady && v != 0) return PollResult::busy;  // another goroutine waits here
  }
  // Re-check after publishing kPdWait: the closer and the deadline setter store first, then
  // look at the semaphore; we publish, then look. All four are seq_cst (Go's publishInfo),
  // so one of us sees the other.
  if (checkerr(pd, mode) == PollResult::ready)
    gopark(netpollblockcommit, &gpp, WaitReason::io_wait);
  std::uintptr_t old = gpp.exchange(0, std::memory_order_acq_rel);
  if (old > kPdWait) fatal("netpoll: corrupted poll descriptor for fd %d", pd->fd);
  return old == kPdReady ? PollResult::ready : PollResult::timeout;  // timeout: look again
}

// Readies a goroutine taken off a semaphore by a deadline or a close. A socket closed by
// the runtime's teardown (an abandoned goroutine's closure owned it) has nobody to ready:
// the goroutine it took off is abandoned too.
void ready(G* gp) {
  if (!gp) return;
  ForeignCall runtime(ForeignCall::Purpose::wake);
  if (runtime.running()) goready(gp);
}

// A deadline timer fired (on g0, without locks). The descriptor may have been closed or
// re-armed meanwhile, even recycled: only a deadline that has really passed counts.
void deadline_fired(PollDesc* pd, int mode) {
  std::atomic<std::int64_t>& d = mode == 'r' ? pd->rd : pd->wd;
  spin_lock(pd->lock);
  std::int64_t when = d.load(rlx);
  if (pd->closing.load(rlx) || when <= 0 || when > nanotime()) {
    spin_unlock(pd->lock);
    return;
  }
  d.store(-1, sc);
  G* gp = netpollunblock(pd, mode, false);
  spin_unlock(pd->lock);
  ready(gp);
}

// (Re)arms a deadline timer. From a plain thread while no runtime runs, there is no timer
// heap: the deadline is only recorded, which is all a plain thread's poll(2) wait needs.
void arm(Timer& t, std::int64_t when) {
  deltimer(&t);
  if (when <= 0) return;
  t.when = when;
  ForeignCall runtime(ForeignCall::Purpose::wake);
  if (runtime.running()) addtimer(&t);
}

// A recycled PollDesc for fd. A deadline timer of its previous life may still be about to
// run: the lock orders this against it, and it finds no deadline to act on.
void reset(PollDesc* pd, int fd) {
  spin_lock(pd->lock);
  pd->fd = fd;
  pd->closing.store(false, rlx);
  pd->rd.store(0, rlx);
  pd->wd.store(0, rlx);
  pd->rg.store(0, rlx);
  pd->wg.store(0, rlx);
  pd->registered = true;
  pd->user_modes = 0;
  pd->rt.f = [](void* arg, std::int64_t) { deadline_fired(static_cast<PollDesc*>(arg), 'r'); };
  pd->rt.arg = pd;
  pd->wt.f = [](void* arg, std::int64_t) { deadline_fired(static_cast<PollDesc*>(arg), 'w'); };
  pd->wt.arg = pd;
  spin_unlock(pd->lock);
}

}  // namespace

void netpoll_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) fatal("netpoll: epoll_create1 failed (errno %d)", errno);
    breakfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (breakfd < 0) fatal("netpoll: eventfd failed (errno %d)", errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &breakfd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, breakfd, &ev) != 0)
      fatal("netpoll: cannot register the eventfd (errno %d)", errno);
  });
}

PollDesc* poll_open(int fd, int* err) {
  if (vtime::on())
    fatal("NUGO_VIRTUAL: the network poller does not run in virtual time (descriptor %d): a "
          "socket's readiness comes from the real world, which has no virtual clock; run "
          "network programs without NUGO_VIRTUAL", fd);
  netpoll_init();
  NoPreempt np;
  PollDesc* pd = pd_alloc();
  reset(pd, fd);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = pd;
  sanitizer_release(pd);  // to the poller that epoll hands pd to (netpoll)
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
    *err = errno;
    pd_free(pd);
    return nullptr;
  }
  return pd;
}

std::int64_t poll_deadline(const PollDesc* pd, int mode) {
  return (mode == 'r' ? pd->rd : pd->wd).load(std::memory_order_acquire);
}

void poll_close(PollDesc* pd) {
  NoPreempt np;
  if (!pd->closing.load(rlx)) fatal("netpoll: poll_close of fd %d before poll_unblock", pd->fd);
  std::uintptr_t r = pd->rg.load(), w = pd->wg.load();
  if ((r != 0 && r != kPdReady) || (w != 0 && w != kPdReady))
    fatal("netpoll: fd %d closed with a goroutine still waiting on it", pd->fd);
  pd_free(pd);  // poll_unblock has deregistered it
}

PollResult poll_prepare(PollDesc* pd, int mode) { return checkerr(pd, mode); }

PollResult poll_wait(PollDesc* pd, int mode) {
  NoPreempt np;
  for (;;) {
    PollResult e = checkerr(pd, mode);
    if (e != PollResult::ready) return e;
    PollResult r = netpollblock(pd, mode);
    if (r != PollResult::timeout) return r;  // ready or busy; else re-check why we woke
  }
}

void poll_set_deadline(PollDesc* pd, std::int64_t deadline, int mode) {
  NoPreempt np;
  if (deadline != 0 && deadline <= nanotime()) deadline = -1;
  spin_lock(pd->lock);
  if (pd->closing.load(rlx)) {
    spin_unlock(pd->lock);
    return;
  }
  G* rg = nullptr;
  G* wg = nullptr;
  if (mode == 'r' || mode == 'r' + 'w') {
    pd->rd.store(deadline, sc);
    arm(pd->rt, deadline);
    if (deadline < 0) rg = netpollunblock(pd, 'r', false);
  }
  if (mode == 'w' || mode == 'r' + 'w') {
    pd->wd.store(deadline, sc);
    arm(pd->wt, deadline);
    if (deadline < 0) wg = netpollunblock(pd, 'w', false);
  }
  spin_unlock(pd->lock);
  ready(rg);
  ready(wg);
}

void poll_unblock(PollDesc* pd) {
  NoPreempt np;
  spin_lock(pd->lock);
  if (pd->closing.load(rlx)) {
    spin_unlock(pd->lock);
    return;
  }
  pd->closing.store(true, sc);
  G* rg = netpollunblock(pd, 'r', false);
  G* wg = netpollunblock(pd, 'w', false);
  deltimer(&pd->rt);
  deltimer(&pd->wt);
  if (pd->registered) {
    // Deregistered now, while the descriptor is still the one we registered: once the owner
    // closes it, its number may be registered again by someone else.
    epoll_event ev{};
    epoll_ctl(epfd, EPOLL_CTL_DEL, pd->fd, &ev);
    pd->registered = false;
  }
  spin_unlock(pd->lock);
  ready(rg);
  ready(wg);
}

PollDesc* poll_open_user(int fd) {
  if (vtime::on())
    fatal("NUGO_VIRTUAL: the network poller does not run in virtual time (waiting on descriptor "
          "%d): a descriptor's readiness comes from the real world, which has no virtual clock; "
          "run programs that wait on descriptors without NUGO_VIRTUAL", fd);
  netpoll_init();
  NoPreempt np;
  PollDesc* pd = pd_alloc();
  reset(pd, fd);
  pd->registered = false;
  return pd;
}

int poll_arm_user(PollDesc* pd, int mode) {
  NoPreempt np;
  const int bit = mode == 'r' ? 1 : 2;
  spin_lock(pd->lock);
  if (pd->closing.load(rlx) || (pd->user_modes & bit)) {
    spin_unlock(pd->lock);
    return pd->closing.load(rlx) ? ECANCELED : EBUSY;
  }
  // EPOLL_CTL_MOD re-evaluates readiness and queues an event if the descriptor is ready now:
  // with edge triggering and a re-arm per wait, a wait sees the level at its start and the
  // poller never spins on a descriptor nobody waits for. A readiness report left over from an
  // earlier wait is dropped first.
  std::uintptr_t ready = kPdReady;
  sema(pd, mode).compare_exchange_strong(ready, 0);
  int modes = pd->user_modes | bit;
  epoll_event ev{};
  ev.events = EPOLLRDHUP | EPOLLET | (modes & 1 ? EPOLLIN : 0) | (modes & 2 ? EPOLLOUT : 0);
  ev.data.ptr = pd;
  sanitizer_release(pd);  // to the poller that epoll hands pd to, as in poll_open
  int op = pd->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  int rc = epoll_ctl(epfd, op, pd->fd, &ev);
  if (rc != 0 && op == EPOLL_CTL_MOD && errno == ENOENT)  // closed and reopened under that number
    rc = epoll_ctl(epfd, EPOLL_CTL_ADD, pd->fd, &ev);
  int err = rc == 0 ? 0 : errno;
  if (rc == 0) {
    pd->registered = true;
    pd->user_modes = modes;
  }
  spin_unlock(pd->lock);
  return err;
}

void poll_disarm_user(PollDesc* pd, int mode) {
  NoPreempt np;
  spin_lock(pd->lock);
  pd->user_modes &= ~(mode == 'r' ? 1 : 2);
  spin_unlock(pd->lock);
}

bool netpoll_any_waiters() { return waiters.load(rlx) > 0; }

void netpoll_forget_goroutines() {
  cache_lock.lock();
  for (PollDesc* chunk : chunks) {
    for (PollDesc* pd = chunk; pd != chunk + kPollDescChunk; ++pd) {
      spin_lock(pd->lock);
      if (pd->rg.load(rlx) > kPdReady) pd->rg.store(0, rlx);
      if (pd->wg.load(rlx) > kPdReady) pd->wg.store(0, rlx);
      pd->user_modes = 0;
      spin_unlock(pd->lock);
    }
  }
  cache_lock.unlock();
  waiters.store(0, sc);
}

// In virtual time no descriptor is ever polled (poll_open refuses them): the poller only
// sleeps until its timer, in virtual time, or until netpoll_break.
namespace {

std::atomic<std::uint32_t> virtual_break{0};

int netpoll_virtual(std::int64_t delay) {
  if (delay == 0) return 0;
  if (virtual_break.load(sc) == 0) {
    if (delay < 0)
      futex_wait(&virtual_break, 0);
    else
      futex_wait_until(&virtual_break, 0, nanotime() + delay);
  }
  if (virtual_break.exchange(0, sc) != 0) wake_sig.store(0, sc);
  return 0;
}

}  // namespace

int netpoll(std::int64_t delay, G** gl) {
  if (vtime::on()) return netpoll_virtual(delay);
  epoll_event events[kNetpollMaxReady / 2];
  int n;
  for (;;) {
    if (have_pwait2) {
      timespec ts{delay / 1'000'000'000, delay % 1'000'000'000};
      n = epoll_pwait2(epfd, events, kNetpollMaxReady / 2, delay < 0 ? nullptr : &ts, nullptr);
      if (n < 0 && errno == ENOSYS) {
        have_pwait2 = false;
        continue;
      }
    } else {
      // Milliseconds, rounded up: waking early would only make the caller poll again.
      int ms = delay < 0 ? -1
               : delay >= std::int64_t{INT_MAX} * 1'000'000 ? INT_MAX
                                                           : static_cast<int>((delay + 999'999) / 1'000'000);
      n = epoll_wait(epfd, events, kNetpollMaxReady / 2, ms);
    }
    if (n >= 0) break;
    if (errno != EINTR) fatal("netpoll: epoll_wait failed (errno %d)", errno);
    if (delay > 0) return 0;  // the caller recomputes its timeout
  }
  int ready = 0;
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events[i];
    if (ev.data.ptr == &breakfd) {
      if (delay != 0) {  // a non-blocking poll leaves the break to the poller it was meant for
        std::uint64_t buf;
        [[maybe_unused]] ssize_t r = read(breakfd, &buf, sizeof buf);
        wake_sig.store(0, sc);
      }
      continue;
    }
    auto* pd = static_cast<PollDesc*>(ev.data.ptr);
    sanitizer_acquire(pd);  // poll_open's or poll_arm_user's release
    if (ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
      if (G* gp = netpollunblock(pd, 'r', true)) gl[ready++] = gp;
    if (ev.events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
      if (G* gp = netpollunblock(pd, 'w', true)) gl[ready++] = gp;
  }
  return ready;
}

int netpoll_nonblocking(G** gl) {
  if (polling.load(rlx) || polling.exchange(true, std::memory_order_acquire)) return -1;
  int n = netpoll(0, gl);
  polling.store(false, std::memory_order_release);
  return n;
}

void netpoll_break() {
  std::uint32_t zero = 0;
  if (!wake_sig.compare_exchange_strong(zero, 1, sc)) return;  // one is on its way
  trace_end_loan();
  if (vtime::on()) {
    virtual_break.store(1, sc);
    futex_wake(&virtual_break, 1);
    return;
  }
  std::uint64_t one = 1;
  for (;;) {
    if (write(breakfd, &one, sizeof one) == sizeof one) return;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return;  // the counter is full: the poller will wake anyway
    fatal("netpoll: writing the eventfd failed (errno %d)", errno);
  }
}

}  // namespace nugo::detail
