// Local run queues (Go's runqput, runqget, runqgrab, runqsteal); the global ones are a
// domain's (domain.cpp).
//
// The local queue is a ring of kRunqSize slots indexed by two free-running 32-bit counters.
// Invariants:
//   - only the owner P stores runqtail (release), after writing the slot it publishes;
//   - anyone may advance runqhead, by CAS (release), and only over slots it has already read:
//     a successful CAS proves the slots it read were not recycled in between, because the
//     owner writes slot i+kRunqSize only after head has passed i;
//   - 0 <= tail - head <= kRunqSize at every instant the owner reads them.
// runnext is a single slot outside the ring. The G taken from it inherits the time slice
// (schedtick is not incremented), so a pair of goroutines handing work back and forth share
// one slice and cannot starve the rest of the queue.
#include <algorithm>
#include <chrono>

#include "fatal.hpp"
#include "p.hpp"
#include "sched.hpp"

namespace nugo::detail {
namespace {

constexpr auto acq = std::memory_order_acquire;
constexpr auto rel = std::memory_order_release;
constexpr auto rlx = std::memory_order_relaxed;

// Moves half of the local ring plus gp to the global queue: the ring is full, and a batch
// costs one lock acquisition where one G at a time would cost 128. Fails if a thief moved head.
bool runqputslow(P* pp, G* gp, std::uint32_t head, std::uint32_t tail) {
  constexpr std::uint32_t n = kRunqSize / 2;
  if (tail - head != kRunqSize) fatal("runqputslow: queue is not full");
  trace_end_loan();  // the domain's lock, below
  G* batch[n + 1];
  for (std::uint32_t i = 0; i < n; ++i) batch[i] = pp->runq[(head + i) % kRunqSize].load(rlx);
  if (!pp->runqhead.compare_exchange_strong(head, head + n, rel, rlx)) return false;
  batch[n] = gp;
  Domain* d = pp->domain;
  d->lock.lock();
  globrunqputbatch(d, batch, n + 1, pp->node);
  d->lock.unlock();
  return true;
}

// Grabs half (rounded up; or a quarter, or one, for a remote thief: NumaPolicy::Take) of pp's ring into batch[batch_head...], a ring of kRunqSize.
// Called by thieves. Returns how many it took.
std::uint32_t runqgrab(P* pp, std::array<std::atomic<G*>, kRunqSize>& batch,
                       std::uint32_t batch_head, bool steal_runnext, NumaPolicy::Take take) {
  for (;;) {
    std::uint32_t h = pp->runqhead.load(acq);
    std::uint32_t t = pp->runqtail.load(acq);
    std::uint32_t n = t - h;
    if (take == NumaPolicy::Take::half) [[likely]]
      n -= n / 2;
    else if (take == NumaPolicy::Take::quarter)
      n = (n + 3) / 4;
    else
      n = n > 0 ? 1 : 0;
    if (n == 0) {
      if (!steal_runnext) return 0;
      G* next = pp->runnext.load(acq);
      if (!next) return 0;
      if (pp->status.load(rlx) == PStatus::running) {
        // The victim is running and most likely just readied `next` (a channel handoff takes
        // ~50 ns); give it ~3 us to run it itself before taking it away. Go sleeps here; a
        // 3 us nanosleep lasts ~55 us with Linux's default timer slack, so we spin.
        // In virtual time the wait is a nap, so that the victim can run meanwhile, as it
        // would on its own CPU.
        if (vtime::member()) {
          vtime::nap(3'000);
        } else {
          auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
          while (std::chrono::steady_clock::now() < until) cpu_relax();
        }
      }
      if (!pp->runnext.compare_exchange_strong(next, nullptr, acq, rlx)) continue;
      batch[batch_head % kRunqSize].store(next, rlx);
      return 1;
    }
    if (n > kRunqSize / 2) continue;  // h and t read at different instants; retry
    for (std::uint32_t i = 0; i < n; ++i)
      batch[(batch_head + i) % kRunqSize].store(pp->runq[(h + i) % kRunqSize].load(rlx), rlx);
    if (pp->runqhead.compare_exchange_strong(h, h + n, rel, rlx)) return n;
  }
}

}  // namespace

void runqput(P* pp, G* gp, bool next) {
  if (next) {
    // seq_cst: with wakep's loads this is the submitter's half of the StoreLoad protocol (idle.cpp).
    gp = pp->runnext.exchange(gp, std::memory_order_seq_cst);  // the old runnext is kicked to the ring
    if (!gp) return;
  }
  for (;;) {
    std::uint32_t h = pp->runqhead.load(acq);
    std::uint32_t t = pp->runqtail.load(rlx);
    if (t - h < kRunqSize) {
      pp->runq[t % kRunqSize].store(gp, rlx);
      pp->runqtail.store(t + 1, rel);
      return;
    }
    if (runqputslow(pp, gp, h, t)) return;
  }
}

RunqResult runqget(P* pp) {
  // Relaxed check first: runnext is usually empty and an exchange would dirty the line.
  if (G* next = pp->runnext.load(rlx)) {
    if (pp->runnext.compare_exchange_strong(next, nullptr, acq, rlx)) return {next, true};
  }
  for (;;) {
    std::uint32_t h = pp->runqhead.load(acq);
    std::uint32_t t = pp->runqtail.load(rlx);
    if (t == h) return {nullptr, false};
    G* gp = pp->runq[h % kRunqSize].load(rlx);
    if (pp->runqhead.compare_exchange_weak(h, h + 1, rel, rlx)) return {gp, false};
  }
}

// Never reports empty spuriously. Seeing head == tail and then runnext == nullptr is not
// enough: between the two loads runqput may kick the old runnext into the ring and runqget
// may empty runnext. Re-reading tail after runnext detects that interleaving.
bool runqempty(const P* pp) {
  constexpr auto sc = std::memory_order_seq_cst;  // the spinner's re-check half of StoreLoad
  for (;;) {
    std::uint32_t h = pp->runqhead.load(sc);
    std::uint32_t t = pp->runqtail.load(sc);
    G* next = pp->runnext.load(sc);
    if (pp->runqtail.load(sc) == t) return h == t && next == nullptr;
  }
}

bool runq_ring_nonempty(const P* pp) {
  constexpr auto sc = std::memory_order_seq_cst;  // a spinner's re-check half of StoreLoad
  return pp->runqtail.load(sc) != pp->runqhead.load(sc);
}

// Head first: read from another thread (schedtrace), a head loaded after the tail could
// have passed it.
std::uint32_t runqlen(const P* pp) {
  std::uint32_t h = pp->runqhead.load(acq);
  std::uint32_t t = pp->runqtail.load(acq);
  return std::min(t - h, kRunqSize);
}

G* runqsteal(P* pp, P* victim, bool steal_runnext, NumaPolicy::Take take, int adopt_node) {
  std::uint32_t t = pp->runqtail.load(rlx);
  std::uint32_t n = runqgrab(victim, pp->runq, t, steal_runnext, take);
  if (n == 0) return nullptr;
  // The grabbed Gs are ours alone until the tail store below publishes them.
  if (adopt_node >= 0)
    for (std::uint32_t i = 0; i < n; ++i)
      pp->runq[(t + i) % kRunqSize].load(rlx)->home = static_cast<std::int16_t>(adopt_node);
  --n;
  G* gp = pp->runq[(t + n) % kRunqSize].load(rlx);
  if (n == 0) return gp;
  std::uint32_t h = pp->runqhead.load(acq);
  if (t - h + n >= kRunqSize) fatal("runqsteal: runq overflow");
  pp->runqtail.store(t + n, rel);
  return gp;
}

}  // namespace nugo::detail
