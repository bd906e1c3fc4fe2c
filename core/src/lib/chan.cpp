// Channels and select, after Go's chan.go and select.go.
//
// A channel (hchan) is a lock, a ring buffer of `dataqsiz` elements, and two FIFO wait
// queues of sudogs: goroutines blocked sending (sendq) and receiving (recvq). A sudog lives on
// the blocked goroutine's stack and points at the element: the value a sender moves from, or
// the storage a receiver constructs into. Invariants, under the channel lock:
//   - recvq non-empty  =>  the buffer is empty;
//   - sendq non-empty  =>  the buffer is full (unbuffered: always "full");
//   - closed           =>  sendq is empty, and recvq is empty once the buffer is.
// So a sender first hands its value straight to the oldest waiting receiver, then tries the
// buffer, then queues; a receiver does the mirror image, and when the buffer is full and a
// sender waits it takes the buffer's head and moves that sender's value to the tail (FIFO).
//
// Waking: the peer that completes a blocked operation sets sudog.success and readies the
// goroutine (goready puts it in the waker's runnext, as in Go). close() wakes everyone with
// success = false: receivers then report "closed", senders panic.
//
// select: one sudog per case, all pointing at a SelectState on the selecting goroutine's stack.
// A peer that dequeues a select sudog must win `done` (0 -> 1) first; losers are skipped, so
// exactly one case fires. The selecting goroutine locks all its channels in address order
// (no deadlock between overlapping selects), polls the cases in a random order, and if none
// is ready queues on all of them and parks; when woken it dequeues its other sudogs.
#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "fatal.hpp"
#include "nugo/chan.hpp"
#include "../sched/link.hpp"

namespace nugo::detail {

struct SelectState;

struct sudog {
  G* g = nullptr;
  void* elem = nullptr;
  sudog* next = nullptr;
  sudog* prev = nullptr;
  SelectState* sel = nullptr;  // set for select cases
  // The channel whose queue holds it; null once unlinked (every unlink clears it). Atomic:
  // the teardown reads it without the channel's lock (forget_abandoned_channel_waiters).
  std::atomic<hchan*> c{nullptr};
  sudog* waitnext = nullptr;   // the goroutine's next sudog (select), from GHead::waiting
  bool send = false;           // in c->sendq, else c->recvq
  bool success = false;
  bool queued = false;
};

// A G's sudogs between a channel operation's queueing and its end (GHead::waiting, tagged
// with the low bit), for the teardown to unlink if the G is abandoned.
inline void set_waiting(G* gp, sudog* first) {
  head(gp)->waiting = reinterpret_cast<std::uintptr_t>(first) | 1;
}
inline void clear_waiting(G* gp) { head(gp)->waiting = 0; }
inline sudog* waiting_sudogs(G* gp) {
  std::uintptr_t w = head(gp)->waiting;
  return (w & 1) ? reinterpret_cast<sudog*>(w & ~std::uintptr_t{1}) : nullptr;
}

struct SelectState {
  std::atomic<std::uint32_t> done{0};
  sudog* fired = nullptr;  // written by the winner, under the fired case's channel lock
};

namespace {

struct WaitQ {
  sudog* first = nullptr;
  sudog* last = nullptr;

  void enqueue(sudog* s) {
    s->next = nullptr;
    s->prev = last;
    if (last) last->next = s; else first = s;
    last = s;
    s->queued = true;
  }
  void unlink(sudog* s) {
    if (s->prev) s->prev->next = s->next; else first = s->next;
    if (s->next) s->next->prev = s->prev; else last = s->prev;
    s->next = s->prev = nullptr;
    s->queued = false;
    s->c.store(nullptr, std::memory_order_relaxed);
  }
  // The first waiter that can still be completed. A select's sudog is taken only if this
  // caller wins its SelectState; otherwise another case of that select already fired.
  sudog* dequeue() {
    while (sudog* s = first) {
      unlink(s);
      if (!s->sel) return s;
      std::uint32_t zero = 0;
      if (s->sel->done.compare_exchange_strong(zero, 1, std::memory_order_acq_rel)) {
        s->sel->fired = s;
        return s;
      }
    }
    return nullptr;
  }
};

}  // namespace

struct hchan {
  SpinLock lock;  // futex.hpp: unlock is a store, not a read-modify-write
  std::size_t qcount = 0;
  std::size_t dataqsiz = 0;
  std::size_t sendx = 0;
  std::size_t recvx = 0;
  unsigned char* buf = nullptr;
  bool closed = false;
  WaitQ recvq, sendq;
  const ElemOps* ops = nullptr;
  std::atomic<long> refs{1};

  void* slot(std::size_t i) { return buf + i * ops->size; }
  void advance(std::size_t& x) { if (++x == dataqsiz) x = 0; }
};

namespace {

// gopark's unlock function: releases the lock its caller took and handed over with the park
// (a hand-off the analysis cannot follow, as for the functions that park below).
bool unlock_chan(G*, void* c) NUGO_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<hchan*>(c)->lock.unlock();
  return true;
}

[[noreturn]] void not_a_goroutine(const char* what) {
  throw std::logic_error(std::string("nugo::Chan: blocking ") + what + " outside a goroutine");
}

// The caller holds channel locks when it finds it must block: on misuse they are released
// before the exception leaves.
template <class Unlock>
G* current_goroutine(const char* what, Unlock unlock) {
  G* gp = getg();
  if (!gp) {
    unlock();
    not_a_goroutine(what);
  }
  return gp;
}

[[noreturn]] void block_forever(WaitReason reason) {
  if (!getg()) not_a_goroutine("operation on a nil channel");
  gopark(nullptr, nullptr, reason);
  fatal("a goroutine blocked on a nil channel was resumed");
}

// The buffered/direct transfers, all under c->lock.
void send_direct(hchan* c, sudog* receiver, void* src) {
  c->ops->move_construct(receiver->elem, src);
  receiver->success = true;
}

void send_buffered(hchan* c, void* src) {
  c->ops->move_construct(c->slot(c->sendx), src);
  c->advance(c->sendx);
  ++c->qcount;
}

void recv_buffered(hchan* c, void* dst) {
  void* head = c->slot(c->recvx);
  c->ops->move_construct(dst, head);
  c->ops->destroy(head);
  c->advance(c->recvx);
  --c->qcount;
}

// A sender waits: unbuffered, take its value; buffered (and so full), take the head and move
// the sender's value into the freed tail slot.
void recv_from_sender(hchan* c, sudog* sender, void* dst) {
  if (c->dataqsiz == 0) {
    c->ops->move_construct(dst, sender->elem);
  } else {
    void* head = c->slot(c->recvx);
    c->ops->move_construct(dst, head);
    c->ops->destroy(head);
    c->ops->move_construct(head, sender->elem);
    c->advance(c->recvx);
    c->sendx = c->recvx;
  }
  sender->success = true;
}

}  // namespace

namespace {
void forget_abandoned_channel_waiters();  // below: the teardown's stop hook
}  // namespace

hchan* makechan(const ElemOps* ops, std::size_t cap) {
  NoPreempt np;
  // Go's "makechan: size out of range": the buffer's size must not overflow and must fit in
  // the address space (Go's maxAlloc, 2^48 on amd64; a user address space is 2^47 here).
  constexpr std::size_t kMaxBuffer = std::size_t{1} << 47;
  if (cap > 0 && cap > kMaxBuffer / ops->size)
    throw std::length_error("nugo::Chan: capacity " + std::to_string(cap) + " of " +
                            std::to_string(ops->size) +
                            "-byte elements is out of range (makechan: size out of range)");
  unsigned char* buf = nullptr;
  if (cap > 0)
    buf = static_cast<unsigned char*>(
        ::operator new(cap * ops->size, std::align_val_t(std::max(ops->align, alignof(void*)))));
  // Registered by the first channel ever made, not by a static initializer, which a program
  // could outrun by calling run() from its own.
  [[maybe_unused]] static const bool forget_waiters_at_stop =
      (add_stop_hook(StopPhase::abandoned, forget_abandoned_channel_waiters), true);
  auto* c = new hchan;
  c->ops = ops;
  c->dataqsiz = cap;
  c->buf = buf;
  return c;
}

void chan_retain(hchan* c) { c->refs.fetch_add(1, std::memory_order_relaxed); }

// ---- goroutines abandoned on channels ----
//
// Goroutines still alive when main returns are abandoned, and their stacks are unmapped with
// the instance. A channel they are queued on may live on (a Context's done, a program's
// channel, an on_stop case's) and be used after run() returns: a close would then walk sudogs
// in unmapped memory. So the teardown unlinks them first (forget_abandoned_channel_waiters,
// with every M joined, before the closures and stacks go). A G names its queued sudogs from
// the moment it queues them until its operation has ended (GHead::waiting): parked, or readied by
// a select case but never run again, whose other cases' sudogs are still queued.
//
// The teardown reads a sudog's channel without that channel's lock, and a plain thread may
// free the channel at the same time. Every unlink clears sudog::c, so a sudog that names a
// channel is queued on it; whoever frees a channel that still has waiters (goroutines blocked
// on it for good) unlinks them first, under abandon_lock, which the teardown holds throughout.
// A channel freed without waiters may still be the one the teardown just read (a plain
// thread completed the operation and dropped the last handle): so while the teardown scans
// (abandon_scan, ordered by the fences of both sides), every free waits for abandon_lock.
namespace {
Lock abandon_lock;
std::atomic<bool> abandon_scan{false};

void forget_waiters(hchan* c) NUGO_NO_THREAD_SAFETY_ANALYSIS {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the teardown's
  bool scanning = abandon_scan.load(std::memory_order_relaxed);
  c->lock.lock();  // the last handle is gone: only the teardown may be here too
  bool waiters = c->recvq.first || c->sendq.first;
  c->lock.unlock();
  if (!waiters && !scanning) return;
  abandon_lock.lock();
  c->lock.lock();
  for (WaitQ* q : {&c->recvq, &c->sendq})
    while (sudog* s = q->first) q->unlink(s);
  c->lock.unlock();
  abandon_lock.unlock();
}

// The stop hook (StopPhase::abandoned): every M is joined, so no G runs and GHead::waiting
// stays put.
void forget_abandoned_channel_waiters() NUGO_NO_THREAD_SAFETY_ANALYSIS {
  abandon_lock.lock();
  abandon_scan.store(true, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with forget_waiters'
  for_each_g(
      [](G* gp, void*) NUGO_NO_THREAD_SAFETY_ANALYSIS {
        for (sudog* s = waiting_sudogs(gp); s; s = s->waitnext) {
          hchan* c = s->c.load(std::memory_order_relaxed);
          if (!c) continue;
          c->lock.lock();
          if (s->c.load(std::memory_order_relaxed) == c) (s->send ? c->sendq : c->recvq).unlink(s);
          c->lock.unlock();
        }
      },
      nullptr);
  abandon_scan.store(false, std::memory_order_relaxed);
  abandon_lock.unlock();
}

}  // namespace

void chan_release(hchan* c) {
  NoPreempt np;
  if (c->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  forget_waiters(c);
  for (std::size_t i = 0, x = c->recvx; i < c->qcount; ++i, c->advance(x)) c->ops->destroy(c->slot(x));
  if (c->buf) ::operator delete(c->buf, std::align_val_t(std::max(c->ops->align, alignof(void*))));
  delete c;
}

bool chansend(hchan* c, void* src, bool block) NUGO_NO_THREAD_SAFETY_ANALYSIS {
  forbid_in_syscall_body(block ? "nugo::Chan::send" : "nugo::Chan::try_send");
  NoPreempt np;
  if (!c) {
    if (!block) return false;
    block_forever(WaitReason::chan_send_nil);
  }
  c->lock.lock();
  if (c->closed) {
    c->lock.unlock();
    throw Panic("send on closed channel");
  }
  if (sudog* receiver = c->recvq.dequeue()) {
    send_direct(c, receiver, src);
    c->lock.unlock();
    goready(receiver->g);
    return true;
  }
  if (c->qcount < c->dataqsiz) {
    send_buffered(c, src);
    c->lock.unlock();
    return true;
  }
  if (!block) {
    c->lock.unlock();
    return false;
  }
  sudog me;
  me.g = current_goroutine("send", [c]() NUGO_NO_THREAD_SAFETY_ANALYSIS { c->lock.unlock(); });
  me.elem = src;
  me.c.store(c, std::memory_order_relaxed);
  me.send = true;
  set_waiting(me.g, &me);
  c->sendq.enqueue(&me);
  gopark(unlock_chan, c, WaitReason::chan_send);
  clear_waiting(me.g);
  if (!me.success) throw Panic("send on closed channel");
  return true;
}

RecvStatus chanrecv(hchan* c, void* dst, bool block) NUGO_NO_THREAD_SAFETY_ANALYSIS {
  forbid_in_syscall_body(block ? "nugo::Chan::recv" : "nugo::Chan::try_recv");
  NoPreempt np;
  if (!c) {
    if (!block) return {false, false};
    block_forever(WaitReason::chan_recv_nil);
  }
  c->lock.lock();
  if (c->closed && c->qcount == 0) {
    c->lock.unlock();
    return {true, false};
  }
  if (sudog* sender = c->sendq.dequeue()) {
    recv_from_sender(c, sender, dst);
    c->lock.unlock();
    goready(sender->g);
    return {true, true};
  }
  if (c->qcount > 0) {
    recv_buffered(c, dst);
    c->lock.unlock();
    return {true, true};
  }
  if (!block) {
    c->lock.unlock();
    return {false, false};
  }
  sudog me;
  me.g = current_goroutine("receive", [c]() NUGO_NO_THREAD_SAFETY_ANALYSIS { c->lock.unlock(); });
  me.elem = dst;
  me.c.store(c, std::memory_order_relaxed);
  set_waiting(me.g, &me);
  c->recvq.enqueue(&me);
  gopark(unlock_chan, c, WaitReason::chan_recv);
  clear_waiting(me.g);
  return {true, me.success};
}

void closechan(hchan* c) {
  forbid_in_syscall_body("nugo::Chan::close");
  NoPreempt np;
  if (!c) throw Panic("close of nil channel");
  note_foreign_thread();
  c->lock.lock();
  if (c->closed) {
    c->lock.unlock();
    throw Panic("close of closed channel");
  }
  c->closed = true;
  sudog* wake = nullptr;  // the dequeued sudogs, linked through next
  for (WaitQ* q : {&c->recvq, &c->sendq}) {
    while (sudog* s = q->dequeue()) {
      s->success = false;
      s->next = wake;
      wake = s;
    }
  }
  c->lock.unlock();
  while (wake) {
    sudog* s = wake;
    wake = s->next;  // read before goready: s lives on the goroutine's stack
    goready(s->g);
  }
}

std::size_t chanlen(const hchan* c) {
  NoPreempt np;
  auto* mc = const_cast<hchan*>(c);
  mc->lock.lock();
  std::size_t n = c->qcount;
  mc->lock.unlock();
  return n;
}

std::size_t chancap(const hchan* c) { return c->dataqsiz; }

// ---- select ----

namespace {

struct SelectLocks {
  hchan** order;  // the cases' channels sorted by address, nil channels left out
  int n;

  // Several locks in address order, taken and released in loops the analysis cannot follow.
  void lock() const NUGO_NO_THREAD_SAFETY_ANALYSIS {
    for (int i = 0; i < n; ++i)
      if (i == 0 || order[i] != order[i - 1]) order[i]->lock.lock();
  }
  void unlock() const NUGO_NO_THREAD_SAFETY_ANALYSIS {
    for (int i = n - 1; i >= 0; --i)
      if (i == 0 || order[i] != order[i - 1]) order[i]->lock.unlock();
  }
};

bool unlock_select(G*, void* locks) {
  static_cast<SelectLocks*>(locks)->unlock();
  return true;
}

}  // namespace

SelectResult selectgo(SelectCase* cases, int ncases, bool block) {
  forbid_in_syscall_body("nugo::select");
  NoPreempt np;
  constexpr int kSmall = 16;
  int small_poll[kSmall];
  hchan* small_locks[kSmall];
  std::vector<int> big_poll;
  std::vector<hchan*> big_locks;
  std::unique_ptr<sudog[]> big_sudogs;  // allocated here: no allocation under the locks
  int* pollorder = small_poll;
  hchan** lockorder = small_locks;
  if (ncases > kSmall) {
    big_poll.resize(ncases);
    big_locks.resize(ncases);
    pollorder = big_poll.data();
    lockorder = big_locks.data();
    if (block) big_sudogs.reset(new sudog[ncases]);
  }

  // A random permutation of the non-nil cases (so ready cases are chosen uniformly), and
  // their channels in address order (so overlapping selects lock in one global order).
  int npoll = 0;
  std::uint64_t rnd = fastrand() | (static_cast<std::uint64_t>(fastrand()) << 32);
  for (int i = 0; i < ncases; ++i) {
    if (!cases[i].c) continue;
    rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;  // one LCG step per case
    int j = static_cast<int>((rnd >> 33) % static_cast<std::uint64_t>(npoll + 1));
    pollorder[npoll] = pollorder[j];
    pollorder[j] = i;
    lockorder[npoll++] = cases[i].c;
  }
  std::sort(lockorder, lockorder + npoll);
  SelectLocks locks{lockorder, npoll};

  if (npoll == 0) {
    if (!block) return {-1, false};
    block_forever(WaitReason::select_no_cases);
  }

  // Pass 1: the first ready case in poll order.
  locks.lock();
  for (int k = 0; k < npoll; ++k) {
    int i = pollorder[k];
    SelectCase& sc = cases[i];
    hchan* c = sc.c;
    if (sc.send) {
      if (c->closed) {
        locks.unlock();
        throw Panic("send on closed channel");
      }
      if (sudog* receiver = c->recvq.dequeue()) {
        send_direct(c, receiver, sc.elem);
        locks.unlock();
        goready(receiver->g);
        return {i, false};
      }
      if (c->qcount < c->dataqsiz) {
        send_buffered(c, sc.elem);
        locks.unlock();
        return {i, false};
      }
    } else {
      if (sudog* sender = c->sendq.dequeue()) {
        recv_from_sender(c, sender, sc.elem);
        locks.unlock();
        goready(sender->g);
        return {i, true};
      }
      if (c->qcount > 0) {
        recv_buffered(c, sc.elem);
        locks.unlock();
        return {i, true};
      }
      if (c->closed) {
        locks.unlock();
        return {i, false};
      }
    }
  }
  if (!block) {
    locks.unlock();
    return {-1, false};
  }

  // Pass 2: queue on every channel and park.
  G* gp = current_goroutine("select", [&locks] { locks.unlock(); });
  SelectState state;
  sudog small_sudogs[kSmall];
  sudog* sudogs = ncases > kSmall ? big_sudogs.get() : small_sudogs;
  sudog* chain = nullptr;
  for (int i = 0; i < ncases; ++i) {
    if (!cases[i].c) continue;
    sudog& s = sudogs[i];
    s.g = gp;
    s.elem = cases[i].elem;
    s.sel = &state;
    s.c.store(cases[i].c, std::memory_order_relaxed);
    s.send = cases[i].send;
    s.waitnext = chain;
    chain = &s;
    (cases[i].send ? cases[i].c->sendq : cases[i].c->recvq).enqueue(&s);
  }
  set_waiting(gp, chain);
  gopark(unlock_select, &locks, WaitReason::select);

  // Pass 3: one case fired; leave the other queues.
  locks.lock();
  for (int i = 0; i < ncases; ++i) {
    sudog& s = sudogs[i];
    if (&s != state.fired && s.queued)
      (cases[i].send ? cases[i].c->sendq : cases[i].c->recvq).unlink(&s);
  }
  locks.unlock();
  clear_waiting(gp);
  int i = static_cast<int>(state.fired - sudogs);
  if (cases[i].send && !state.fired->success) throw Panic("send on closed channel");
  return {i, !cases[i].send && state.fired->success};
}

}  // namespace nugo::detail
