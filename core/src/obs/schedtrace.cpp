// schedtrace: Go's GODEBUG=schedtrace=MS and scheddetail=1 (proc.go: schedtrace), printed by
// sysmon every MS milliseconds on stderr, in Go's format, so that tools that read Go's lines
// read these:
//
//   SCHED 1004ms: gomaxprocs=4 idleprocs=4 threads=11 spinningthreads=0 idlethreads=4 runqueue=0 [0 0 0 0]
//
// runqueue is every domain's global queue (and go_on's pinned queues); the bracket lists each
// P's local ring. In NUMA mode a group per domain follows on the same line:
//   node0=[idleprocs=2 spinningthreads=0 idlethreads=2 runqueue=0]
// With scheddetail the bracket gives way to Go's detail fields and a line per P (with its
// node), per M and per live G (with its home node, status and wait reason):
//   P0: status=1 schedtick=5 syscalltick=0 m=0 runqsize=0 gfreecnt=3 timerslen=0 node=0
//   M1: p=-1 curg=-1 spinning=false lockedg=-1
//   G1: status=4(sleep) m=-1 lockedm=-1 home=0
// The counts come from under every domain's lock (as Go takes sched.lock), the P, M and G
// lines from reads without it (as Go's): a line is a snapshot of moving state, for people.
// Intervals that sysmon missed (it was late) are skipped, not printed in a burst.
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "fdwrite.hpp"
#include "schedtrace.hpp"
#include "sched.hpp"
#include "timer.hpp"

namespace nugo::detail {
namespace {

void add(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string& out, const char* fmt, ...) {
  char buf[512];  // the longest line is under 200 bytes
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) out.append(buf, std::min<std::size_t>(n, sizeof buf - 1));
}

// Go's numbering: _Gidle 0, _Grunnable 1, _Grunning 2, _Gsyscall 3, _Gwaiting 4, _Gdead 6.
int go_status(GStatus s) {
  switch (s) {
    case GStatus::idle: return 0;
    case GStatus::runnable: return 1;
    case GStatus::running: return 2;
    case GStatus::syscall: return 3;
    case GStatus::waiting: return 4;
    case GStatus::dead: return 6;
  }
  return -1;
}

// Go's _Pidle 0, _Prunning 1, _Psyscall 2.
int go_status(PStatus s) { return s == PStatus::idle ? 0 : s == PStatus::running ? 1 : 2; }

// On stderr; a failure is dropped, as a lost trace line would be.
void write_stderr(const std::string& s) {
  int err = 0;
  write_all(2, s.data(), s.size(), &err);
}

}  // namespace

void schedtrace(bool detail) {
  constexpr auto rlx = std::memory_order_relaxed;
  std::string out;
  long long ms = (nanotime() - sched->start_ns) / 1'000'000;
  // Each domain's counts read once under its lock (nmspinning moves without it: read once,
  // the node groups still add up to the totals), the rings' lengths too; formatted after.
  struct Counts { int idle, spinning, idlethreads, runq; };
  std::vector<Counts> per_domain;
  std::vector<std::uint32_t> rings;
  lock_all_domains();
  int idle = 0, spinning = 0, idlethreads = 0, runq = 0, locked = 0;
  for (const auto& d : sched->domains) {
    d->lock.assert_held();
    Counts c{d->npidle.load(rlx), d->nmspinning.load(rlx), d->nmidle,
             d->runqsize.load(rlx) + d->npinned.load(rlx)};
    per_domain.push_back(c);
    idle += c.idle;
    spinning += c.spinning;
    idlethreads += c.idlethreads;
    locked += d->nmidlelocked;
    runq += c.runq;
  }
  for (const auto& pp : sched->allp) rings.push_back(runqlen(pp.get()));
  bool sysmonwait = sched->sysmonwait.load(rlx);
  unlock_all_domains();
  add(out, "SCHED %lldms: gomaxprocs=%d idleprocs=%d threads=%d spinningthreads=%d idlethreads=%d runqueue=%d",
      ms, sched->plan.gomaxprocs, idle, sched->mcount.load(rlx), spinning, idlethreads, runq);
  if (detail) {
    add(out, " gcwaiting=0 nmidlelocked=%d stopwait=0 sysmonwait=%d", locked, sysmonwait ? 1 : 0);
  } else {
    out += " [";
    for (std::size_t i = 0; i < rings.size(); ++i) add(out, "%s%u", i ? " " : "", rings[i]);
    out += "]";
  }
  if (sched->domains.size() > 1)
    for (std::size_t i = 0; i < per_domain.size(); ++i)
      add(out, " node%d=[idleprocs=%d spinningthreads=%d idlethreads=%d runqueue=%d]",
          sched->domains[i]->os_node, per_domain[i].idle, per_domain[i].spinning,
          per_domain[i].idlethreads, per_domain[i].runq);
  out += '\n';
  if (!detail) return write_stderr(out);

  const auto& nodes = sched->topology.nodes;
  for (const auto& owned : sched->allp) {
    P* pp = owned.get();
    M* m = std::atomic_ref<M*>(pp->m).load(rlx);
    pp->timerslock.lock();
    std::size_t timers = pp->timers.size();
    pp->timerslock.unlock();
    add(out, "  P%d: status=%d schedtick=%u syscalltick=%u m=%d runqsize=%u gfreecnt=%d timerslen=%zu node=%d\n",
        pp->id, go_status(pp->status.load(rlx)), pp->schedtick.load(rlx), pp->syscalltick.load(rlx),
        m ? m->id : -1, runqlen(pp), std::atomic_ref<int>(pp->ngfree).load(rlx), timers,
        nodes[pp->node].os_index);
  }
  // The lists are copied under their locks and walked without them (Ms and G chunks are never
  // freed while the runtime runs, and a chunk is listed only once its Gs are constructed):
  // formatting thousands of lines must not hold up goroutine creation or thread start.
  std::unordered_map<const G*, int> m_of;  // which M runs each running G
  sched->mlock.lock();
  std::vector<M*> all_ms = sched->allm;
  sched->mlock.unlock();
  sched->glock.lock();
  std::vector<G*> chunks = sched->gchunks;
  sched->glock.unlock();
  for (M* m : all_ms) {
    P* p = std::atomic_ref<P*>(m->p).load(rlx);
    G* curg = std::atomic_ref<G*>(m->curg).load(rlx);
    G* lockedg = std::atomic_ref<G*>(m->lockedg).load(rlx);
    if (curg) m_of[curg] = m->id;
    add(out, "  M%d: p=%d curg=%lld spinning=%s lockedg=%lld\n", m->id, p ? p->id : -1,
        curg ? static_cast<long long>(curg->goid) : -1LL,
        std::atomic_ref<bool>(m->spinning).load(rlx) ? "true" : "false",
        lockedg ? static_cast<long long>(lockedg->goid) : -1LL);
  }
  for_each_g_in(chunks, [&](G* gp) {  // a copy: glock is not held while formatting
    GStatus st = gp->status.load(rlx);
    if (st == GStatus::idle || st == GStatus::dead) return;
    auto it = m_of.find(gp);
    M* locked_m = std::atomic_ref<M*>(gp->lockedm).load(rlx);
    add(out, "  G%lld: status=%d(%s) m=%d lockedm=%d home=%d\n", static_cast<long long>(gp->goid),
        go_status(st), st == GStatus::waiting ? to_string(gp->waitreason) : "",
        it == m_of.end() ? -1 : it->second, locked_m ? locked_m->id : -1, nodes[gp->home].os_index);
  });
  write_stderr(out);
}

}  // namespace nugo::detail
