// G: a goroutine. See core/README.md for the state machine.
#pragma once

#include <atomic>
#include <cstdint>

#include "context.hpp"
#include "nugo/runtime.hpp"
#include "stack.hpp"

namespace nugo::detail {

// Go's _Gidle ... _Gpreempted. Transitions happen on the scheduler side (g0) except
// waiting -> runnable, which the waker performs from anywhere (goready).
enum class GStatus : std::uint8_t { idle, runnable, running, syscall, waiting, dead, preempted };

enum class WaitReason : std::uint8_t { none, waitgroup };

const char* to_string(GStatus s);
const char* to_string(WaitReason r);

// Two cache lines: spawning and switching touch little else, and a fan-out of 100k
// goroutines walks them by the thousand.
struct alignas(64) G : Closure {
  fcontext_t ctx = nullptr;  // saved context while switched out
  Stack stack;               // bound at first run (see core/README.md: lazy stacks)
  std::atomic<GStatus> status{GStatus::idle};
  WaitReason waitreason = WaitReason::none;
  std::int64_t goid = 0;
  G* schedlink = nullptr;  // run queues and free lists
  G* waitlink = nullptr;   // wait queues of blocking primitives
  [[no_unique_address]] SanitizerStack san;  // ASan's view of this stack
};
#if !NUGO_ASAN
static_assert(sizeof(G) == 128, "G should stay two cache lines");
#endif

// Gs are allocated in chunks, never one by one, and never freed while the runtime runs:
// dead ones are recycled through the free lists (gfput/gfget).
inline constexpr int kGChunk = 256;

// An intrusive FIFO of Gs through schedlink (Go's gQueue).
struct GQueue {
  G* head = nullptr;
  G* tail = nullptr;

  bool empty() const { return head == nullptr; }
  void push_back(G* gp) {
    gp->schedlink = nullptr;
    if (tail) tail->schedlink = gp; else head = gp;
    tail = gp;
  }
  void push_back_all(G* first, G* last) {
    last->schedlink = nullptr;
    if (tail) tail->schedlink = first; else head = first;
    tail = last;
  }
  G* pop() {
    G* gp = head;
    if (gp) {
      head = gp->schedlink;
      if (!head) tail = nullptr;
    }
    return gp;
  }
};

// An intrusive LIFO of Gs through schedlink (Go's gList), with its length.
struct GList {
  G* head = nullptr;
  int n = 0;

  void push(G* gp) { gp->schedlink = head; head = gp; ++n; }
  G* pop() {
    G* gp = head;
    if (gp) { head = gp->schedlink; --n; }
    return gp;
  }
};

}  // namespace nugo::detail
