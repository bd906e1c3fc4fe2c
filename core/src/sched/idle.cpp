// Idle Ms and spinning: starting, parking and waking Ms (Go's startm, stopm, wakep,
// handoffp, and the end of findRunnable), the deadlock check, and M creation and exit.
//
// Worker parking and unparking (the part that must lose no wake-up), as in Go:
//   A submitter makes a G runnable (runqput or globrunqput), then calls wakep(), which starts
//   a spinning M if there is an idle P and nobody is spinning. A spinning M that finds work
//   stops spinning and calls wakep() for the rest of the work.
//   A spinning M that finds nothing first drops its P, then decrements nmspinning, then
//   re-checks every run queue of its domain. Both sides do "publish, then look" with a full
//   fence (StoreLoad) between, so at least one sees the other: either the submitter sees
//   nmspinning == 0 and wakes someone, or the spinner sees the new G.
//   At most half of the busy Ps have a spinning M (2*nmspinning < gomaxprocs - npidle), so
//   idle Ms do not burn CPU when there is little to steal.
#include <algorithm>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include "costs.hpp"  // virtual time's cost model
#include "deadlock.hpp"
#include "fatal.hpp"
#include "netpoll.hpp"
#include "proc.hpp"
#include "timer.hpp"
#include "trace.hpp"

namespace nugo::detail {
namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;
constexpr std::int64_t kDeadlockGraceNs = 50'000'000;
// An idle M beyond gomaxprocs exits after this long without work (Go keeps them forever).
constexpr std::int64_t kIdleMLifetimeNs = 1'000'000'000;

// Ms idle or parked with their locked G, in every domain. All domain locks held.
int idle_ms_everywhere() {
  int n = 0;
  for (const auto& d : sched->domains) {
    d->lock.assert_held();
    n += d->nmidle + d->nmidlelocked;
  }
  return n;
}

// Go's checkdead, for the M that found every other M idle. Called on the M's way out of the
// grace-period sleep, without a P. Nothing can run again if still every M is idle, no timer is
// pending, no goroutine waits for I/O, no run queue holds a goroutine, and no plain thread has
// called into the runtime.
// Then it reports every goroutine's wait reason and exits with status 2, as Go does.
void checkdead() {
  if (!sched->cfg.detect_deadlock || sched->foreign_seen.load() || sched->stopping.load() ||
      sched->main_returned.load())
    return;
  lock_all_domains();  // a program blocked across every domain is one deadlock
  bool dead = idle_ms_everywhere() + 1 == sched->mcount.load() && !sched->foreign_seen.load() &&
              !netpoll_any_waiters();
  for (const auto& d : sched->domains)
    dead = dead && !domain_queues_nonempty(d.get(), sc) && d->nmlockedwaking.load(sc) == 0;
  for (const auto& p : sched->allp) dead = dead && nexttimer(p.get()) == 0 && runqempty(p.get());
  if (!dead) {
    unlock_all_domains();
    return;
  }
  sched->glock.lock();  // gchunks; held until exit
  std::fputs("fatal error: all goroutines are asleep - deadlock!\n", stderr);
  try {
    WaitingReport report;
    capture_waiting_goroutines(getm(), report);
    report.print();
  } catch (...) {  // out of memory, say: the first line stands, and the exit status
    std::fputs("(the goroutines could not be listed)\n", stderr);
  }
  std::fputs("\n(nugo: if a thread outside the runtime was going to wake one of these goroutines, "
             "run with NUGO_DEBUG=deadlock=0 or Config::detect_deadlock = false)\n",
             stderr);
  std::fflush(stderr);
  exit_fatal();
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

// Takes an idle P of d for this M, if there is one.
bool acquire_idle_p(Domain* d) {
  d->lock.lock();
  P* pp = pidleget(d);
  d->lock.unlock();
  if (pp) acquirep(pp);
  return pp != nullptr;
}

}  // namespace

// An idle P of m's domain, else of the nearest domain that has one (m then belongs to that
// domain). For the poller (what it readied, or the timer it woke for, may be anywhere) and
// for a goroutine back from a system call (Go's exitsyscall takes any idle P).
bool acquire_idle_p_nearest(M* m) {
  Domain* d = m->domain;
  if (acquire_idle_p(d)) return true;
  for (const std::vector<Domain*>& group : d->remote)
    for (Domain* r : group)
      if (r->npidle.load(sc) > 0 && acquire_idle_p(r)) return true;
  return false;
}

namespace {

// Whether d holds work a thief from another domain would take: its global queue, or the ring
// of the caller's P (the P that just queued something, when the caller has one).
bool remote_stealable(Domain* d) {
  if (d->runqsize.load(sc) > 0) return true;
  M* m = getm();
  P* pp = m ? m->p : nullptr;
  return pp && pp->domain == d && runq_ring_nonempty(pp);
}

// Starts a spinning M on an idle P of d unless one already spins there (Go's wakep).
void wake_spinner(Domain* d, bool cross_node) {
  std::int32_t zero = 0;
  if (d->nmspinning.load(sc) != 0 || !d->nmspinning.compare_exchange_strong(zero, 1, sc)) return;
  startm(d, true, cross_node);
}

// startm with d's lock held and pp taken; releases the lock.
void startm_locked(Domain* d, P* pp, bool spinning) NUGO_RELEASE(d->lock) {
  trace_end_loan();
  M* m = mget(d);
  if (!m) {
    d->lock.unlock();
    newm(d, pp, spinning);
    return;
  }
  m->spinning = spinning;
  m->nextp.store(pp, std::memory_order_release);
  d->lock.unlock();
  m->park.wakeup();
}

}  // namespace

// Starts an M on pp, reusing one whose thread exited (mexit) if there is one.
void newm(Domain* d, P* pp, bool spinning) {
  trace_end_loan();
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
    m->fastrand = rand_seed(sched->cfg.seed, static_cast<std::uint64_t>(m->id));
    sched->allm.push_back(m);
  }
  m->domain = d;
  m->nextp.store(pp, std::memory_order_release);
  m->spinning = spinning;
  m->exiting = false;
  m->bound_key = -1;  // a new thread: bound to nothing yet, whatever the M's last one was
  m->signal_pending.store(false, rlx);
  sched->mcount.fetch_add(1, std::memory_order_relaxed);
  if (vtime::on()) m->vmember = vtime::prepare_member();
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
  // In virtual time the thread leaves only after its bookkeeping, so that newm and the
  // mcount-based decisions see it gone at one virtual instant, not whenever the real thread
  // got here. It must hold the turn from the push to freem until it has left: newm joins an M
  // of freem in the kernel while holding the turn, and would wait forever for a thread that
  // waits for the turn. Nothing here waits, and counting the span as a runtime lock keeps the
  // quantum's signal from pausing it (vtime_pausable: the runtime's own text is pausable).
  vtime::lock_taken();
  sched->mlock.lock();
  sched->mcount.fetch_sub(1, std::memory_order_relaxed);
  sched->freem.push_back(m);
  sched->mlock.unlock();
  vtime::detach();
  vtime::lock_released();
}

// Parks the M on the idle list of its domain until startm hands it a P. The M that makes
// every M of the runtime idle becomes the deadlock watcher (if may_watch): it sleeps through a
// grace period, for the caller to run checkdead. Deciding that under every domain's lock,
// right after mput, is what makes exactly one of several Ms going idle together the last one
// (Go calls checkdead from mput for the same reason); with one domain that is just its lock.
// Any other M beyond gomaxprocs sleeps for kIdleMLifetimeNs at most, then leaves.
// The lock it takes is every domain's or its own (may_watch), a choice the analysis cannot
// follow: the lists it touches assert their domain's lock instead.
Wake stopm(M* m, bool may_watch) NUGO_NO_THREAD_SAFETY_ANALYSIS {
  Domain* d = m->domain;
  auto unlock = [&]() NUGO_NO_THREAD_SAFETY_ANALYSIS {
    if (may_watch) unlock_all_domains(); else d->lock.unlock();
  };
  if (may_watch) lock_all_domains(); else d->lock.lock();
  d->lock.assert_held();  // checked builds: the lists below need it (NUGO_CHECK_LOCKS)
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
  } else if (mcount > sched->plan.gomaxprocs) {
    on_deadline = Wake::exit;
    deadline_ns = nanotime() + kIdleMLifetimeNs;
  }
  unlock();
  traceev(Ev::m_park, -1, 0);
  for (;;) {
    if (deadline_ns)
      m->park.sleep_until(deadline_ns);
    else
      m->park.sleep();
    m->park.clear();
    if (P* next = m->nextp.load(std::memory_order_acquire)) {
      traceev(Ev::m_unpark, -1, 0);
      acquirep(next);
      m->nextp.store(nullptr, rlx);
      return Wake::p;
    }
    if (sched->stopping.load(rlx)) return Wake::stop;
    if (!deadline_ns || nanotime() < deadline_ns) continue;  // a stale wake-up (Note wakeups merge)
    d->lock.lock();
    bool listed = mremove(d, m);
    P* handed = listed ? nullptr : m->nextp.load(std::memory_order_acquire);  // set under this lock
    if (listed && on_deadline == Wake::exit && sched->mcount.load() <= sched->plan.gomaxprocs) {
      mput(d, m);  // others left first: this one stays, and sleeps until needed
      listed = false;
      deadline_ns = 0;
    }
    d->lock.unlock();
    if (listed) return on_deadline;
    if (handed) {
      traceev(Ev::m_unpark, -1, 0);
      acquirep(handed);
      m->nextp.store(nullptr, rlx);
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

// After giving up its P, a former spinner looks at every queue once more (the StoreLoad
// half of the protocol) and takes an idle P back if it sees work.
P* check_runqs_no_p(Domain* d) {
  bool work = domain_queues_nonempty(d, sc);
  for (P* p : d->victims) work = work || !runqempty(p);  // what steal_work's rounds take
  // And what its thieves would take from the other domains (steal_remote, the same rules):
  // their global queues and rings, not a runnext nor a pinned queue, and nothing of a domain
  // whose own spinner is on its way. Counting more would have a spinner retake its P and spin
  // again for as long as that work stays where it is.
  for (const std::vector<Domain*>& group : d->remote)
    for (const Domain* r : group) {
      if (r->nmspinning.load(sc) > 0) continue;  // that spinner re-checks r itself
      work = work || r->runqsize.load(sc) > 0;
      for (P* p : r->ps) work = work || runq_ring_nonempty(p);
    }
  if (!work) return nullptr;
  d->lock.lock();
  P* pp = pidleget(d);
  d->lock.unlock();
  return pp;
}

// Sleeps without a P until the M has one (true), or until the runtime stops or the M is to
// exit (false; m->exiting says which). While a timer is pending or a goroutine waits for I/O,
// one M, the poller, blocks in netpoll until the earliest timer instead of on its note; when
// it returns it takes an idle P for what it readied or for the timer, or, finding none, hands
// the readied goroutines to the global queue and sleeps like any other idle M (Go's
// findRunnable, from "poll network until next timer"). The others sleep until startm.
bool idle_until_p(M* m) {
  for (;;) {
    vtime::checkpoint();
    if (sched->stopping.load(rlx)) return false;
    std::int64_t next = earliest_timer();
    if ((next != 0 || netpoll_any_waiters()) && sched->lastpoll.exchange(0, sc) != 0) {
      // The poller now, and the only one: look at stopping again. run() sets it, then
      // breaks the poll; that break may have gone to the poller before us (which saw
      // stopping and left), and this M, which checked stopping before that, would then block
      // until its timer (a far one: forever) with run() waiting to join it. Stopping set
      // after this load is followed by a break that only a poller consumes, and we are it.
      if (sched->stopping.load(sc)) {
        sched->lastpoll.store(nanotime(), sc);
        return false;
      }
      sched->poll_until.store(next, sc);
      // Published; now catch a timer added before wake_netpoller could see us.
      std::int64_t again = earliest_timer();
      if (again != 0 && (next == 0 || again < next)) sched->poll_until.store(next = again, sc);
      std::int64_t delay = next == 0 ? -1 : std::max<std::int64_t>(0, next - nanotime());
      G* gl[kNetpollMaxReady];
      int n = netpoll(delay, gl);
      if (n > 0) traceev(Ev::poll, -1, 0, 0, static_cast<std::uint32_t>(n),
                         static_cast<std::uint8_t>(PollFrom::idle_m));
      sched->poll_until.store(0, sc);
      sched->lastpoll.store(nanotime(), sc);
      if (sched->stopping.load(rlx)) return false;  // the readied ones are abandoned with the rest
      bool got_p = acquire_idle_p_nearest(m);
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
      // First a domain whose own queues hold work (a pinned G only its Ps may run), then
      // the nearest idle P.
      for (auto& d : sched->domains)
        if (domain_queues_nonempty(d.get(), sc) && d->npidle.load(sc) > 0 && acquire_idle_p(d.get()))
          return true;
      if (acquire_idle_p_nearest(m)) return true;
      continue;
    }
    if (w == Wake::p) return true;
    if (w == Wake::exit) m->exiting = true;
    return false;
  }
}

// Starts an M (an idle one of pp's domain, or a new one) on pp, an idle P that nobody owns.
// With spinning, the caller has already counted the new M in the domain's nmspinning.
void startm(P* pp, bool spinning) {
  trace_end_loan();
  Domain* d = pp->domain;
  d->lock.lock();
  startm_locked(d, pp, spinning);
}

// The same on an idle P of d, if there is one. With spinning, the caller has already counted
// the new M in d's nmspinning, and this undoes that if no P is idle.
void startm(Domain* d, bool spinning, bool cross_node) {
  trace_end_loan();
  d->lock.lock();
  P* pp = pidleget(d);
  if (!pp) {
    // The reservation is undone under the lock, as Go 1.21's wakep does. Undone after it, a
    // P given back meanwhile (pidleput) would be missed: its spinner's re-check can run
    // before a submitter queues, and that submitter's wakep still see our reservation and
    // wake nobody, leaving work queued beside an idle P. SPIN found it
    // (core/src/models/spinning.pml, MUTANT_UNDO_OUTSIDE_LOCK).
    if (spinning && d->nmspinning.fetch_sub(1, sc) <= 0) fatal("startm: negative nmspinning");
    d->lock.unlock();
    return;
  }
  if (cross_node) bump(pp->stats.wakeups_cross_node);  // nobody owns pp: we hold it
  // Virtual time's cost model: the waker writes the P's and the sleeping M's lines (the
  // wake-up's own latency is vtime's, measured).
  if (vtime::on())
    if (M* self = getm(); self && self->p) vtime::charge_lines(self->p->node, pp->node, vtime::kWakeLines, vtime::Cost::wake);
  startm_locked(d, pp, spinning);
}

// d: the domain whose queues just got work (the submitter's P's, or the one a thread without
// a P queued into). A spinning M of d will find it (in NUMA mode, other domains' Ms too, by
// stealing across domains).
void wakep(Domain* d) {
  if (d->npidle.load(sc) == 0) {
    // Every P of d is busy and will get to the work, but a node with idle Ps should not
    // watch: wake a spinner in the nearest one (it steals across domains once its own has
    // nothing). Only for work a remote thief may take, a global queue or a ring: a G alone in
    // a runnext (the common go() and goready()) is the running P's next, and waking a remote
    // M for it would cost a futex wake per go() for nothing. Flat mode has no remote domains.
    // (With steal=flat a remote thief takes a runnext too, as in Go: wake it for any work.)
    if (!d->remote.empty() && (sched->plan.policy.steal == NumaPolicy::Steal::flat || remote_stealable(d)))
      wakep_nearest_idle(d);
    return;
  }
  wake_spinner(d, false);
}

// A spinner in d if d has an idle P, else in the nearest domain that has one.
void wakep_nearest_idle(Domain* d) {
  if (d->npidle.load(sc) > 0) return wake_spinner(d, false);
  for (const std::vector<Domain*>& group : d->remote)
    for (Domain* r : group)
      if (r->npidle.load(sc) > 0) return wake_spinner(r, true);
}

void wakep_home(Domain* d, int from_node) {
  if (d->npidle.load(sc) > 0) wake_spinner(d, from_node != d->node);
}

void wakep_from(Domain* d, int from_node) {
  if (d->npidle.load(sc) > 0) return wake_spinner(d, from_node != d->node);
  wakep(d);
}

// pp (idle, owned by nobody) was given up by an M that cannot use it now: a locked M, an M
// in a syscall (sysmon's retake, entersyscallblock), an exiting M. Start an M on it if
// there is work for it, else put it on the idle list (Go's handoffp).
void handoffp(P* pp) {
  Domain* d = pp->domain;
  if (!runqempty(pp) || domain_queues_nonempty(d, sc) || nexttimer(pp) != 0) {
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
  if (domain_queues_nonempty(d, rlx)) {
    d->lock.unlock();
    startm(pp, false);
    return;
  }
  pidleput(d, pp);
  d->lock.unlock();
}

}  // namespace nugo::detail
