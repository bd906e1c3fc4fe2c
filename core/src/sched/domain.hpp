// A scheduling domain: a group of Ps with its own lock, global run queue, idle P list, idle
// M list and spinning count (what Go keeps in `sched`, cut where NUMA mode cuts it). Flat mode
// has one domain; NUMA mode one per node, with the same code. The functions on a domain's
// lists live in domain.cpp; core/README.md ("Domains") says which domain each path means.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "futex.hpp"
#include "g.hpp"
#include "m.hpp"
#include "p.hpp"
#include "stack.hpp"

namespace nugo::detail {

// Enumerates 0..count-1 in a pseudo-random order: start anywhere, step by a number coprime
// to count, so that every enumeration visits each P exactly once (Go's randomOrder).
class StealOrder {
 public:
  void reset(std::uint32_t count);
  struct Enum {
    std::uint32_t i, count, pos, inc;
    bool done() const { return i == count; }
    void next() { ++i; pos = (pos + inc) % count; }
    std::uint32_t position() const { return pos; }
  };
  Enum start(std::uint32_t rnd) const {
    return {0, count_, rnd % count_, coprimes_[rnd / count_ % coprimes_.size()]};
  }

 private:
  std::uint32_t count_ = 0;
  std::vector<std::uint32_t> coprimes_;
};

struct Domain {
  int id = 0;       // index in Sched::domains
  int node = -1;    // index into the topology's nodes; -1 in flat mode
  int os_node = -1;  // the OS's number for that node; -1 in flat mode
  Lock lock;  // Go's sched.lock, for this domain's lists below
  // The global run queue, as pointers in a ring (EntryRing): moving a batch of Gs in or out
  // touches no G (Go links Gs through g.schedlink instead; see core/README.md). Each entry
  // also names the node it was queued from, so that a take by a P of another node counts as
  // a move across nodes (stats.hpp), in flat mode too, where one queue serves every node.
  // The node rides in the top 16 bits of the pointer, which user-space addresses on x86-64
  // leave zero (new_gchunk checks): an entry stays 8 bytes, and the queue as cheap as Go's.
  // (A 16-byte entry cost yield_ping 13%.)
  class Entry {
   public:
    Entry() = default;
    Entry(G* gp, int node)
        : bits_(reinterpret_cast<std::uintptr_t>(gp) |
                static_cast<std::uintptr_t>(static_cast<std::uint16_t>(node)) << kShift) {}
    G* gp() const { return reinterpret_cast<G*>(bits_ & ((std::uintptr_t{1} << kShift) - 1)); }
    int node() const { return static_cast<std::int16_t>(bits_ >> kShift); }
    static constexpr int kShift = 48;

   private:
    std::uintptr_t bits_;  // left unset by Entry(): a ring slot is written before it is read
  };
  // A FIFO of entries in a power-of-two ring that doubles when full, and goes back to its
  // first size when it empties after a burst past kKeep: a put is a store and an increment, a
  // batch taken is an add, with no allocation in the steady state (a std::deque's range erase
  // was a call into its block bookkeeping on every yield, and freed and allocated a block
  // every 64 entries).
  class EntryRing {
   public:
    EntryRing() : buf_(std::make_unique_for_overwrite<Entry[]>(kFirst)), mask_(kFirst - 1) {}
    bool empty() const { return head_ == tail_; }
    std::uint32_t size() const { return tail_ - head_; }
    // The i-th entry from the front.
    const Entry& operator[](std::uint32_t i) const { return buf_[(head_ + i) & mask_]; }
    const Entry& front() const { return (*this)[0]; }
    // May throw std::bad_alloc when the ring must grow, leaving it as it was.
    void push_back(Entry e) {
      if (size() == mask_ + 1) [[unlikely]] grow();
      buf_[tail_++ & mask_] = e;
    }
    // Drops the n at the front (n <= size()). Never throws: a shrink that cannot allocate
    // keeps the big ring.
    void pop_front(std::uint32_t n = 1) {
      head_ += n;
      if (head_ == tail_ && mask_ + 1 > kKeep) [[unlikely]] shrink();
    }

   private:
    static constexpr std::uint32_t kFirst = 256;
    static constexpr std::uint32_t kKeep = 4096;  // 32 KiB: kept through a drain
    void grow();    // domain.cpp
    void shrink();
    std::unique_ptr<Entry[]> buf_;
    std::uint32_t head_ = 0;  // free-running; the slot is the index & mask_
    std::uint32_t tail_ = 0;
    std::uint32_t mask_;
  };
  EntryRing runq NUGO_GUARDED_BY(lock);
  std::atomic<std::int32_t> runqsize{0};
  // Goroutines placed on this node (go_on's, not run yet; with ready=home, ones readied from
  // another node): taken one at a time by this domain's own Ps and run at once
  // (findrunnable), never moved to a ring, so no thief of another node ever sees them.
  // npinned is written under the lock, read as a hint without it.
  EntryRing pinned NUGO_GUARDED_BY(lock);
  std::atomic<std::int32_t> npinned{0};
  P* pidle NUGO_GUARDED_BY(lock) = nullptr;
  M* midle NUGO_GUARDED_BY(lock) = nullptr;
  int nmidle NUGO_GUARDED_BY(lock) = 0;
  int nmidlelocked NUGO_GUARDED_BY(lock) = 0;  // Ms parked until their locked G is runnable
  // Of those, the ones startlockedm has handed a P and woken that have not run yet: still
  // counted idle, but not idle (checkdead must not take them for it; the fuzzer found that).
  std::atomic<int> nmlockedwaking{0};
  // Read by every go() and goready() (wakep); kept off the line that yields write.
  alignas(64) std::atomic<std::int32_t> npidle{0};
  std::atomic<std::int32_t> nmspinning{0};
  alignas(64) std::vector<P*> ps;  // this domain's Ps (read-only)
  // The Ps its thieves try in steal_work's four rounds (numa::Plan::victims): its own Ps, or
  // with NUGO_NUMA steal=flat every P. Read-only; steal_order walks them, ps_order walks ps
  // (for a thief of another domain, steal_remote).
  std::vector<P*> victims;
  StealOrder steal_order;
  StealOrder ps_order;
  // The other domains by distance, nearest group first (numa::Plan::remote): where a wake-up
  // for this domain's work and an M of it looking for an idle P go. Empty in flat mode.
  // Read-only.
  std::vector<std::vector<Domain*>> remote;
  // The groups in which this domain's thieves visit the others once their own domain has
  // nothing (numa::Plan::steal_groups: remote's, or one group with NUGO_NUMA steal=node).
  // Read-only.
  std::vector<std::vector<Domain*>> steal_groups;
  // The unused part of this domain's current slab of G descriptors (Sched::new_gchunk; under
  // Sched::glock).
  G* gslab_next = nullptr;
  G* gslab_end = nullptr;
  // Goroutine stacks of this domain's Ps, bound to its node on a real multi-node machine.
  std::unique_ptr<StackPool> stacks;
  // Goroutines created by threads without a P and queued here (stats.hpp); a slow path.
  std::atomic<std::uint64_t> created_foreign{0};
};

// The lists; the caller holds the domain's lock (NUGO_REQUIRES, checked by clang: tsa.hpp).
// The pinned queue (go_on): put, and take one into nothing (the caller runs it). d locked.
void pinnedput(Domain* d, G* gp, int node) NUGO_REQUIRES(d->lock);
G* pinnedget(Domain* d, P* pp) NUGO_REQUIRES(d->lock);
// Whether d's own queues (global and pinned) hold work, as a hint or under the lock.
inline bool domain_queues_nonempty(const Domain* d, std::memory_order order) {
  return d->runqsize.load(order) > 0 || d->npinned.load(order) > 0;
}
// node: the node index of the P (or thread) queueing, for the statistics.
void globrunqput(Domain* d, G* gp, int node) NUGO_REQUIRES(d->lock);
void globrunqputbatch(Domain* d, G* const* batch, int n, int node) NUGO_REQUIRES(d->lock);
// d locked; takes into pp. A take from another domain's queue (a thief's) sets the home of
// every G it moves to adopt_node unless that is -1 (NumaPolicy::adopt).
G* globrunqget(Domain* d, P* pp, int max, int adopt_node = -1) NUGO_REQUIRES(d->lock);
void pidleput(Domain* d, P* pp) NUGO_REQUIRES(d->lock);  // pp: one of d's Ps
P* pidleget(Domain* d) NUGO_REQUIRES(d->lock);
void mput(Domain* d, M* m) NUGO_REQUIRES(d->lock);
M* mget(Domain* d) NUGO_REQUIRES(d->lock);
bool mremove(Domain* d, M* m) NUGO_REQUIRES(d->lock);  // false if m is not on the list

// Statistics: goroutines that pp's owner took from a P or queue of node index from_node, a node
// other than pp's (moved_remote, and by distance).
void count_moved_remote(P* pp, int from_node, std::uint64_t n);

// P ownership by the calling M.
void acquirep(P* pp);
P* releasep();

// The node index the calling thread is on, for the statistics: d's node in NUMA mode, else
// that of the CPU it runs on (the first P's when it is not a CPU of the topology, and always
// on an emulated topology or in virtual time: numa::Plan::node_of_cpu).
int thread_node(const Domain* d);
// Where a thread without a P (a plain thread, an M inside nugo::syscall, a timer callback
// run by sysmon) queues goroutines and timers: the domain of the CPU it runs on, else the
// first domain. On an emulated topology and in virtual time always the first domain: the
// real CPU there is an accident of folding or of the host (numa::Plan::domain_of_cpu).
Domain* foreign_domain();
// Every domain's lock, in domain order (the only order in which several are held), for the
// few decisions that must see the whole runtime at once (checkdead, sysmon's deep sleep).
// The analysis cannot follow locks taken in a loop: a caller that needs one domain's lock
// from these says so with Lock::assert_held.
void lock_all_domains() NUGO_NO_THREAD_SAFETY_ANALYSIS;
void unlock_all_domains() NUGO_NO_THREAD_SAFETY_ANALYSIS;

}  // namespace nugo::detail
