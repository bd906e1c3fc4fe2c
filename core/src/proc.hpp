// What the scheduler's files share (proc.cpp: goroutines, switching and the schedule loop;
// idle.cpp: parking and waking Ms; steal.cpp; syscall.cpp; lockosthread.cpp). Internal to
// core/src, like sched.hpp.
#pragma once

#include <cstdint>

#include "sched.hpp"

namespace nugo::detail {

// An mcall function runs on g0 after a goroutine switched away; it may return the G to run
// next (with its time slice inherited or not), or nullptr to let findrunnable choose.
struct Next {
  G* gp = nullptr;
  bool inherit_time = false;
};
using McallFn = Next (*)(M*, G*);

// proc.cpp
// Switches from the running goroutine to its M's g0 and runs fn(m, gp) there (Go's mcall).
// Returns when something makes gp run again, possibly on another M.
void mcall(McallFn fn);
// waiting -> runnable, by the waker that took gp off a wait queue.
void ready_status(G* gp);

// idle.cpp
void newm(Domain* d, P* pp, bool spinning);
void mexit(M* m);
// Why stopm returned.
enum class Wake {
  p,      // startm handed this M a P, now acquired
  watch,  // this M was the deadlock watcher and its grace period is over: run checkdead
  stop,   // the runtime is stopping
  exit,   // an extra M idle for kIdleMLifetimeNs: off the idle list now, to exit
};
Wake stopm(M* m, bool may_watch);
void become_spinning(M* m);
void stop_spinning(M* m);
void resetspinning(M* m);
P* check_runqs_no_p(Domain* d);
bool acquire_idle_p_nearest(M* m);
bool idle_until_p(M* m);

// steal.cpp
G* steal_work(M* m, P* pp, std::int64_t now);
// For tests of the steal order on the real stealing code: called by every thief as it looks
// at a victim (domain d's global queue when victim is null), and with d null when a search
// begins. Null in production: one relaxed load per victim.
using StealProbe = void (*)(const P* thief, const Domain* d, const P* victim);
extern std::atomic<StealProbe> steal_probe;

// lockosthread.cpp
void startlockedm(M* m, G* gp);
bool stoplockedm(M* m);

}  // namespace nugo::detail
