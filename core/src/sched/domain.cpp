// A domain's lists: its global run queue, idle Ps and idle Ms (domain.hpp), and which M owns
// which P. Everything here but acquirep/releasep runs with the domain's lock held.
#include "costs.hpp"  // virtual time's cost model
#include "domain.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "fatal.hpp"
#include "sched.hpp"
#include "timer.hpp"
#include "trace.hpp"

namespace nugo::detail {
namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr auto sc = std::memory_order_seq_cst;
}  // namespace

// ---- the global run queue ----

// runqsize is written only under the domain lock and read without it as a hint, so the
// writes are plain stores, not atomic read-modify-writes.
void globrunqput(Domain* d, G* gp, int node) {
  d->runq.push_back({gp, node});
  d->runqsize.store(d->runqsize.load(rlx) + 1, rlx);
}

void globrunqputbatch(Domain* d, G* const* batch, int n, int node) {
  for (int i = 0; i < n; ++i) d->runq.push_back({batch[i], node});
  d->runqsize.store(d->runqsize.load(rlx) + n, rlx);
}

void pinnedput(Domain* d, G* gp, int node) {
  d->pinned.push_back({gp, node});
  // seq_cst: the submitter's half of the StoreLoad protocol with a spinner of d (wakep_home
  // then reads npidle), formally, not only through the lock's release on x86.
  d->npinned.store(d->npinned.load(rlx) + 1, std::memory_order_seq_cst);
}

// Counted as a take of the own domain's global queue (and a move if another node queued it).
G* pinnedget(Domain* d, P* pp) {
  if (d->pinned.empty()) return nullptr;
  Domain::Entry e = d->pinned.front();
  d->pinned.pop_front();
  d->npinned.store(d->npinned.load(rlx) - 1, rlx);
  bump(pp->stats.globrunq_own);
  if (e.node() != pp->node) count_moved_remote(pp, e.node(), 1);
  vtime::charge_lines(e.node(), pp->node, vtime::kPinnedTakeLines, vtime::Cost::queue);
  return e.gp();
}

// From d's queue (pp's own domain's, or a remote one a thief robs) into pp's ring. Counted
// on pp (its owner calls): a take of its own domain's, or one across nodes.
G* globrunqget(Domain* d, P* pp, int max, int adopt_node) {
  // The caller's ring is empty (or n is 1), so the puts below cannot overflow it into
  // runqputslow, which would take pp's domain lock (the one we hold, if d is pp's).
  int size = d->runqsize.load(rlx);
  if (size == 0) return nullptr;
  // Go's share, size / Ps + 1; with one P that is all of it, without a division (an idiv is a
  // tenth of a yield).
  const int nps = static_cast<int>(d->ps.size());
  int n = nps == 1 ? size : std::min(size, size / nps + 1);
  if (max > 0 && n > max) n = max;
  if (n > static_cast<int>(kRunqSize / 2)) n = kRunqSize / 2;
  d->runqsize.store(size - n, rlx);
  // Virtual time's cost model (vtime/costs.hpp): the queue's line and the entries' shares.
  std::int64_t charge_ns = vtime::line_price(d->runq.front().node(), pp->node) * vtime::kEntriesPerLine;
  for (int i = 0; i < n; ++i) {
    const Domain::Entry& e = d->runq[static_cast<std::uint32_t>(i)];
    if (adopt_node >= 0) [[unlikely]]  // the lock holder's G to change
      e.gp()->home = static_cast<std::int16_t>(adopt_node);
    if (e.node() != pp->node) [[unlikely]] count_moved_remote(pp, e.node(), 1);
    charge_ns += vtime::line_price(e.node(), pp->node);
    if (i > 0) runqput(pp, e.gp(), false);
  }
  if (charge_ns != 0) vtime::charge(charge_ns / vtime::kEntriesPerLine, vtime::Cost::queue);
  G* gp = d->runq.front().gp();
  d->runq.pop_front(static_cast<std::uint32_t>(n));
  bump(d == pp->domain ? pp->stats.globrunq_own : pp->stats.globrunq_remote);
  return gp;
}

// Doubling copies the queue under the domain's lock: amortized a copy per put, but a burst of
// millions of goroutines queued at once pauses the domain for a copy of the whole queue, where
// a std::deque allocated a block per 64 puts.
void Domain::EntryRing::grow() {
  const std::uint32_t n = size();
  if (n >= std::uint32_t{1} << 30)
    fatal("the global run queue holds %u goroutines: its ring cannot grow further", n);
  auto grown = std::make_unique_for_overwrite<Entry[]>(2 * std::size_t{n});
  for (std::uint32_t i = 0; i < n; ++i) grown[i] = (*this)[i];
  buf_ = std::move(grown);
  head_ = 0;
  tail_ = n;
  mask_ = 2 * n - 1;
}

void Domain::EntryRing::shrink() {
  Entry* small = new (std::nothrow) Entry[kFirst];
  if (!small) return;
  buf_.reset(small);
  head_ = tail_ = 0;
  mask_ = kFirst - 1;
}

// ---- idle Ms and Ps, and P ownership ----

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

namespace {

// Binds the calling thread (m's) to the CPUs of pp's key (Sched::plan.bind_cpus). A failure is
// said once on stderr and the thread keeps the CPUs it had: binding is placement, not
// correctness.
void bind_m(M* m, const P* pp) {
  m->bound_key = sched->plan.bind_key[pp->id];
  const std::vector<int>& cpus = sched->plan.bind_cpus[pp->id];
  if (cpus.empty()) return;
  int max_cpu = *std::max_element(cpus.begin(), cpus.end());
  cpu_set_t* set = CPU_ALLOC(max_cpu + 1);
  std::size_t bytes = CPU_ALLOC_SIZE(max_cpu + 1);
  CPU_ZERO_S(bytes, set);
  for (int cpu : cpus) CPU_SET_S(cpu, bytes, set);
  int rc = sched_setaffinity(0, bytes, set);
  int err = errno;
  CPU_FREE(set);
  static std::atomic<bool> said{false};
  if (rc != 0 && !said.exchange(true))
    std::fprintf(stderr,
                 "nugo: NUGO_BIND: cannot bind a thread for P %d: %s; such threads keep the "
                 "CPUs they had\n", pp->id, std::strerror(err));
}

}  // namespace

void acquirep(P* pp) {
  M* m = getm();
  if (sched->plan.bind_key[pp->id] != m->bound_key) bind_m(m, pp);
  if (pp->status.load(rlx) != PStatus::idle || pp->m) fatal("acquirep: P %d is not idle", pp->id);
  m->p = pp;
  m->domain = pp->domain;  // an M belongs to the domain of the P it runs (startlockedm may
                           // hand it one of another domain); idle, to the list it is on
  std::atomic_ref<M*>(pp->m).store(m, rlx);  // sysmon reads it (P::m)
  pp->status.store(PStatus::running, rlx);
  traceev(Ev::proc_start, pp->id, 0);
  // A P starts running: sysmon, asleep while every P was idle, has work again.
  if (sched->sysmonwait.load(std::memory_order_acquire) && sched->sysmonwait.exchange(false))
    sched->sysmon_note.wakeup();
}

P* releasep() {
  M* m = getm();
  P* pp = m->p;
  if (!pp || pp->m != m) fatal("releasep: P not owned by this M");
  traceev(Ev::proc_stop, pp->id, 0);
  std::atomic_ref<M*>(pp->m).store(nullptr, rlx);
  pp->status.store(PStatus::idle, rlx);
  m->p = nullptr;
  return pp;
}

void pidleput(Domain* d, P* pp) {
  if (!runqempty(pp)) fatal("pidleput: P %d has a non-empty run queue", pp->id);
  if (d != pp->domain) fatal("pidleput: P %d is not of domain %d", pp->id, d->id);
  pp->link = d->pidle;
  d->pidle = pp;
  pp->stats.idle_since.store(nanotime(), rlx);
  d->npidle.fetch_add(1, sc);
}

P* pidleget(Domain* d) {
  P* pp = d->pidle;
  if (pp) {
    d->pidle = pp->link;
    d->npidle.fetch_sub(1, sc);
    PCounters& st = pp->stats;
    const std::int64_t since = st.idle_since.load(rlx);
    // In virtual time a P is not taken before it was put here: the taker's clock goes on
    // from then if it is behind (vtime::advance_to; a thread outside virtual time sees the
    // latest turn's clock, which may be behind too).
    vtime::advance_to(since);
    st.idle_ns.store(st.idle_ns.load(rlx) + std::max<std::int64_t>(0, sched->run_time_now() - since), rlx);
    st.idle_since.store(0, rlx);
  }
  return pp;
}

// Goroutines that pp's owner moved from a P or queue of node index from_node.
void count_moved_remote(P* pp, int from_node, std::uint64_t n) {
  bump(pp->stats.moved_remote, n);
  bump(pp->stats.moved_remote_by_distance[sched->plan.distance_class[pp->node][from_node]], n);
}

// Where a thread without a P (a plain thread, an M inside nugo::syscall, a timer callback
// run by sysmon) queues goroutines and timers: its CPU's domain on a real machine in real
// time, else the first (domain.hpp).
namespace {

// The entry of a by-real-CPU table (numa::Plan::domain_of_cpu, node_of_cpu) for the CPU the
// calling thread runs on, or -1.
int of_this_cpu(const std::vector<int>& table) {
  int cpu = sched_getcpu();
  return cpu >= 0 && cpu < static_cast<int>(table.size()) ? table[cpu] : -1;
}

}  // namespace

int thread_node(const Domain* d) {
  if (d->node >= 0) return d->node;
  int n = of_this_cpu(sched->plan.node_of_cpu);
  return n >= 0 ? n : sched->allp.front()->node;
}

Domain* foreign_domain() {
  if (sched->domains.size() == 1) return sched->domains.front().get();
  int d = of_this_cpu(sched->plan.domain_of_cpu);
  return sched->domains[d >= 0 ? d : 0].get();
}

void lock_all_domains() {
  for (auto& d : sched->domains) d->lock.lock();
}

void unlock_all_domains() {
  for (auto it = sched->domains.rbegin(); it != sched->domains.rend(); ++it) (*it)->lock.unlock();
}

void StealOrder::reset(std::uint32_t count) {
  count_ = count;
  coprimes_.clear();
  for (std::uint32_t i = 1; i <= count; ++i) {
    std::uint32_t a = i, b = count;
    while (b) { std::uint32_t r = a % b; a = b; b = r; }
    if (a == 1) coprimes_.push_back(i);
  }
}

}  // namespace nugo::detail
