// The scheduler: goroutine lifecycle, switching, and the scheduling loop, after Go's
// proc.go. Read core/README.md first; the protocol comments here assume it. The rest of
// proc.go lives beside it: a domain's lists (domain.cpp), parking and waking Ms (idle.cpp,
// with the wake-up protocol), stealing (steal.cpp), system calls (syscall.cpp) and
// lock_os_thread (lockosthread.cpp).
//
// Where each function runs:
//   on a goroutine's stack:  newproc, gopark, goready, mcall, yield, entersyscall,
//     exitsyscall, lock_os_thread (each under NoPreempt: the preemption signal leaves
//     runtime code alone)
//   on g0 (an M's thread stack, no goroutine):  everything named *_m, execute, findrunnable,
//     steal_work, stopm, stoplockedm, startlockedm, and the schedule loop
//   anywhere (goroutine, g0, sysmon, foreign thread):  goready, wakep, startm, handoffp
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

#include "costs.hpp"  // virtual time's cost model
#include "fatal.hpp"
#include "netpoll.hpp"
#include "preempt.hpp"
#include "proc.hpp"
#include "signals.hpp"
#include "threadlocks.hpp"
#include "timer.hpp"
#include "trace.hpp"

namespace nugo::detail {

Sched* sched = nullptr;
std::atomic<Sched*> foreign_sched{nullptr};
std::atomic<int> foreign_calls{0};
thread_local bool starting_runtime = false;
thread_local bool tearing_down = false;

namespace {

// Foreign threads (no M) may call go(), goready() and WaitGroup::done() while run() is
// returning. A foreign call counts itself in before it reads the instance; run_main
// unpublishes the instance, then waits for the count to drain before deleting it.
// enter_foreign returns the instance (and, with mark, marks it foreign_seen) or nullptr,
// counted out again. A call that only reads (stats, validating go_on's node) does not mark:
// such a thread will not wake a goroutine through it.
Sched* enter_foreign(bool mark = true) {
  if (forked_child) [[unlikely]]
    forked_child_fatal("a call into the runtime from a thread without an M");
  foreign_calls.fetch_add(1, std::memory_order_seq_cst);
  Sched* s = foreign_sched.load(std::memory_order_seq_cst);
  // An M calling from inside nugo::syscall has no P and takes this path too, but it is no
  // foreign thread: its G is accounted for (in a syscall), so deadlock detection stays on.
  if (s && mark && !starting_runtime && !tls_m)
    s->foreign_seen.store(true, std::memory_order_relaxed);
  else if (!s)
    foreign_calls.fetch_sub(1, std::memory_order_seq_cst);
  return s;
}

void leave_foreign() { foreign_calls.fetch_sub(1, std::memory_order_seq_cst); }

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;
constexpr std::uint32_t kGlobalQueueTick = 61;  // every 61st schedule looks globally first

// A slice ended by preemption: whatever runs next starts a new one. `alone`: the preempted G,
// now at the tail of the domain's global queue, is all that queue and the pinned queue hold
// (read under the domain lock when it was queued). If the new tick were then the queues'
// turn (the 1-in-61 rule in findrunnable), the turn would hand that G a second slice at
// once, ahead of the goroutine a timer readied meanwhile: the 2-slice tail of the preemption
// latency (Go has it too). The rule bounds how long other goroutines wait in those queues;
// there are none, and the G that just had a whole slice of this P is not waiting. So only
// then is the tick skipped. With anyone else queued the turn stands: skipping it whenever a
// preemption landed on it would let a chain of preempted goroutines switch the rule off.
// Whether the G just queued globally is all that d's global and pinned queues hold.
bool queued_alone(Domain* d) NUGO_REQUIRES(d->lock) { return d->runq.size() == 1 && d->pinned.empty(); }

void new_slice_after_preemption(P* pp, bool alone) {
  std::uint32_t tick = pp->schedtick.load(std::memory_order_relaxed) + 1;
  if (alone && tick % kGlobalQueueTick == 0) ++tick;
  pp->preempt.store(false, std::memory_order_relaxed);
  pp->schedtick.store(tick, std::memory_order_relaxed);
}

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

// A stack of pp's domain's pool: a goroutine's stack is bound at its first run, so it lies on
// the node it starts on (its home, unless a thief of another node took it before it ran).
Stack stackalloc(P* pp) {
  if (!pp->stackcache)
    pp->nstackcache += pp->domain->stacks->get_batch(&pp->stackcache, kStackCacheRefill);
  FreeStack* f = pp->stackcache;
  pp->stackcache = f->next;
  --pp->nstackcache;
  return StackPool::from_free(f, sched->stack_size);
}

void stackfree(P* pp, const Stack& s) {
  FreeStack* f = StackPool::to_free(s);
  if (s.pool != pp->stack_pool) [[unlikely]] {  // it lives on another node: back home
    sched->domains[s.pool]->stacks->put_batch(&f, 1);
    return;
  }
  f->next = pp->stackcache;
  pp->stackcache = f;
  if (++pp->nstackcache < kStackCacheMax) return;
  pp->domain->stacks->put_batch(&pp->stackcache, kStackCacheMax / 2);
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

Next goexit0(M* m, G* gp);

[[noreturn]] void panic_exit(const G* gp, const char* what) {
  std::fprintf(stderr, "panic: %s\n\ngoroutine %lld [running]:\n(exception escaped the goroutine)\n",
               what, static_cast<long long>(gp->goid));
  std::fflush(stderr);
  exit_fatal();
}

// Every goroutine starts here, on its own stack, entered from execute().
[[noreturn]] void gentry(transfer_t t) {
  G* gp = static_cast<G*>(t.data);
  getm()->g0ctx = t.fctx;
  sanitizer_finish_switch(gp->san);
  // newproc took one: the switch in is over, user code may be preempted. A request the
  // signal left meanwhile (kPreemptAtExit, link.hpp) is dropped rather than honoured here:
  // a goroutine starts where it was placed (go_on's promise; the QEMU 4-node check caught a
  // placed goroutine yielding before its first instruction and stolen by another node).
  // sysmon asks again if the slice is still over.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  gp->locks = 0;
  try {
    gp->invoke(gp);
  } catch (const std::exception& e) {
    panic_exit(gp, e.what());
  } catch (...) {
    panic_exit(gp, "unknown exception (not derived from std::exception)");
  }
  // The closure is destroyed with the G's preemption count raised. A goroutine stopped half
  // way through its closure's destructors, and then abandoned when main returns, would leave
  // the teardown a closure it can neither finish nor destroy again (LSan reports the leaked
  // channel when the yield at runtime exit stops a goroutine in a Chan's release inside the
  // closure's destructor). invoke is cleared first: a destructor that blocks and is abandoned
  // there leaks its closure rather than having it destroyed twice.
  acquire_locks(gp);
  gp->invoke = nullptr;
  gp->discard(gp);
  mcall(goexit0);
  fatal("goexit: dead goroutine %lld resumed", static_cast<long long>(gp->goid));
}

}  // namespace

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
  // Every switch from a goroutine to its g0 passes here, before the mcall function takes
  // any lock: in a child of fork() those locks may be held by threads that are gone.
  if (forked_child) [[unlikely]]
    forked_child_fatal("a goroutine blocking, yielding or ending");
  G* gp = getg();
  acquire_locks(gp);
  M* m = getm();
  ThreadLocks& tl = thread_locks;
  if (tl.held > INT16_MAX) [[unlikely]]
    fatal("goroutine %lld holds %d locks of its thread", static_cast<long long>(gp->goid), tl.held);
  gp->thread_locks = static_cast<std::int16_t>(tl.held);  // always: a recycled G must not
                                                          // bring an old count back
  tl.held = 0;
  sanitizer_start_switch(fn == goexit0 ? nullptr : &gp->san, m->g0san);
  transfer_t t = jump_fcontext(m->g0ctx, reinterpret_cast<void*>(fn));
  getm()->g0ctx = t.fctx;  // getm() again: we may be on another thread now
  sanitizer_finish_switch(gp->san);
  if (gp->thread_locks != 0) carry_thread_locks_in(gp);
  release_locks(gp);
}

namespace {

// Virtual time's cost model (vtime/costs.hpp, kMovedLines): a goroutine that runs on another P
// than the one it last ran on (or was made on) brings its state along. A channel's hand-off to
// a goroutine of another node is charged here, when the receiver runs where the sender readied
// it.
void charge_moved([[maybe_unused]] G* gp, [[maybe_unused]] const P* pp) {
#if NUGO_VIRTUAL_TIME
  if (!vtime::on()) return;
  if (gp->vp >= 0 && gp->vp != pp->id)
    vtime::charge_lines(sched->allp[static_cast<std::size_t>(gp->vp)]->node, pp->node,
                        vtime::kMovedLines, vtime::Cost::migrate);
  gp->vp = pp->id;
#endif
}

// Runs gp on the current M until it switches back, then finishes the switch on g0.
Next execute(M* m, G* gp, bool inherit_time) {
  run_not_before_ready(gp);  // virtual time: not before it became runnable
  P* pp = m->p;
  charge_moved(gp, pp);
  m->curg = gp;
  tls_g = gp;
  gp->status.store(GStatus::running, rlx);
  bump(pp->stats.runs);  // runs_home is runs - runs_away, made at snapshot time
  if (gp->home != pp->node) [[unlikely]] bump(pp->stats.runs_away);
  traceev(Ev::go_start, pp->id, gp->goid, 0, static_cast<std::uint32_t>(gp->home), 0,
          Stamp::borrow);
  if (pp->nowork_since) [[unlikely]] pp->nowork_since = 0;  // it has work (remote_delay)
  if (!inherit_time) {  // a new time slice
    pp->schedtick.store(pp->schedtick.load(rlx) + 1, rlx);
    if (pp->preempt.load(rlx)) pp->preempt.store(false, rlx);
  }
  if (!gp->ctx) {
    // First run: the stack is bound now, not at spawn (core/README.md, "Lazy stacks").
    gp->stack = stackalloc(pp);
    gp->san = {gp->stack.lo, gp->stack.size(), nullptr};
    sanitizer_new_fiber(gp->san);
    gp->ctx = make_fcontext(gp->stack.hi, gp->stack.size(), gentry);
  }
  sanitizer_start_switch(&m->g0san, gp->san);
  transfer_t t = jump_fcontext(gp->ctx, gp);
  sanitizer_finish_switch(m->g0san);
  gp->ctx = t.fctx;
  m->curg = nullptr;
  tls_g = nullptr;
  if (!gp->stack.guarded) check_canary(gp);
  return reinterpret_cast<McallFn>(t.data)(m, gp);
}

// ---- what a goroutine asks g0 to do after switching away (the mcall functions) ----

Next goexit0(M* m, G* gp) {
  P* pp = m->p;
  const std::int64_t goid = gp->goid;
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
  sanitizer_destroy_fiber(gp->san);
  stackfree(pp, gp->stack);
  gp->stack = {};
  gp->ctx = nullptr;
  gfput(pp, gp);
  // Recorded last, so that its time can be lent to the start that follows.
  traceev(Ev::go_stop, pp->id, goid, 0, 0, static_cast<std::uint8_t>(StopWhy::end), Stamp::lend);
  return {};
}

// Go's gosched_m: gp goes to the tail of the global queue. If the local queue is empty and no
// timer is pending, findrunnable would lock the global queue next anyway to take a batch;
// doing both in one critical section halves the cost of a yield and picks exactly the same G.
// (With a timer pending, findrunnable must run it first: a yield loop would starve it.)
// *alone (if given): whether gp was then all that the domain's queues held.
Next requeue_global(M* m, G* gp, bool* alone = nullptr) {
  P* pp = m->p;
  Domain* d = pp->domain;
  stamp_runnable(gp);
  gp->status.store(GStatus::runnable, rlx);
  bool local_work = !runqempty(pp) || nexttimer(pp) != 0;
  d->lock.lock();
  globrunqput(d, gp, pp->node);
  if (alone) *alone = queued_alone(d);
  G* next = nullptr;
  // Not a pinned G for a locked M: schedule would put it in the ring, where another node's
  // thief could start it.
  if (!local_work && !(!m->lockedg && d->npinned.load(rlx) > 0 && (next = pinnedget(d, pp))))
    next = globrunqget(d, pp, 0);
  d->lock.unlock();
  return {next, false};
}

Next gosched_m(M* m, G* gp) {
  traceev(Ev::go_stop, m->p->id, gp->goid, 0, 0, static_cast<std::uint8_t>(StopWhy::yield));
  return requeue_global(m, gp);
}

// Go's gopreempt_m: as gosched_m. The slice sysmon ended is over now: whatever runs next
// starts a new one, even a G taken from runnext (a timer may just have readied it there).
Next preempt_requeue(M* m, G* gp, StopWhy why) {
  P* pp = m->p;
  traceev(Ev::go_stop, pp->id, gp->goid, 0, 0, static_cast<std::uint8_t>(why));
  bump(pp->stats.preemptions);
  bool alone = false;
  Next next = requeue_global(m, gp, &alone);
  new_slice_after_preemption(pp, alone);
  // NUMA mode: gp waits in the global queue of a node whose Ps are all busy; an idle node
  // should take it (two goroutines preempting each other would otherwise share one node
  // forever). A no-op in flat mode, where a busy P's domain has no remote nodes.
  if (!pp->domain->remote.empty() && pp->domain->npidle.load(sc) == 0) wakep_nearest_idle(pp->domain);
  return next;
}

Next gopreempt_m(M* m, G* gp) { return preempt_requeue(m, gp, StopWhy::preempt_cooperative); }
Next gopreempt_signal_m(M* m, G* gp) { return preempt_requeue(m, gp, StopWhy::preempt_signal); }

Next goyield_m(M* m, G* gp) {
  traceev(Ev::go_stop, m->p->id, gp->goid, 0, 0, static_cast<std::uint8_t>(StopWhy::yield),
          Stamp::lend);
  stamp_runnable(gp);
  gp->status.store(GStatus::runnable, rlx);
  runqput(m->p, gp, false);
  return {};
}

Next park_m(M* m, G* gp) {
  traceev(Ev::go_stop, m->p->id, gp->goid, 0, static_cast<std::uint32_t>(gp->waitreason),
          static_cast<std::uint8_t>(StopWhy::block), Stamp::lend);
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

}  // namespace

// The waker took gp off its primitive's wait queue under that primitive's lock, which park_m
// released only after publishing `waiting`; nobody else can ready gp. So a check and a store
// do what a CAS would, without the read-modify-write on the handoff path.
void ready_status(G* gp) {
  GStatus s = gp->status.load(std::memory_order_acquire);
  if (s != GStatus::waiting)
    fatal("goready: goroutine %lld is %s, not waiting", static_cast<long long>(gp->goid),
          to_string(s));
  gp->waitreason = WaitReason::none;
  stamp_runnable(gp);
  gp->status.store(GStatus::runnable, std::memory_order_relaxed);
  if (tracing()) [[unlikely]] {
    M* m = getm();
    G* waker = m ? m->curg : nullptr;
    UnblockBy by = waker ? UnblockBy::goroutine : m ? UnblockBy::scheduler : UnblockBy::thread;
    trace_event(Ev::go_unblock, m && m->p ? m->p->id : -1, gp->goid,
                waker ? static_cast<std::uint64_t>(waker->goid) : 0, 0,
                static_cast<std::uint8_t>(by));
  }
}

namespace {

// From pp's domain's queues, d locked: the pinned queue first (placed goroutines, which
// nobody else may run), else a batch of the global queue.
G* domain_queues_get(Domain* d, P* pp) NUGO_REQUIRES(d->lock) {
  G* gp = pinnedget(d, pp);
  return gp ? gp : globrunqget(d, pp, 0);
}

// Finds a runnable goroutine, parking the M while there is none. Returns nullptr only when
// the runtime is stopping. Go's findRunnable, in Go's order.
// A go_stop's time lent to the next start (Stamp, trace.hpp) survives only the path that pops
// the local run queue at once; every other path takes it back (m->trace.lent = 0) before it
// can wait.
G* findrunnable(M* m, bool* inherit_time) {
  *inherit_time = false;
top:
  vtime::checkpoint();  // each look for work: a turn for the others if the quantum is up
  if (sched->stopping.load(rlx)) return nullptr;
  if (!m->p) {  // e.g. after exitsyscall's slow path
    m->trace.lent = 0;
    if (!idle_until_p(m)) return nullptr;
  }
  P* pp = m->p;
  Domain* d = pp->domain;
  std::int64_t now = 0;
  if (nexttimer(pp) != 0) checktimers(pp, now = nanotime());

  // Fairness: two goroutines readying each other through runnext would otherwise keep the
  // global queue waiting forever.
  // With both of the domain's queues in use, every other such turn goes to the pinned one,
  // so that neither can starve the other.
  if (std::uint32_t tick = pp->schedtick.load(rlx);
      tick % kGlobalQueueTick == 0 && domain_queues_nonempty(d, rlx)) {
    bool pinned_first = (tick / kGlobalQueueTick) & 1;
    m->trace.lent = 0;
    d->lock.lock();
    G* gp = pinned_first ? pinnedget(d, pp) : nullptr;
    if (!gp) gp = globrunqget(d, pp, 1);
    if (!gp && !pinned_first) gp = pinnedget(d, pp);
    d->lock.unlock();
    if (gp) return gp;
  }
  if (auto [gp, inherit] = runqget(pp); gp) {
    if (inherit && pp->preempt.load(rlx)) {
      // A G taken from runnext inherits the time slice, so two goroutines readying each
      // other could keep the P forever. Once sysmon has ended the slice, the one due next is
      // treated as preempted: to the global queue, and a new slice for whatever runs next.
      gp->status.store(GStatus::runnable, rlx);
      m->trace.lent = 0;
      d->lock.lock();
      globrunqput(d, gp, pp->node);
      bool alone = queued_alone(d);
      d->lock.unlock();
      bump(pp->stats.preemptions);
      new_slice_after_preemption(pp, alone);
      goto top;
    }
    *inherit_time = inherit;
    return gp;
  }
  m->trace.lent = 0;
  if (domain_queues_nonempty(d, rlx)) {
    d->lock.lock();
    G* gp = domain_queues_get(d, pp);
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
      traceev(Ev::poll, pp->id, 0, 0, static_cast<std::uint32_t>(n),
              static_cast<std::uint8_t>(PollFrom::findrunnable));
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
  if (domain_queues_nonempty(d, rlx)) {
    G* gp = domain_queues_get(d, pp);
    d->lock.unlock();
    return gp;
  }
  if (releasep() != pp) fatal("findrunnable: wrong P");
  pidleput(d, pp);
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
  sanitizer_thread_fiber(m->g0san);
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

ForeignCall::ForeignCall(Purpose why)
    : on_m_(getm() != nullptr), counted_(!on_m_ && enter_foreign(why == Purpose::wake)) {
  // An M of a forked child (inside nugo::syscall, say) may not wake anything either, as
  // enter_foreign refuses every thread without an M there.
  if (forked_child && why == Purpose::wake) [[unlikely]]
    forked_child_fatal("a call into the runtime that may wake a goroutine");
}

ForeignCall::~ForeignCall() {
  if (counted_) leave_foreign();
}

void ForeignCall::require(const char* what) const {
  if (!running())
    throw std::logic_error(std::string("nugo: the runtime is not running (call ") + what +
                           " within nugo::run)");
}

void note_foreign_thread_slow() {
  if (!getm() && enter_foreign()) leave_foreign();
}

void for_each_g(void (*fn)(G* gp, void* arg), void* arg) {
  NoPreempt np;  // glock is a runtime lock
  sched->glock.lock();
  for_each_g_in(sched->gchunks, [&](G* gp) { fn(gp, arg); });
  sched->glock.unlock();
}

namespace {
// Threads without an M draw from streams after the Ms' (Sched::kMaxMCount), in the order they
// first draw in a run, seeded with that run's seed (published by run() before anything runs,
// so that a plain thread never reads the instance, which may be going away meanwhile). A
// thread that drew in an earlier run starts a new stream at its first draw in the next.
std::atomic<std::uint64_t> run_seed{Config::kDefaultSeed};
std::atomic<std::uint64_t> run_generation{0};
std::atomic<std::uint64_t> foreign_streams{0};
}  // namespace

void publish_run_seed(std::uint64_t seed) {
  run_seed.store(seed, std::memory_order_relaxed);
  foreign_streams.store(0, std::memory_order_relaxed);
  run_generation.fetch_add(1, std::memory_order_release);
}

std::uint32_t fastrand() {
  if (M* m = getm()) return m->rand();
  thread_local std::uint64_t x = 0;  // xorshift64 (never 0 once seeded)
  thread_local std::uint64_t generation = ~std::uint64_t{0};
  if (const std::uint64_t now = run_generation.load(std::memory_order_acquire); generation != now) {
    generation = now;
    x = rand_seed(run_seed.load(std::memory_order_relaxed),
                  Sched::kMaxMCount + foreign_streams.fetch_add(1, std::memory_order_relaxed)) | 1;
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return static_cast<std::uint32_t>(x);
}

bool can_spin(int iter) {
  M* m = getm();
  if (iter >= 4 || !m || !m->p || sched->plan.gomaxprocs <= 1) return false;
  // The holder runs on another P only if some P of the runtime is neither idle nor spinning.
  int idle_or_spinning = 0;
  for (const auto& d : sched->domains) idle_or_spinning += d->npidle.load() + d->nmspinning.load();
  if (sched->plan.gomaxprocs <= idle_or_spinning + 1) return false;
  return runqempty(m->p);
}

#if !NUGO_INLINE_TLS
// Out of line, in the no-preemption section (nugo/runtime.hpp, NUGO_INLINE_TLS).
NUGO_NOPREEMPT M* getm() { return tls_m; }
NUGO_NOPREEMPT G* getg() { return tls_g; }
#endif

#if NUGO_ASAN
void check_lock_rule() {
  if (G* gp = getg(); gp && gp->locks == 0)
    fatal("goroutine %lld takes a runtime lock outside NoPreempt (link.hpp)",
          static_cast<long long>(gp->goid));
}
#endif

// ---- Ms ----

namespace {

// Go's schedule(), as a loop: find a G, run it, repeat. An mcall function may name the G to
// run next (park_m's change of mind, gosched_m's batch from the global queue).
void schedule(M* m) {
  for (Next next; !sched->stopping.load(rlx);) {
    vtime::checkpoint();  // in virtual time: the others' turn, if this thread's quantum is up
    if (m->lockedg) {  // this M runs its locked G and nothing else
      if (next.gp != m->lockedg) {
        if (next.gp) runqput(m->p, next.gp, false);
        m->trace.lent = 0;
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
  vtime::attach(m->vmember);  // in virtual time: wait for this thread's first turn
  set_fp_control(kDefaultFpControl);  // not what the thread that made it had set (fiber.hpp)
  tls_m = m;
  trace_bind_thread(&m->trace, static_cast<std::uint32_t>(m->id));
  m->tid = static_cast<int>(gettid());
  install_sigaltstack(m);
  record_g0_stack(m);
  if (P* next = m->nextp.load(std::memory_order_acquire)) {
    acquirep(next);
    m->nextp.store(nullptr, rlx);
  }
  schedule(m);
  if (m->exiting) mexit(m);  // else the runtime stops, and run() joins the thread
  vtime::detach();  // (mexit's already left: a no-op then)
  signals::remove_altstack(m->altstack);
  trace_bind_thread(nullptr, 0);
  tls_m = nullptr;
}

// ---- goroutine lifecycle ----

// A G from the free lists, else a never-used one from the current chunk.
Closure* newg() {
  if (forked_child) [[unlikely]]
    forked_child_fatal("nugo::go");
  forbid_in_syscall_body("nugo::go");
  NoPreempt np;
  M* m = getm();
  if (P* pp = m ? m->p : nullptr) {
    if (G* gp = gfget(pp)) return gp;
    if (pp->gchunk_next == pp->gchunk_end) {
      sched->glock.lock();
      pp->gchunk_next = sched->new_gchunk(pp->domain);
      sched->glock.unlock();
      pp->gchunk_end = pp->gchunk_next + kGChunk;
    }
    return pp->gchunk_next++;
  }
  ForeignCall call(ForeignCall::Purpose::wake);
  call.require("go");
  sched->glock.lock();
  G* gp = nullptr;
  if (!sched->gfree.empty()) {
    gp = sched->gfree.back();
    sched->gfree.pop_back();
    sched->ngfree.store(static_cast<int>(sched->gfree.size()), rlx);
  } else {
    if (sched->gchunk_next == sched->gchunk_end) {
      sched->gchunk_next = sched->new_gchunk(foreign_domain());
      sched->gchunk_end = sched->gchunk_next + kGChunk;
    }
    gp = sched->gchunk_next++;
  }
  sched->glock.unlock();
  return gp;
}

// Go's gcount, by a walk over every G: O(goroutines ever alive), for leak checks, not for
// hot paths. A G between newg and newproc (its closure being built) is not counted yet.
int num_goroutines() {
  ForeignCall call(ForeignCall::Purpose::read);
  if (!call.running()) return 0;
  int n = 0;  // for_each_g holds NoPreempt around its lock
  for_each_g(
      [](G* gp, void* n) {
        GStatus s = gp->status.load(rlx);
        *static_cast<int*>(n) += s != GStatus::idle && s != GStatus::dead;
      },
      &n);
  return n;
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

namespace {

// Queues gp on domain d's global queue and wakes a P for it (from a thread without a P, or
// for a goroutine headed to another node). node: where it is queued from (globrunqput).
void globrunqput_wake(Domain* d, G* gp, int node) {
  d->lock.lock();
  globrunqput(d, gp, node);
  d->lock.unlock();
  wakep(d);
}

// Queues gp on d's pinned queue (go_on placed it on d's node, or ready=home sends it back
// there) and wakes a P of d for it: no other node may take it, so none is woken (wakep_home).
void pinnedput_wake(Domain* d, G* gp, int node) {
  d->lock.lock();
  pinnedput(d, gp, node);
  d->lock.unlock();
  wakep_home(d, node);
}

// Queues gp, which go_on placed on d's node, as NumaPolicy::go_on says: on d's pinned queue, or
// on its global queue (go_on=queued), where a thief of another node may take it; and wakes a P
// of d for it (a wake from node `node`, another node's, counts as wakeups_cross_node either
// way), or with go_on=queued and no idle P in d, the nearest idle node's (wakep).
void placedput_wake(Domain* d, G* gp, int node) {
  if (!sched->plan.policy.go_on_queued) return pinnedput_wake(d, gp, node);
  d->lock.lock();
  globrunqput(d, gp, node);
  d->lock.unlock();
  wakep_from(d, node);
}

// Makes gp runnable. node: its home (a node index) for go_on, or -1 for the creator's node.
void newproc1(G* gp, int node) {
  M* m = getm();
  P* pp = m ? m->p : nullptr;
  stamp_runnable(gp);
#if NUGO_VIRTUAL_TIME
  gp->vp = pp ? pp->id : -1;  // its G and closure were written on pp's CPU
#endif
  gp->status.store(GStatus::runnable, rlx);
  gp->locks = 1;  // until gentry has finished switching in
  bool placed = node >= 0 && sched->domains.size() > 1;  // go_on in NUMA mode
  if (pp) {
    gp->goid = next_goid(pp);
    bump(pp->stats.created);
    gp->home = static_cast<std::int16_t>(node >= 0 ? node : pp->node);
    traceev(Ev::go_create, pp->id, gp->goid, m->curg ? static_cast<std::uint64_t>(m->curg->goid) : 0,
            static_cast<std::uint32_t>(gp->home));
    if (placed) {
      bump(pp->stats.placed);
      if (gp->home != pp->node) bump(pp->stats.placed_remote);
      return placedput_wake(home_domain(gp), gp, pp->node);
    }
    runqput(pp, gp, true);  // publishes gp (release) to whichever P runs it
    wakep(pp->domain);
    return;
  }
  ForeignCall call(ForeignCall::Purpose::wake);
  call.require("go");
  gp->goid = sched->goidgen.fetch_add(1, rlx) + 1;
  Domain* d = foreign_domain();
  int here = thread_node(d);
  gp->home = static_cast<std::int16_t>(node >= 0 ? node : here);
  traceev(Ev::go_create, -1, gp->goid, 0, static_cast<std::uint32_t>(gp->home));
  if (placed) d = home_domain(gp);
  d->created_foreign.fetch_add(1, rlx);
  if (placed) return placedput_wake(d, gp, here);
  globrunqput_wake(d, gp, here);
}

}  // namespace

void newproc(Closure* c) {
  NoPreempt np;
  newproc1(static_cast<G*>(c), -1);
}

// The topology node index of OS node os_node for go_on, or std::invalid_argument.
int go_on_node(int os_node) {
  NoPreempt np;
  ForeignCall call(ForeignCall::Purpose::read);  // a thread without an M: the instance stays
  call.require("go");
  const Sched* s = sched;
  const topo::Topology& t = s->topology;
  std::string valid;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].os_index == os_node) {
      if (t.nodes[i].pus.empty())
        throw std::invalid_argument("nugo::go_on: node " + std::to_string(os_node) +
                                    " has no CPUs (a memory-only node runs no goroutines)");
      if (s->plan.domain_of_node[i] < 0)
        throw std::invalid_argument("nugo::go_on: node " + std::to_string(os_node) +
                                    " has no P (NUGO_PROCS=" + std::to_string(s->plan.gomaxprocs) +
                                    " placed none there)");
      return static_cast<int>(i);
    }
    if (!t.nodes[i].pus.empty()) valid += (valid.empty() ? "" : ", ") + std::to_string(t.nodes[i].os_index);
  }
  throw std::invalid_argument("nugo::go_on: no node " + std::to_string(os_node) +
                              " (nodes with CPUs: " + valid + ")");
}

void newproc_on(Closure* c, int node) {
  NoPreempt np;
  newproc1(static_cast<G*>(c), node);
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
  if (sched->domains.size() > 1) {
    // NUMA mode: what the poller readied goes to its home node's queue; the rest is ours.
    int kept = 0;
    for (int i = 0; i < n; ++i) {
      Domain* home = home_domain(gl[i]);
      if (home && home != d)
        globrunqput_wake(home, gl[i], pp ? pp->node : thread_node(d));
      else
        gl[kept++] = gl[i];
    }
    n = kept;
    if (n == 0) return;
  }
  int nglobal = pp ? std::min(n, static_cast<int>(d->npidle.load(sc))) : n;
  if (nglobal > 0) {
    d->lock.lock();
    globrunqputbatch(d, gl, nglobal, pp ? pp->node : thread_node(d));
    d->lock.unlock();
    for (int i = 0; i < nglobal && d->npidle.load(sc) > 0; ++i) startm(d, false);
    if (d->npidle.load(sc) == 0) wakep(d);  // NUMA mode: a spinner from the nearest idle node
  }
  for (int i = nglobal; i < n; ++i) runqput(pp, gl[i], false);
  // The ring's tail is a release store; wakep's loads of npidle and nmspinning must not pass
  // it (x86 lets a load pass an earlier store), or a spinner's re-check after its decrement
  // and this wakep could both miss the work (the Dekker pair of core/README.md). runnext's
  // exchange is such a fence already.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (nglobal < n) wakep(d);  // NUMA mode: the ring is stealable from an idle node
}

void goready(G* gp) {
  NoPreempt np;
  // A goroutine that readies another does not yield as it leaves this runtime call
  // (kPreemptAtExit, link.hpp): the readied one waits in runnext, which the ended slice
  // sends to the global queue anyway, and the waker usually has little left to do: `done();
  // return`, `send(result); return`. Yielding there let main return while the waker still
  // held objects in its frame, which the teardown then abandoned (LSan, under ASan at 8 Ps).
  // Only the request is dropped: the slice's end (pp->preempt) stands, and sysmon signals
  // again at its next look.
  if (G* self = np.g(); self && (self->locks & kPreemptAtExit)) [[unlikely]]
    self->locks &= static_cast<std::uint16_t>(~kPreemptAtExit);
  M* m = getm();
  if (P* pp = m ? m->p : nullptr) {
    ready_status(gp);
    if (sched->plan.policy.ready_home) [[unlikely]] {
      // ready=home: a goroutine of another node goes back there and runs there next, on its
      // node's pinned queue (no thief of another node takes it on the way).
      if (Domain* home = home_domain(gp); home && home != pp->domain) {
        pinnedput_wake(home, gp, pp->node);
        return;
      }
    }
    runqput(pp, gp, true);
    wakep(pp->domain);
    return;
  }
  ForeignCall call(ForeignCall::Purpose::wake);
  call.require("go");
  ready_status(gp);
  Domain* here = foreign_domain();
  if (Domain* home = sched->plan.policy.ready_home ? home_domain(gp) : nullptr; home && home != here)
    return pinnedput_wake(home, gp, thread_node(here));
  globrunqput_wake(here, gp, thread_node(here));
}

void gosched() { mcall(gosched_m); }
void gopreempt(bool by_signal) { mcall(by_signal ? gopreempt_signal_m : gopreempt_m); }

void goyield() { mcall(goyield_m); }

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
  detail::forbid_in_syscall_body("nugo::yield");
  if (detail::getg())
    detail::gosched();
  else
    sched_yield();
}

std::int64_t this_g::id() {
  detail::G* gp = detail::getg();
  return gp ? gp->goid : 0;
}

int this_g::node() {
  detail::NoPreempt np;  // the P read must be the one running us
  detail::M* m = detail::getm();
  if (!m || !m->curg || !m->p) return -1;
  return detail::sched->topology.nodes[m->p->node].os_index;
}

int this_g::home_node() {
  detail::NoPreempt np;
  detail::G* gp = detail::getg();
  return gp ? detail::sched->topology.nodes[gp->home].os_index : -1;
}

}  // namespace nugo
