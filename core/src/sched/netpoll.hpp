// The network poller (Go's netpoll.go and netpoll_epoll.go): goroutines waiting for a
// descriptor to become readable or writable park without holding an M, and the scheduler
// readies them from epoll's reports. See core/README.md, "The network poller".
//
// One epoll instance and one eventfd per process, created by the first run(). Descriptors
// are registered once, edge-triggered, for input and output at the same time; the caller
// tries its I/O first and waits only after EAGAIN, so an edge it missed cannot strand it.
//
// A PollDesc's rg (wg) is the read (write) semaphore:
//   0           nothing happened, nobody waits
//   kPdReady    readiness was reported and nobody consumed it yet
//   kPdWait     a goroutine is about to park (between the CAS and gopark's commit)
//   G*          that goroutine is parked
// Readiness (netpoll), a deadline (its timer) and closing (poll_unblock) each move it back to
// 0 or kPdReady and ready the goroutine if one was there: whoever swaps a G* out readies it.
//
// What library code calls (poll_open, poll_wait, ...) is declared in link.hpp; this header is
// the descriptor's layout and the scheduler's side.
#pragma once

#include <atomic>
#include <cstdint>

#include "link.hpp"  // the poll_* calls, Timer

namespace nugo::detail {

inline constexpr std::uintptr_t kPdReady = 1;
inline constexpr std::uintptr_t kPdWait = 2;

// Type-stable: PollDescs are recycled through a free list and never freed, so a deadline
// timer that fires after its descriptor was closed touches valid memory and finds nothing
// to do (deadline_fired checks the deadline it was armed for has really passed).
struct alignas(64) PollDesc {
  PollDesc* link = nullptr;  // free list
  int fd = -1;
  std::atomic<std::uint32_t> lock{0};  // spin lock: writers of closing, rd, wd, the timers
  std::atomic<bool> closing{false};
  // Deadlines, CLOCK_MONOTONIC ns: 0 none, -1 passed. Written under lock, read without.
  std::atomic<std::int64_t> rd{0}, wd{0};
  std::atomic<std::uintptr_t> rg{0}, wg{0};
  Timer rt, wt;  // fire at rd / wd
  bool registered = false;  // with epoll (under lock)
  // For descriptors the user owns (io::wait_readable): registered lazily and re-armed by each
  // wait for the directions waited for (user_modes, 1: read, 2: write; under lock).
  int user_modes = 0;
};

// Once per process (the runtime's start, poll_open and poll_open_user call it); fatal if epoll
// or eventfd cannot be created.
void netpoll_init();

// ---- the scheduler's side ----

inline constexpr int kNetpollMaxReady = 256;  // 128 events, each may ready a reader and a writer

// Goroutines parked in poll_wait (Go's netpollWaiters).
bool netpoll_any_waiters();
// Polls: delay < 0 blocks until an event or netpoll_break, 0 does not block, > 0 waits at most
// that many ns. Stores the goroutines made ready (still `waiting`) in gl; returns how many.
int netpoll(std::int64_t delay, G** gl);
// After a runtime instance has stopped: the goroutines it abandoned while they waited on a
// descriptor are gone. Clears them from every PollDesc (and the waiter count), so that the
// next instance neither readies a freed G nor finds a direction still taken.
void netpoll_forget_goroutines();
// netpoll(0), by one caller at a time: -1 (nothing polled) while another is under way.
int netpoll_nonblocking(G** gl);
// Makes a blocked netpoll return (Go's netpollBreak). Several breaks before it returns count once.
void netpoll_break();

}  // namespace nugo::detail
