// What the scheduler's files share, each function under the file that defines it (proc.cpp:
// goroutines, switching and the schedule loop; idle.cpp: parking and waking Ms; steal.cpp;
// syscall.cpp; lockosthread.cpp). Internal to sched/; library code sees link.hpp only.
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

// proc.cpp (and link.hpp: gopark, goready, gosched, goyield, fastrand, can_spin, ForeignCall,
// note_foreign_thread, for_each_g, tearing_down)
void mstart(M* m);
// Go's gopreempt_m, from the running G: to the global run queue. by_signal: stopped by the
// preemption signal (preempt.cpp) rather than at a cooperative check.
void gopreempt(bool by_signal);
// Makes goroutines the poller readied (still `waiting`) runnable: onto the current P's run
// queue, except as many as there are idle Ps, which go to the global queue with an M started
// for each (Go's injectglist). Without a P, all go to the global queue.
void injectglist(G** gl, int n);
// Switches from the running goroutine to its M's g0 and runs fn(m, gp) there (Go's mcall).
// Returns when something makes gp run again, possibly on another M.
void mcall(McallFn fn);
// waiting -> runnable, by the waker that took gp off a wait queue.
void ready_status(G* gp);

// idle.cpp
void wakep(Domain* d);
// wakep without its test for stealable work: for a new timer, which a spinner of another
// node runs (steal_remote) or sleeps for (the poller), and for a preempted G.
void wakep_nearest_idle(Domain* d);
// A spinner in d if d has an idle P, and nobody else: for work only d's Ps may take (go_on's
// pinned queue). from_node: the node index of the submitter (a wake from another node counts
// as wakeups_cross_node).
void wakep_home(Domain* d, int from_node);
// wakep for work queued on d's global queue by a submitter of another node (go_on=queued):
// a spinner in d if d has an idle P (counted as a cross-node wake-up when from_node is not d's),
// else as wakep.
void wakep_from(Domain* d, int from_node);
void startm(P* pp, bool spinning);
// cross_node: woken for work queued in another domain (counted as wakeups_cross_node).
void startm(Domain* d, bool spinning, bool cross_node = false);
void handoffp(P* pp);
void newm(Domain* d, P* pp, bool spinning);
void mexit(M* m);
// The seed threads without an M draw from in the run that starts (fastrand; Config::seed).
void publish_run_seed(std::uint64_t seed);
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

// syscall.cpp
void entersyscall(bool block);
void exitsyscall();

// lockosthread.cpp
void lock_os_thread();
void unlock_os_thread();
void startlockedm(M* m, G* gp);
bool stoplockedm(M* m);

}  // namespace nugo::detail
