// Work stealing (Go's stealWork): four rounds over the Ps of the thief's domain in a random
// order, taking half of a victim's run queue (runqsteal, runq.cpp); the last round may also
// take a victim's runnext and runs the victims' due timers.
#include "proc.hpp"
#include "timer.hpp"

namespace nugo::detail {
namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr int kStealTries = 4;
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
  return nullptr;
}

}  // namespace nugo::detail
