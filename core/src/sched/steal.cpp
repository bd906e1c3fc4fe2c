// Work stealing (Go's stealWork), then Vyukov's escalation across NUMA nodes. First four
// rounds over the Ps of the thief's own domain in a random order, taking half of a victim's
// run queue (runqsteal, runq.cpp); the last round may also take a victim's runnext and runs
// the victims' due timers. Only when the own domain has nothing, and once the thief has found
// nothing for NumaPolicy::remote_delay: the other domains, nearest group first, or with
// steal=node all in one group (Domain::steal_groups, planned in numa/), each one's global
// queue, then its Ps, taking what NumaPolicy::remote_take says.
#include "costs.hpp"  // virtual time's cost model
#include "proc.hpp"
#include "timer.hpp"
#include "trace.hpp"

namespace nugo::detail {

std::atomic<StealProbe> steal_probe{nullptr};

namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr int kStealTries = 4;

void probe(const P* thief, const Domain* d, const P* victim) {
  if (StealProbe f = steal_probe.load(rlx)) [[unlikely]] f(thief, d, victim);
}

// A steal from victim moved the Gs now in pp's ring from position t on, plus gp, returned.
void count_steal(P* pp, const P* victim, std::uint32_t t, const G* gp) {
  std::uint64_t n = pp->runqtail.load(rlx) - t + 1;
  traceev(Ev::steal, pp->id, gp->goid, static_cast<std::uint64_t>(victim->id),
          static_cast<std::uint32_t>(n), victim->node != pp->node);
  // Virtual time's cost model: the thief read the victim's head and tail and the slots it
  // took (eight to a line); the Gs' own state is charged when they run (charge_moved).
  vtime::charge_lines(victim->node, pp->node, vtime::steal_lines(n), vtime::Cost::steal);
  if (victim->node == pp->node) {
    bump(pp->stats.steals_same_node);
    bump(pp->stats.moved_same_node, n);
  } else {
    bump(pp->stats.steals_remote);
    bump(pp->stats.steals_remote_by_distance[sched->plan.distance_class[pp->node][victim->node]]);
    count_moved_remote(pp, victim->node, n);
  }
}

G* steal_from(P* pp, P* victim, bool steal_runnext, NumaPolicy::Take take, int adopt_node) {
  std::uint32_t t = pp->runqtail.load(rlx);
  G* gp = runqsteal(pp, victim, steal_runnext, take, adopt_node);
  if (gp) count_steal(pp, victim, t, gp);
  return gp;
}

// How much of a remote global queue of `size` Gs one take may move (globrunqget caps it at a
// fair share of that domain's Ps as well).
int remote_batch(int size) {
  switch (sched->plan.policy.remote_take) {
    case NumaPolicy::Take::one: return 1;
    case NumaPolicy::Take::quarter: return std::max(1, size / 4);
    case NumaPolicy::Take::half: break;
  }
  return std::max(1, size / 2);
}

// The other domains by Domain::steal_groups (nearest group first; one group with steal=node),
// the domains of a group from a random one on (ties in distance must not always rob the same
// node first). From each: a batch of its global queue, then part of one of its Ps' run
// queues, never a runnext (a remote victim's next G is most likely its own hand-off), and
// nothing from a node whose own spinner is on its way. Their due timers run here too, so the
// timers of a node whose Ps are all idle fire when a thief from another node passes.
G* steal_remote(M* m, P* pp, std::int64_t now) {
  if (pp->domain->remote.empty()) return nullptr;
  bool may_rob = true;
  if (sched->plan.policy.remote_delay_ns > 0) {
    // Rob another node only once this P has found nothing for remote_delay: work may be
    // about to appear on its own node, and a goroutine moved away loses its memory. Until
    // then the thief spins, as any spinning M does (numa/README.md, "Policies").
    if (now == 0) now = nanotime();
    if (pp->nowork_since == 0) pp->nowork_since = now;
    may_rob = now - pp->nowork_since >= sched->plan.policy.remote_delay_ns;
  }
  int adopt_node = sched->plan.policy.adopt ? pp->node : -1;
  for (const std::vector<Domain*>& group : pp->domain->steal_groups) {
    std::size_t first = m->rand() % group.size();
    for (std::size_t k = 0; k < group.size(); ++k) {
      if (sched->stopping.load(rlx)) return nullptr;
      Domain* r = group[(first + k) % group.size()];
      // A node with a spinning M of its own is about to take its work itself (a submitter
      // there woke it): robbing it now would move the work away from its node for nothing.
      // (check_runqs_no_p applies the same rules.) Its due timers run regardless: firing a
      // timer moves nothing.
      bool rob = may_rob && r->nmspinning.load(rlx) == 0;
      probe(pp, r, nullptr);
      if (int size = r->runqsize.load(rlx); rob && size > 0) {
        r->lock.lock();
        G* gp = globrunqget(r, pp, remote_batch(size), adopt_node);
        r->lock.unlock();
        if (gp) return gp;
      }
      for (auto e = r->ps_order.start(m->rand()); !e.done(); e.next()) {
        P* victim = r->ps[e.position()];
        probe(pp, r, victim);
        if (nexttimer(victim) != 0) {
          if (now == 0) now = nanotime();
          if (checktimers(victim, now) > 0)
            if (G* gp = runqget(pp).gp) return gp;
        }
        if (!rob || victim->status.load(rlx) == PStatus::idle) continue;
        if (G* gp = steal_from(pp, victim, false, sched->plan.policy.remote_take, adopt_node)) return gp;
      }
    }
  }
  return nullptr;
}

}  // namespace

// Steals half of some other P's queue: 4 rounds over the domain's victims (its own Ps; every P
// with steal=flat) in random order; the last round may also take a victim's runnext.
// The last round also runs the victims' due timers, idle victims included: that is how the
// timers of an idle P fire. A timer that readies a goroutine readies it onto our P.
G* steal_work(M* m, P* pp, std::int64_t now) {
  Domain* d = pp->domain;
  probe(pp, nullptr, nullptr);
  for (int round = 0; round < kStealTries; ++round) {
    bool last = round == kStealTries - 1;
    for (auto e = d->steal_order.start(m->rand()); !e.done(); e.next()) {
      if (sched->stopping.load(rlx)) return nullptr;
      P* victim = d->victims[e.position()];
      if (victim == pp) continue;
      probe(pp, victim->domain, victim);
      if (last && nexttimer(victim) != 0) {
        if (now == 0) now = nanotime();
        if (checktimers(victim, now) > 0)
          if (G* gp = runqget(pp).gp) return gp;
      }
      if (victim->status.load(rlx) == PStatus::idle) continue;
      // Another node's P is a victim here only with steal=flat: Go's take (half, a runnext in
      // the last round), and adopt as for any steal across nodes.
      int adopt_node = sched->plan.policy.adopt && victim->domain != d ? pp->node : -1;
      if (G* gp = steal_from(pp, victim, last, NumaPolicy::Take::half, adopt_node)) return gp;
    }
  }
  return steal_remote(m, pp, now);
}

}  // namespace nugo::detail
