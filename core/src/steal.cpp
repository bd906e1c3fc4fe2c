// Work stealing (Go's stealWork), then Vyukov's escalation across NUMA nodes. First four
// rounds over the Ps of the thief's own domain in a random order, taking half of a victim's
// run queue (runqsteal, runq.cpp); the last round may also take a victim's runnext and runs
// the victims' due timers. Only when the own domain has nothing: the other domains, nearest
// group first (Domain::remote, planned in numa/), each one's global queue, then its Ps.
#include "proc.hpp"
#include "timer.hpp"

namespace nugo::detail {
namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr int kStealTries = 4;

// The other domains, nearest group first, the domains of a group from a random one on (ties
// in distance must not always rob the same node first). From each: a batch of its global
// queue, then half of one of its Ps' run queues, never a runnext (a remote victim's next G
// is most likely its own hand-off). Their due timers run here too, so the timers of a node
// whose Ps are all idle fire when a thief from another node passes.
G* steal_remote(M* m, P* pp, std::int64_t now) {
  for (const std::vector<Domain*>& group : pp->domain->remote) {
    std::size_t first = m->rand() % group.size();
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (sched->stopping.load(rlx)) return nullptr;
      Domain* r = group[(first + k) % group.size()];
      if (r->runqsize.load(rlx) > 0) {
        r->lock.lock();
        G* gp = globrunqget(r, pp, 0);
        r->lock.unlock();
        if (gp) return gp;
      }
      for (auto e = r->steal_order.start(m->rand()); !e.done(); e.next()) {
        P* victim = r->ps[e.position()];
        if (nexttimer(victim) != 0) {
          if (now == 0) now = nanotime();
          if (checktimers(victim, now) > 0)
            if (G* gp = runqget(pp).gp) return gp;
        }
        if (victim->status.load(rlx) == PStatus::idle) continue;
        if (G* gp = runqsteal(pp, victim, false)) return gp;
      }
    }
  }
  return nullptr;
}

}  // namespace

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
  return steal_remote(m, pp, now);
}

}  // namespace nugo::detail
