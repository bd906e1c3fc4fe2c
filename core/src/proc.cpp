// The scheduler: goroutine lifecycle, the scheduling loop, and M/P management, after Go's
// proc.go. Read core/README.md first; the protocol comments here assume it.
//
// Where each function runs:
//   on a goroutine's stack:  newproc, gopark, goready, mcall, yield, entersyscall,
//     exitsyscall, lock_os_thread (each under NoPreempt: the preemption signal leaves
//     runtime code alone)
//   on g0 (an M's thread stack, no goroutine):  everything named *_m, execute, findrunnable,
//     steal_work, stopm, stoplockedm, startlockedm, and the schedule loop
//   anywhere (goroutine, g0, sysmon, foreign thread):  goready, wakep, startm, handoffp
//
// Worker parking and unparking (the part that must lose no wake-up), as in Go:
//   A submitter makes a G runnable (runqput or globrunqput), then calls wakep(), which starts
//   a spinning M if there is an idle P and nobody is spinning. A spinning M that finds work
//   stops spinning and, if it was the last spinner, calls wakep() for the rest of the work.
//   A spinning M that finds nothing first drops its P, then decrements nmspinning, then
//   re-checks every run queue of its domain. Both sides do "publish, then look" with a full
//   fence (StoreLoad) between, so at least one sees the other: either the submitter sees
//   nmspinning == 0 and wakes someone, or the spinner sees the new G.
//   At most half of the busy Ps have a spinning M (2*nmspinning < gomaxprocs - npidle), so
//   idle Ms do not burn CPU when there is little to steal.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "fatal.hpp"
#include "netpoll.hpp"
#include "preempt.hpp"
#include "sched.hpp"
#include "signals.hpp"
#include "threadlocks.hpp"
#include "timer.hpp"


namespace nugo::detail {

Sched* sched = nullptr;
std::atomic<Sched*> foreign_sched{nullptr};
std::atomic<int> foreign_calls{0};
thread_local bool starting_runtime = false;
thread_local bool tearing_down = false;

namespace {
thread_local M* tls_m = nullptr;
}  // namespace

namespace {

// Foreign threads (no M) may call go(), goready() and WaitGroup::done() while run() is
// returning. A foreign call counts itself in before it reads the instance; run_main
// unpublishes the instance, then waits for the count to drain before deleting it.
// enter_foreign returns the instance (and marks it foreign_seen) or nullptr, counted out again.
Sched* enter_foreign() {
  foreign_calls.fetch_add(1, std::memory_order_seq_cst);
  Sched* s = foreign_sched.load(std::memory_order_seq_cst);
  // An M calling from inside nugo::syscall has no P and takes this path too, but it is no
  // foreign thread: its G is accounted for (in a syscall), so deadlock detection stays on.
  if (s && !starting_runtime && !tls_m)
    s->foreign_seen.store(true, std::memory_order_relaxed);
  else if (!s)
    foreign_calls.fetch_sub(1, std::memory_order_seq_cst);
  return s;
}

void leave_foreign() { foreign_calls.fetch_sub(1, std::memory_order_seq_cst); }

class ForeignCall {
 public:
  ForeignCall() {
    if (!enter_foreign())
      throw std::logic_error("nugo: the runtime is not running (call go within nugo::run)");
  }
  ~ForeignCall() { leave_foreign(); }
  ForeignCall(const ForeignCall&) = delete;
  ForeignCall& operator=(const ForeignCall&) = delete;
};

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;
constexpr int kStealTries = 4;
constexpr std::uint32_t kGlobalQueueTick = 61;  // every 61st schedule looks globally first
constexpr std::int64_t kDeadlockGraceNs = 50'000'000;
// An idle M beyond gomaxprocs exits after this long without work (Go keeps them forever).
constexpr std::int64_t kIdleMLifetimeNs = 1'000'000'000;

// An mcall function runs on g0 after a goroutine switched away; it may return the G to run
// next (with its time slice inherited or not), or nullptr to let findrunnable choose.
struct Next {
  G* gp = nullptr;
  bool inherit_time = false;
};
using McallFn = Next (*)(M*, G*);

// ---- G and stack caches (gfget/gfput, stackalloc/stackfree) ----

G* gfget(P* pp) {
  if (pp->ngfree == 0 && sched->ngfree.load(rlx) > 0) {
    sched->glock.lock();
    std::vector<G*>& global = sched->gfree;
    int n = std::min<int>(kGFreeRefill, static_cast<int>(global.size()));
    std::copy(global.end() - n, global.end(), pp->gfree.begin());
    global.resize(global.size() - n);
    pp->ngfree = n;
    sched->ngfree.store(static_cast<int>(global.size()), rlx);
    sched->glock.unlock();
  }
  return pp->ngfree > 0 ? pp->gfree[--pp->ngfree] : nullptr;
}

void gfput(P* pp, G* gp) {
  pp->gfree[pp->ngfree++] = gp;
  if (pp->ngfree < kGFreeMax) return;
  constexpr int n = kGFreeMax / 2;
  pp->ngfree -= n;
  sched->glock.lock();
  sched->gfree.insert(sched->gfree.end(), pp->gfree.begin() + pp->ngfree,
                      pp->gfree.begin() + pp->ngfree + n);
  sched->ngfree.store(static_cast<int>(sched->gfree.size()), rlx);
  sched->glock.unlock();
}

Stack stackalloc(P* pp) {
  if (!pp->stackcache) pp->nstackcache += sched->stacks.get_batch(&pp->stackcache, kStackCacheRefill);
  FreeStack* f = pp->stackcache;
  pp->stackcache = f->next;
  --pp->nstackcache;
  return StackPool::from_free(f, sched->stacks.stack_size());
}

void stackfree(P* pp, const Stack& s) {
  FreeStack* f = StackPool::to_free(s);
  f->next = pp->stackcache;
  pp->stackcache = f;
  if (++pp->nstackcache < kStackCacheMax) return;
  sched->stacks.put_batch(&pp->stackcache, kStackCacheMax / 2);
  pp->nstackcache -= kStackCacheMax / 2;
}

void check_canary(const G* gp) {
  if (*reinterpret_cast<const std::uint64_t*>(gp->stack.lo) != kStackCanary)
    fatal("goroutine %lld: stack overflow (stack size %zu, raise NUGO_STACK); detected by canary",
          static_cast<long long>(gp->goid), gp->stack.size());
}

std::int64_t next_goid(P* pp) {
  if (pp->goidcache == pp->goidcacheend) {
    pp->goidcache = sched->goidgen.fetch_add(kGoidCacheBatch, rlx) + 1;
    pp->goidcacheend = pp->goidcache + kGoidCacheBatch;
  }
  return pp->goidcache++;
}

// ---- switching ----

// Switches from the running goroutine to its M's g0 and runs fn(gp) there (Go's mcall).
// Returns when something makes gp run again, possibly on another M.
void mcall(McallFn fn);
Next goexit0(M* m, G* gp);

[[noreturn]] void panic_exit(const G* gp, const char* what) {
  std::fprintf(stderr, "panic: %s\n\ngoroutine %lld [running]:\n(exception escaped the goroutine)\n",
               what, static_cast<long long>(gp->goid));
  std::fflush(stderr);
  std::_Exit(2);
}

// Every goroutine starts here, on its own stack, entered from execute().
[[noreturn]] void gentry(transfer_t t) {
  G* gp = static_cast<G*>(t.data);
  getm()->g0ctx = t.fctx;
  sanitizer_finish_switch(gp->san);
  release_locks(gp);  // newproc took one: the switch in is over, user code may be preempted
  try {
    gp->invoke(gp);
  } catch (const std::exception& e) {
    panic_exit(gp, e.what());
  } catch (...) {
    panic_exit(gp, "unknown exception (not derived from std::exception)");
  }
  acquire_locks(gp);
  mcall(goexit0);
  fatal("goexit: dead goroutine %lld resumed", static_cast<long long>(gp->goid));
}

// Locks of the thread that the goroutine holds go with it when it switches out, and arrive
// on whichever thread resumes it (threadlocks.hpp). Not inlined: a thread-local address
// computed before the switch would name the old thread.
NUGO_NOPREEMPT void carry_thread_locks_in(G* gp) {
  thread_locks.held += gp->thread_locks;
  gp->thread_locks = 0;
}

// The switch itself is runtime code on the G's stack until jump_fcontext has moved to g0,
// and again on the way back: not preemptible (G::locks). The G is pinned first: only then
// does its M stay its M (getg is atomic with respect to the signal; getm then G is not).
void mcall(McallFn fn) {
  G* gp = getg();
  acquire_locks(gp);
  M* m = getm();
  ThreadLocks& tl = thread_locks;
  gp->thread_locks = tl.held;  // always: a recycled G must not bring an old count back
  tl.held = 0;
  sanitizer_start_switch(fn == goexit0 ? nullptr : &gp->san, m->g0san);
  transfer_t t = jump_fcontext(m->g0ctx, reinterpret_cast<void*>(fn));
  getm()->g0ctx = t.fctx;  // getm() again: we may be on another thread now
  sanitizer_finish_switch(gp->san);
  if (gp->thread_locks != 0) carry_thread_locks_in(gp);
  release_locks(gp);
}

// Runs gp on the current M until it switches back, then finishes the switch on g0.
Next execute(M* m, G* gp, bool inherit_time) {
  P* pp = m->p;
  m->curg = gp;
  gp->status.store(GStatus::running, rlx);
  if (!inherit_time) {  // a new time slice
    pp->schedtick.store(pp->schedtick.load(rlx) + 1, rlx);
    if (pp->preempt.load(rlx)) pp->preempt.store(false, rlx);
  }
  if (!gp->ctx) {
    // First run: the stack is bound now, not at spawn (core/README.md, "Lazy stacks").
    gp->stack = stackalloc(pp);
    gp->san = {gp->stack.lo, gp->stack.size(), nullptr};
    gp->ctx = make_fcontext(gp->stack.hi, gp->stack.size(), gentry);
  }
  sanitizer_start_switch(&m->g0san, gp->san);
  transfer_t t = jump_fcontext(gp->ctx, gp);
  sanitizer_finish_switch(m->g0san);
  gp->ctx = t.fctx;
  m->curg = nullptr;
  if (!gp->stack.guarded) check_canary(gp);
  return reinterpret_cast<McallFn>(t.data)(m, gp);
}

// ---- what a goroutine asks g0 to do after switching away (the mcall functions) ----

Next goexit0(M* m, G* gp) {
  P* pp = m->p;
  if (gp->lockedm) {
    // Exited while locked to its thread: as in Go, the thread ends with it, since the G may
    // have left it in a state no other goroutine should inherit.
    gp->lockedm = nullptr;
    m->lockedg = nullptr;
    m->lockedcount = 0;
    m->exiting = true;
  }
  gp->status.store(GStatus::dead, rlx);
  gp->waitreason = WaitReason::none;
  gp->thread_locks = 0;  // locks it died holding stay with nobody (see threadlocks.hpp)
  sanitizer_forget_frames(gp->ctx, gp->stack.hi);
  stackfree(pp, gp->stack);
  gp->stack = {};
  gp->ctx = nullptr;
  gfput(pp, gp);
  return {};
}

// Go's gosched_m: gp goes to the tail of the global queue. If the local queue is empty and no
// timer is pending, findrunnable would lock the global queue next anyway to take a batch;
// doing both in one critical section halves the cost of a yield and picks exactly the same G.
// (With a timer pending, findrunnable must run it first: a yield loop would starve it.)
Next gosched_m(M* m, G* gp) {
  P* pp = m->p;
  Domain* d = pp->domain;
  gp->status.store(GStatus::runnable, rlx);
  bool local_work = !runqempty(pp) || nexttimer(pp) != 0;
  d->lock.lock();
  globrunqput(d, gp);
  G* next = local_work ? nullptr : globrunqget(pp, 0);
  d->lock.unlock();
  return {next, false};
}

// Go's gopreempt_m: as gosched_m. The slice sysmon ended is over now: whatever runs next
// starts a new one, even a G taken from runnext (a timer may just have readied it there).
Next gopreempt_m(M* m, G* gp) {
  P* pp = m->p;
  pp->preempt.store(false, rlx);
  pp->schedtick.store(pp->schedtick.load(rlx) + 1, rlx);
  return gosched_m(m, gp);
}

Next goyield_m(M* m, G* gp) {
  gp->status.store(GStatus::runnable, rlx);
  runqput(m->p, gp, false);
  return {};
}

Next park_m(M* m, G* gp) {
  gp->status.store(GStatus::waiting, std::memory_order_release);
  auto unlockf = m->waitunlockf;
  m->waitunlockf = nullptr;
  if (unlockf && !unlockf(gp, m->waitlock)) {
    // The waiter changed its mind: run it again, keeping its time slice.
    gp->status.store(GStatus::runnable, rlx);
    return {gp, true};
  }
  return {};
}

// The waker took gp off its primitive's wait queue under that primitive's lock, which park_m
// released only after publishing `waiting`; nobody else can ready gp. So a check and a store
// do what a CAS would, without the read-modify-write on the handoff path.
void ready_status(G* gp) {
  GStatus s = gp->status.load(std::memory_order_acquire);
  if (s != GStatus::waiting)
    fatal("goready: goroutine %lld is %s, not waiting", static_cast<long long>(gp->goid),
          to_string(s));
  gp->waitreason = WaitReason::none;
  gp->status.store(GStatus::runnable, std::memory_order_relaxed);
}

// ---- P and M lists (domain lock held where noted in sched.hpp) ----

void mput(Domain* d, M* m) {
  m->schedlink = d->midle;
  d->midle = m;
  ++d->nmidle;
}

M* mget(Domain* d) {
  M* m = d->midle;
  if (m) {
    d->midle = m->schedlink;
    --d->nmidle;
  }
  return m;
}

// Starts an M on pp, reusing one whose thread exited (mexit) if there is one.
void newm(Domain* d, P* pp, bool spinning) {
  sched->mlock.lock();
  if (sched->stopping.load(rlx)) {
    sched->mlock.unlock();
    return;
  }
  if (sched->mcount.load(rlx) >= Sched::kMaxMCount)
    fatal("thread limit: %d OS threads exhausted", Sched::kMaxMCount);
  M* m = nullptr;
  if (!sched->freem.empty()) {
    m = sched->freem.back();
    sched->freem.pop_back();
    m->thread.join();  // gone already, or finishing mstart's last lines
  } else {
    m = new M;
    m->id = static_cast<int>(sched->allm.size());
    m->fastrand = reinterpret_cast<std::uintptr_t>(m) ^ (static_cast<std::uint64_t>(m->id) << 32);
    sched->allm.push_back(m);
  }
  m->domain = d;
  m->nextp = pp;
  m->spinning = spinning;
  m->exiting = false;
  m->signal_pending.store(false, rlx);
  sched->mcount.fetch_add(1, std::memory_order_relaxed);
  try {
    m->thread = std::thread(mstart, m);
  } catch (const std::system_error& e) {
    fatal("newm: cannot create an OS thread: %s (%d threads running; raise the limit on "
          "processes: ulimit -u, RLIMIT_NPROC)", e.what(), sched->mcount.load(rlx) - 1);
  }
  sched->mlock.unlock();
}

// The calling M's thread is about to end: it no longer counts, and newm may reuse the M.
void mexit(M* m) {
  sched->mlock.lock();
  sched->mcount.fetch_sub(1, std::memory_order_relaxed);
  sched->freem.push_back(m);
  sched->mlock.unlock();
}

// Removes m from the idle M list; false if it is not there (startm took it).
bool mremove(Domain* d, M* m) {
  for (M** link = &d->midle; *link; link = &(*link)->schedlink) {
    if (*link == m) {
      *link = m->schedlink;
      --d->nmidle;
      return true;
    }
  }
  return false;
}

// Why stopm returned.
enum class Wake {
  p,      // startm handed this M a P, now acquired
  watch,  // this M was the deadlock watcher and its grace period is over: run checkdead
  stop,   // the runtime is stopping
  exit,   // an extra M idle for kIdleMLifetimeNs: off the idle list now, to exit
};

// Ms idle or parked with their locked G, in every domain. All domain locks held.
int idle_ms_everywhere() {
  int n = 0;
  for (const auto& d : sched->domains) n += d->nmidle + d->nmidlelocked;
  return n;
}

// Parks the M on the idle list of its domain until startm hands it a P. The M that makes
// every M of the runtime idle becomes the deadlock watcher (if may_watch): it sleeps through a
// grace period, for the caller to run checkdead. Deciding that under every domain's lock,
// right after mput, is what makes exactly one of several Ms going idle together the last one
// (Go calls checkdead from mput for the same reason); with one domain that is just its lock.
// Any other M beyond gomaxprocs sleeps for kIdleMLifetimeNs at most, then leaves.
Wake stopm(M* m, bool may_watch) {
  Domain* d = m->domain;
  auto unlock = [&] {
    if (may_watch) unlock_all_domains(); else d->lock.unlock();
  };
  if (may_watch) lock_all_domains(); else d->lock.lock();
  if (sched->stopping.load(rlx)) {
    unlock();
    return Wake::stop;
  }
  mput(d, m);
  Wake on_deadline = Wake::p;
  std::int64_t deadline_ns = 0;
  int mcount = sched->mcount.load();
  if (may_watch && idle_ms_everywhere() == mcount && !sched->foreign_seen.load()) {
    on_deadline = Wake::watch;
    deadline_ns = nanotime() + kDeadlockGraceNs;
  } else if (mcount > sched->gomaxprocs) {
    on_deadline = Wake::exit;
    deadline_ns = nanotime() + kIdleMLifetimeNs;
  }
  unlock();
  for (;;) {
    if (deadline_ns)
      m->park.sleep_until(deadline_ns);
    else
      m->park.sleep();
    m->park.clear();
    if (m->nextp) {
      acquirep(m->nextp);
      m->nextp = nullptr;
      return Wake::p;
    }
    if (sched->stopping.load(rlx)) return Wake::stop;
    if (!deadline_ns || nanotime() < deadline_ns) continue;  // a stale wake-up (Note wakeups merge)
    d->lock.lock();
    bool listed = mremove(d, m);
    P* handed = listed ? nullptr : m->nextp;  // startm sets nextp under this lock
    if (listed && on_deadline == Wake::exit && sched->mcount.load() <= sched->gomaxprocs) {
      mput(d, m);  // others left first: this one stays, and sleeps until needed
      listed = false;
      deadline_ns = 0;
    }
    d->lock.unlock();
    if (listed) return on_deadline;
    if (handed) {
      acquirep(handed);
      m->nextp = nullptr;
      return Wake::p;
    }
  }
}

// The spinning transitions. A spinning M counts in its domain's nmspinning (at most half of
// the busy Ps have one, and a submitter wakes an M only when none spins).
void become_spinning(M* m) {
  m->spinning = true;
  m->domain->nmspinning.fetch_add(1, sc);
}

// After this the caller must wakep, or re-check every queue itself: work submitted while m
// spun may have seen a spinner and woken nobody. (Not "only if m was the last spinner": a
// wakep's reservation may be undone by startm between our decrement and its look, so only a
// fresh look at nmspinning, which wakep makes, is safe. Go calls wakep unconditionally too.)
void stop_spinning(M* m) {
  m->spinning = false;
  if (m->domain->nmspinning.fetch_sub(1, sc) <= 0) fatal("stop_spinning: negative nmspinning");
}

// A spinner found work: another M should look for the rest (Go's resetspinning).
void resetspinning(M* m) {
  stop_spinning(m);
  wakep(m->domain);
}

// Steals half of some other P's queue: 4 rounds over all Ps of the domain in random order;
// the last round may also take a victim's runnext.
// The last round also runs the victims' due timers, idle victims included: that is how the
// timers of an idle P fire. A timer that readies a goroutine readies it onto our P.
G* steal_work(M* m, P* pp, std::int64_t now) {
  Domain* d = pp->domain;
  for (int round = 0; round < kStealTries; ++round) {
    bool last = round == kStealTries - 1;
    for (auto e = d->steal_order.start(m->rand()); !e.done(); e.next()) {
      if (sched->stopping.load(rlx)) return nullptr;
      P* victim = d->ps[e.position()];
      if (victim == pp) continue;
      if (last && nexttimer(victim) != 0) {
        if (now == 0) now = nanotime();
        if (checktimers(victim, now) > 0)
          if (G* gp = runqget(pp).gp) return gp;
      }
      if (victim->status.load(rlx) == PStatus::idle) continue;
      if (G* gp = runqsteal(pp, victim, last)) return gp;
    }
  }
  return nullptr;
}

// Go's checkdead, for the M that found every other M idle. Called on the M's way out of the
// grace-period sleep, without a P. Nothing can run again if still every M is idle, no timer is
// pending, no goroutine waits for I/O, no run queue holds a goroutine, and no plain thread has
// called into the runtime.
// Then it reports every goroutine's wait reason and exits with status 2, as Go does.
void checkdead() {
  if (!sched->cfg.detect_deadlock || sched->foreign_seen.load() || sched->stopping.load()) return;
  lock_all_domains();  // a program blocked across every domain is one deadlock
  bool dead = idle_ms_everywhere() + 1 == sched->mcount.load() && !sched->foreign_seen.load() &&
              !netpoll_any_waiters();
  for (const auto& d : sched->domains) dead = dead && d->runqsize.load() == 0;
  for (const auto& p : sched->allp) dead = dead && nexttimer(p.get()) == 0 && runqempty(p.get());
  if (!dead) {
    unlock_all_domains();
    return;
  }
  sched->glock.lock();  // gchunks; held until exit
  std::fputs("fatal error: all goroutines are asleep - deadlock!\n", stderr);
  for (G* chunk : sched->gchunks)
    for (G* gp = chunk; gp != chunk + kGChunk; ++gp)
      if (gp->status.load() == GStatus::waiting)
        std::fprintf(stderr, "\ngoroutine %lld [%s]:\n", static_cast<long long>(gp->goid),
                     to_string(gp->waitreason));
  std::fputs("\n(nugo: if a thread outside the runtime was going to wake one of these goroutines, "
             "run with NUGO_DEBUG=deadlock=0 or Config::detect_deadlock = false)\n",
             stderr);
  std::fflush(stderr);
  std::_Exit(2);
}

// The earliest timer of every P, or 0. One M polls for the whole runtime, so it sleeps
// until the earliest timer of any domain.
std::int64_t earliest_timer() {
  std::int64_t earliest = 0;
  for (const auto& p : sched->allp) {
    std::int64_t w = nexttimer(p.get());
    if (w != 0 && (earliest == 0 || w < earliest)) earliest = w;
  }
  return earliest;
}

// After giving up its P, a former spinner looks at every queue once more (the StoreLoad
// half of the protocol) and takes an idle P back if it sees work.
P* check_runqs_no_p(Domain* d) {
  bool work = d->runqsize.load(sc) > 0;
  for (P* p : d->ps) work = work || !runqempty(p);
  if (!work) return nullptr;
  d->lock.lock();
  P* pp = pidleget(d);
  d->lock.unlock();
  return pp;
}

// Takes an idle P of d for this M, if there is one.
bool acquire_idle_p(Domain* d) {
  d->lock.lock();
  P* pp = pidleget(d);
  d->lock.unlock();
  if (pp) acquirep(pp);
  return pp != nullptr;
}

// Sleeps without a P until the M has one (true), or until the runtime stops or the M is to
// exit (false; m->exiting says which). While a timer is pending or a goroutine waits for I/O,
// one M, the poller, blocks in netpoll until the earliest timer instead of on its note; when
// it returns it takes an idle P for what it readied or for the timer, or, finding none, hands
// the readied goroutines to the global queue and sleeps like any other idle M (Go's
// findRunnable, from "poll network until next timer"). The others sleep until startm.
bool idle_until_p(M* m) {
  Domain* d = m->domain;
  for (;;) {
    if (sched->stopping.load(rlx)) return false;
    std::int64_t next = earliest_timer();
    if ((next != 0 || netpoll_any_waiters()) && sched->lastpoll.exchange(0, sc) != 0) {
      sched->poll_until.store(next, sc);
      // Published; now catch a timer added before wake_netpoller could see us.
      std::int64_t again = earliest_timer();
      if (again != 0 && (next == 0 || again < next)) sched->poll_until.store(next = again, sc);
      std::int64_t delay = next == 0 ? -1 : std::max<std::int64_t>(0, next - nanotime());
      G* gl[kNetpollMaxReady];
      int n = netpoll(delay, gl);
      sched->poll_until.store(0, sc);
      sched->lastpoll.store(nanotime(), sc);
      if (sched->stopping.load(rlx)) return false;  // the readied ones are abandoned with the rest
      bool got_p = acquire_idle_p(d);
      injectglist(gl, n);  // with no P (every P busy), all to the global queue
      if (got_p) return true;
    } else if (next != 0) {
      // Someone else polls: make sure it wakes for this timer.
      std::int64_t until = sched->poll_until.load(sc);
      if (until == 0 || until > next) netpoll_break();
    }
    // With a timer pending, or a goroutine waiting for I/O, there is no deadlock to watch for.
    Wake w = stopm(m, /*may_watch=*/next == 0 && !netpoll_any_waiters());
    if (w == Wake::watch) {
      checkdead();  // returns if not dead: then look for work once more, and sleep again
      if (acquire_idle_p(d)) return true;
      continue;
    }
    if (w == Wake::p) return true;
    if (w == Wake::exit) m->exiting = true;
    return false;
  }
}

// Finds a runnable goroutine, parking the M while there is none. Returns nullptr only when
// the runtime is stopping. Go's findRunnable, in Go's order.
G* findrunnable(M* m, bool* inherit_time) {
  *inherit_time = false;
top:
  if (sched->stopping.load(rlx)) return nullptr;
  if (!m->p && !idle_until_p(m)) return nullptr;  // e.g. after exitsyscall's slow path
  P* pp = m->p;
  Domain* d = pp->domain;
  std::int64_t now = 0;
  if (nexttimer(pp) != 0) checktimers(pp, now = nanotime());

  // Fairness: two goroutines readying each other through runnext would otherwise keep the
  // global queue waiting forever.
  if (pp->schedtick.load(rlx) % kGlobalQueueTick == 0 && d->runqsize.load(rlx) > 0) {
    d->lock.lock();
    G* gp = globrunqget(pp, 1);
    d->lock.unlock();
    if (gp) return gp;
  }
  if (auto [gp, inherit] = runqget(pp); gp) {
    if (inherit && pp->preempt.load(rlx)) {
      // A G taken from runnext inherits the time slice, so two goroutines readying each
      // other could keep the P forever. Once sysmon has ended the slice, the one due next is
      // treated as preempted: to the global queue, and a new slice for whatever runs next.
      gp->status.store(GStatus::runnable, rlx);
      d->lock.lock();
      globrunqput(d, gp);
      d->lock.unlock();
      pp->preempt.store(false, rlx);
      pp->schedtick.store(pp->schedtick.load(rlx) + 1, rlx);
      goto top;
    }
    *inherit_time = inherit;
    return gp;
  }
  if (d->runqsize.load(rlx) > 0) {
    d->lock.lock();
    G* gp = globrunqget(pp, 0);
    d->lock.unlock();
    if (gp) return gp;
  }

  // The network, without blocking, if anyone waits on it and no M is blocked polling it
  // (that one would report the same events).
  if (std::int64_t last = sched->lastpoll.load(sc); last != 0 && netpoll_any_waiters()) {
    G* gl[kNetpollMaxReady];
    int n = netpoll_nonblocking(gl);
    // Polled: sysmon need not. A CAS, not a store: an M may have become the blocking
    // poller meanwhile (lastpoll 0), and that must stay visible.
    if (n >= 0) sched->lastpoll.compare_exchange_strong(last, nanotime(), sc);
    if (n > 0) {
      injectglist(gl + 1, n - 1);
      ready_status(gl[0]);
      return gl[0];
    }
  }

  int busy = static_cast<int>(d->ps.size()) - d->npidle.load(sc);
  if (m->spinning || 2 * d->nmspinning.load(sc) < busy) {
    if (!m->spinning) become_spinning(m);
    if (G* gp = steal_work(m, pp, now)) return gp;
  }

  // Nothing anywhere: give the P back. The global queue is re-checked under the same lock
  // that submitters from foreign threads take, so their wakep sees this P idle.
  d->lock.lock();
  if (d->runqsize.load(rlx) > 0) {
    G* gp = globrunqget(pp, 0);
    d->lock.unlock();
    return gp;
  }
  if (releasep() != pp) fatal("findrunnable: wrong P");
  pidleput(pp);
  d->lock.unlock();

  if (m->spinning) {
    stop_spinning(m);  // and we re-check every queue ourselves, next
    if (P* p2 = check_runqs_no_p(d)) {
      acquirep(p2);
      become_spinning(m);
      goto top;
    }
  }

  if (!idle_until_p(m)) return nullptr;
  goto top;
}

void install_sigaltstack(M* m) { m->altstack = signals::install_altstack(); }

void record_g0_stack([[maybe_unused]] M* m) {
#if NUGO_ASAN
  pthread_attr_t attr;
  pthread_getattr_np(pthread_self(), &attr);
  void* addr = nullptr;
  std::size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  m->g0san = {addr, size, nullptr};
#endif
}

}  // namespace

bool enter_runtime_foreign() { return enter_foreign() != nullptr; }
void leave_runtime_foreign() { leave_foreign(); }

void note_foreign_thread() {
  if (!getm() && enter_foreign()) leave_foreign();
}

// Both in the no-preemption section: a signal between reading the M and reading its curg
// could move the goroutine away and let another one become that M's curg.
NUGO_NOPREEMPT M* getm() { return tls_m; }

NUGO_NOPREEMPT G* getg() {
  M* m = tls_m;
  return m ? m->curg : nullptr;
}

#if NUGO_ASAN
void check_lock_rule() {
  if (G* gp = getg(); gp && gp->locks == 0)
    fatal("goroutine %lld takes a runtime lock outside NoPreempt (preempt.hpp)",
          static_cast<long long>(gp->goid));
}
#endif

// ---- Ms and Ps ----

namespace {

// gp is locked to another M: hand that M our P, and go idle (Go's startlockedm).
void startlockedm(M* m, G* gp) {
  M* mp = gp->lockedm;
  if (mp == m || mp->lockedg != gp) fatal("startlockedm: inconsistent locked M");
  mp->nextp = releasep();
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
    if (m->nextp || sched->stopping.load(rlx)) break;
  }
  d->lock.lock();
  --d->nmidlelocked;
  d->lock.unlock();
  if (!m->nextp) return false;
  acquirep(m->nextp);
  m->nextp = nullptr;
  return true;
}

// Go's schedule(), as a loop: find a G, run it, repeat. An mcall function may name the G to
// run next (park_m's change of mind, gosched_m's batch from the global queue).
void schedule(M* m) {
  for (Next next; !sched->stopping.load(rlx);) {
    if (m->lockedg) {  // this M runs its locked G and nothing else
      if (next.gp != m->lockedg) {
        if (next.gp) runqput(m->p, next.gp, false);
        if (!stoplockedm(m)) return;
        next = {m->lockedg, false};
      }
    } else if (!next.gp) {
      next.gp = findrunnable(m, &next.inherit_time);
      if (!next.gp) return;
      if (m->spinning) resetspinning(m);
    }
    if (next.gp->lockedm && next.gp->lockedm != m) {
      startlockedm(m, next.gp);
      next = {};
      continue;  // findrunnable sleeps without a P until one is handed back
    }
    next = execute(m, next.gp, next.inherit_time);
    if (m->exiting) {  // its locked G exited
      if (next.gp) runqput(m->p, next.gp, false);
      handoffp(releasep());
      return;
    }
  }
}

}  // namespace

void mstart(M* m) {
  tls_m = m;
  m->tid = static_cast<int>(gettid());
  install_sigaltstack(m);
  record_g0_stack(m);
  if (m->nextp) {
    acquirep(m->nextp);
    m->nextp = nullptr;
  }
  schedule(m);
  if (m->exiting) mexit(m);  // else the runtime stops, and run() joins the thread
  signals::remove_altstack(m->altstack);
  tls_m = nullptr;
}

void acquirep(P* pp) {
  M* m = getm();
  if (pp->status.load(rlx) != PStatus::idle || pp->m) fatal("acquirep: P %d is not idle", pp->id);
  m->p = pp;
  m->domain = pp->domain;  // an M belongs to the domain of the P it runs (startlockedm may
                           // hand it one of another domain); idle, to the list it is on
  pp->m = m;
  pp->status.store(PStatus::running, rlx);
  // A P starts running: sysmon, asleep while every P was idle, has work again.
  if (sched->sysmonwait.load(std::memory_order_acquire) && sched->sysmonwait.exchange(false))
    sched->sysmon_note.wakeup();
}

P* releasep() {
  M* m = getm();
  P* pp = m->p;
  if (!pp || pp->m != m) fatal("releasep: P not owned by this M");
  pp->m = nullptr;
  pp->status.store(PStatus::idle, rlx);
  m->p = nullptr;
  return pp;
}

void pidleput(P* pp) {
  if (!runqempty(pp)) fatal("pidleput: P %d has a non-empty run queue", pp->id);
  Domain* d = pp->domain;
  pp->link = d->pidle;
  d->pidle = pp;
  d->npidle.fetch_add(1, sc);
}

P* pidleget(Domain* d) {
  P* pp = d->pidle;
  if (pp) {
    d->pidle = pp->link;
    d->npidle.fetch_sub(1, sc);
  }
  return pp;
}

namespace {
void startm_locked(Domain* d, P* pp, bool spinning);
}  // namespace

// Starts an M (an idle one of pp's domain, or a new one) on pp, an idle P that nobody owns.
// With spinning, the caller has already counted the new M in the domain's nmspinning.
void startm(P* pp, bool spinning) {
  Domain* d = pp->domain;
  d->lock.lock();
  startm_locked(d, pp, spinning);
}

// The same on an idle P of d, if there is one. With spinning, the caller has already counted
// the new M in d's nmspinning, and this undoes that if no P is idle.
void startm(Domain* d, bool spinning) {
  d->lock.lock();
  P* pp = pidleget(d);
  if (!pp) {
    d->lock.unlock();
    if (spinning && d->nmspinning.fetch_sub(1, sc) <= 0) fatal("startm: negative nmspinning");
    return;
  }
  startm_locked(d, pp, spinning);
}

namespace {

// startm with d's lock held and pp taken; releases the lock.
void startm_locked(Domain* d, P* pp, bool spinning) {
  M* m = mget(d);
  if (!m) {
    d->lock.unlock();
    newm(d, pp, spinning);
    return;
  }
  m->spinning = spinning;
  m->nextp = pp;
  d->lock.unlock();
  m->park.wakeup();
}

}  // namespace

// d: the domain whose queues just got work (the submitter's P's, or the one a thread without
// a P queued into). A spinning M of d will find it; other domains' Ms find it by stealing.
void wakep(Domain* d) {
  if (d->npidle.load(sc) == 0) return;
  std::int32_t zero = 0;
  if (d->nmspinning.load(sc) != 0 || !d->nmspinning.compare_exchange_strong(zero, 1, sc)) return;
  startm(d, true);
}

// Where a thread without a P (a plain thread, an M inside nugo::syscall, a timer callback
// run by sysmon) queues goroutines and timers. Flat mode has one domain; NUMA mode will pick
// the node of the CPU the thread runs on.
Domain* foreign_domain() { return sched->domains.front().get(); }

void lock_all_domains() {
  for (auto& d : sched->domains) d->lock.lock();
}

void unlock_all_domains() {
  for (auto it = sched->domains.rbegin(); it != sched->domains.rend(); ++it) (*it)->lock.unlock();
}

// pp (idle, owned by nobody) was given up by an M that cannot use it now: a locked M, an M
// in a syscall (sysmon's retake, entersyscallblock), an exiting M. Start an M on it if
// there is work for it, else put it on the idle list (Go's handoffp).
void handoffp(P* pp) {
  Domain* d = pp->domain;
  if (!runqempty(pp) || d->runqsize.load(sc) > 0 || nexttimer(pp) != 0) {
    startm(pp, false);  // its timers need an M too: the poller may not know of them
    return;
  }
  // The last P to stop running while goroutines wait for I/O and nobody polls: its M polls.
  if (netpoll_any_waiters() && sched->lastpoll.load(sc) != 0 &&
      d->npidle.load(sc) == static_cast<int>(d->ps.size()) - 1) {
    startm(pp, false);
    return;
  }
  // Nobody spinning or idle to pick up work that appears next: become the spinner.
  std::int32_t zero = 0;
  if (d->nmspinning.load(sc) + d->npidle.load(sc) == 0 &&
      d->nmspinning.compare_exchange_strong(zero, 1, sc)) {
    startm(pp, true);
    return;
  }
  d->lock.lock();
  if (d->runqsize.load(rlx) > 0) {
    d->lock.unlock();
    startm(pp, false);
    return;
  }
  pidleput(pp);
  d->lock.unlock();
}

// ---- goroutine lifecycle ----

// A G from the free lists, else a never-used one from the current chunk.
Closure* newg() {
  NoPreempt np;
  M* m = getm();
  if (P* pp = m ? m->p : nullptr) {
    if (G* gp = gfget(pp)) return gp;
    if (pp->gchunk_next == pp->gchunk_end) {
      sched->glock.lock();
      pp->gchunk_next = sched->new_gchunk();
      sched->glock.unlock();
      pp->gchunk_end = pp->gchunk_next + kGChunk;
    }
    return pp->gchunk_next++;
  }
  ForeignCall call;
  sched->glock.lock();
  G* gp = nullptr;
  if (!sched->gfree.empty()) {
    gp = sched->gfree.back();
    sched->gfree.pop_back();
    sched->ngfree.store(static_cast<int>(sched->gfree.size()), rlx);
  } else {
    if (sched->gchunk_next == sched->gchunk_end) {
      sched->gchunk_next = sched->new_gchunk();
      sched->gchunk_end = sched->gchunk_next + kGChunk;
    }
    gp = sched->gchunk_next++;
  }
  sched->glock.unlock();
  return gp;
}

void freeg_unstarted(Closure* c) {
  NoPreempt np;
  G* gp = static_cast<G*>(c);
  gp->status.store(GStatus::dead, rlx);
  sched->glock.lock();
  sched->gfree.push_back(gp);
  sched->ngfree.store(static_cast<int>(sched->gfree.size()), rlx);
  sched->glock.unlock();
}

void newproc(Closure* c) {
  NoPreempt np;
  G* gp = static_cast<G*>(c);
  M* m = getm();
  P* pp = m ? m->p : nullptr;
  gp->status.store(GStatus::runnable, rlx);
  gp->locks = 1;  // until gentry has finished switching in
  if (pp) {
    gp->goid = next_goid(pp);
    runqput(pp, gp, true);  // publishes gp (release) to whichever P runs it
    wakep(pp->domain);
    return;
  }
  ForeignCall call;
  gp->goid = sched->goidgen.fetch_add(1, rlx) + 1;
  Domain* d = foreign_domain();
  d->lock.lock();
  globrunqput(d, gp);
  d->lock.unlock();
  wakep(d);
}

void gopark(bool (*unlockf)(G*, void*), void* lock, WaitReason reason) {
  M* m = getm();
  G* gp = m->curg;
  if (!gp) fatal("gopark: not on a goroutine");
  if (!m->p)
    fatal("goroutine %lld blocked inside nugo::syscall (%s); a syscall body must not use "
          "channels, sync or sleep", static_cast<long long>(gp->goid), to_string(reason));
  gp->waitreason = reason;
  m->waitunlockf = unlockf;
  m->waitlock = lock;
  mcall(park_m);
}

void injectglist(G** gl, int n) {
  if (n <= 0) return;
  for (int i = 0; i < n; ++i) ready_status(gl[i]);
  M* m = getm();
  P* pp = m ? m->p : nullptr;
  Domain* d = pp ? pp->domain : foreign_domain();
  int nglobal = pp ? std::min(n, static_cast<int>(d->npidle.load(sc))) : n;
  if (nglobal > 0) {
    d->lock.lock();
    globrunqputbatch(d, gl, nglobal);
    d->lock.unlock();
    for (int i = 0; i < nglobal && d->npidle.load(sc) > 0; ++i) startm(d, false);
  }
  for (int i = nglobal; i < n; ++i) runqput(pp, gl[i], false);
}

void goready(G* gp) {
  NoPreempt np;
  M* m = getm();
  if (P* pp = m ? m->p : nullptr) {
    ready_status(gp);
    runqput(pp, gp, true);
    wakep(pp->domain);
    return;
  }
  ForeignCall call;
  ready_status(gp);
  Domain* d = foreign_domain();
  d->lock.lock();
  globrunqput(d, gp);
  d->lock.unlock();
  wakep(d);
}

void gosched() { mcall(gosched_m); }
void gopreempt() { mcall(gopreempt_m); }

// ---- system calls (Go's entersyscall, exitsyscall, entersyscallblock) ----
//
// A G in a syscall keeps its M, and the M leaves its P in state `syscall`: nobody runs the
// P, but it stays reserved for the M's return. Whoever moves the P out of that state first
// owns it: exitsyscall (the fast path, the common case for a short call) or sysmon's retake,
// which hands it to another M once the call has lasted a sysmon tick and there is work.

void entersyscall(bool block) {
  NoPreempt np;
  M* m = getm();
  G* gp = m->curg;
  P* pp = m->p;
  if (!pp) fatal("entersyscall: no P (nested nugo::syscall?)");
  gp->status.store(GStatus::syscall, rlx);
  pp->syscalltick.store(pp->syscalltick.load(rlx) + 1, rlx);
  m->oldp = pp;
  m->p = nullptr;
  std::atomic_ref<M*>(pp->m).store(nullptr, rlx);
  if (!block) {
    pp->status.store(PStatus::syscall, std::memory_order_release);
    return;
  }
  // Known to block: hand the P off at once (the M will not be back soon).
  m->oldp = nullptr;
  pp->status.store(PStatus::idle, std::memory_order_release);
  handoffp(pp);
}

namespace {

// The slow path, on g0: no P to be had. Queue gp globally and park the M (Go's exitsyscall0).
Next exitsyscall0(M* m, G* gp) {
  Domain* d = m->domain;
  gp->status.store(GStatus::runnable, rlx);
  d->lock.lock();
  P* pp = pidleget(d);
  if (!pp) globrunqput(d, gp);
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
  M* m = getm();
  G* gp = m->curg;
  P* oldp = m->oldp;
  m->oldp = nullptr;
  PStatus expected = PStatus::syscall;
  if (oldp && oldp->status.compare_exchange_strong(expected, PStatus::idle, std::memory_order_acquire)) {
    acquirep(oldp);  // fast path: nobody took it
  } else {
    Domain* d = m->domain;
    d->lock.lock();
    P* pp = d->npidle.load(rlx) > 0 ? pidleget(d) : nullptr;
    d->lock.unlock();
    if (!pp) {
      mcall(exitsyscall0);  // returns on whichever M runs gp again, status set by execute
      return;
    }
    acquirep(pp);
  }
  P* pp = getm()->p;
  pp->syscalltick.store(pp->syscalltick.load(rlx) + 1, rlx);
  gp->status.store(GStatus::running, rlx);
}

// ---- lock_os_thread ----

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
void goyield() { mcall(goyield_m); }

// ---- StealOrder ----

void StealOrder::reset(std::uint32_t count) {
  count_ = count;
  coprimes_.clear();
  for (std::uint32_t i = 1; i <= count; ++i) {
    std::uint32_t a = i, b = count;
    while (b) { std::uint32_t r = a % b; a = b; b = r; }
    if (a == 1) coprimes_.push_back(i);
  }
}

const char* to_string(GStatus s) {
  switch (s) {
    case GStatus::idle: return "idle";
    case GStatus::runnable: return "runnable";
    case GStatus::running: return "running";
    case GStatus::syscall: return "syscall";
    case GStatus::waiting: return "waiting";
    case GStatus::dead: return "dead";
  }
  return "?";
}

const char* to_string(WaitReason r) {
  switch (r) {
    case WaitReason::none: return "";
    case WaitReason::waitgroup: return "sync.WaitGroup.Wait";
    case WaitReason::chan_send: return "chan send";
    case WaitReason::chan_recv: return "chan receive";
    case WaitReason::chan_send_nil: return "chan send (nil chan)";
    case WaitReason::chan_recv_nil: return "chan receive (nil chan)";
    case WaitReason::select: return "select";
    case WaitReason::select_no_cases: return "select (no cases)";
    case WaitReason::sleep: return "sleep";
    case WaitReason::mutex: return "sync.Mutex.Lock";
    case WaitReason::rwmutex_read: return "sync.RWMutex.RLock";
    case WaitReason::rwmutex_write: return "sync.RWMutex.Lock";
    case WaitReason::cond: return "sync.Cond.Wait";
    case WaitReason::io_wait: return "IO wait";
  }
  return "?";
}

}  // namespace nugo::detail

namespace nugo {

void yield() {
  if (detail::getg())
    detail::gosched();
  else
    sched_yield();
}

void lock_os_thread() {
  if (!detail::getg()) throw std::logic_error("nugo::lock_os_thread: not called from a goroutine");
  detail::lock_os_thread();
}

void unlock_os_thread() {
  if (!detail::getg()) throw std::logic_error("nugo::unlock_os_thread: not called from a goroutine");
  detail::unlock_os_thread();
}

std::int64_t this_g::id() {
  detail::G* gp = detail::getg();
  return gp ? gp->goid : 0;
}

}  // namespace nugo
