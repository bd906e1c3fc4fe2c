// The scheduler's per-P counters (nugo/stats.hpp is the public view). Each P's counters are
// written only by the M that owns the P, or by whoever holds it off the idle list under its
// domain's lock, with a relaxed load and store: as cheap as a plain increment, and still no
// data race with a snapshot that reads them from another thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "nugo/stats.hpp"

namespace nugo::detail {

struct PCounters {
  using Counter = std::atomic<std::uint64_t>;
  // The three every switch or spawn writes come first: P places them on the cache line that
  // execute writes anyway (schedtick). runs_home is not kept: it is runs - runs_away.
  Counter runs{0}, runs_away{0}, created{0}, steals_same_node{0},
      steals_remote{0}, moved_same_node{0}, moved_remote{0}, globrunq_own{0},
      globrunq_remote{0}, wakeups_cross_node{0}, preemptions{0}, placed{0}, placed_remote{0};
  std::atomic<std::int64_t> idle_ns{0};
  std::atomic<std::int64_t> idle_since{0};  // on the idle list since (0: not idle)
  // moved_remote and steals_remote by distance class (numa::Plan::distance_class), sized at
  // runtime start.
  std::unique_ptr<Counter[]> moved_remote_by_distance;
  std::unique_ptr<Counter[]> steals_remote_by_distance;
};

// The counting keys, in the order of the JSON, each with its member in Counters (public) and
// in PCounters: the one list that the snapshot, the sums and the JSON walk.
struct CounterKey {
  const char* name;
  std::uint64_t Counters::*total;
  PCounters::Counter PCounters::*per_p;
};
inline constexpr CounterKey kCounterKeys[] = {
    {"created", &Counters::created, &PCounters::created},
    {"runs", &Counters::runs, &PCounters::runs},
    {"runs_away", &Counters::runs_away, &PCounters::runs_away},
    {"steals_same_node", &Counters::steals_same_node, &PCounters::steals_same_node},
    {"steals_remote", &Counters::steals_remote, &PCounters::steals_remote},
    {"moved_same_node", &Counters::moved_same_node, &PCounters::moved_same_node},
    {"moved_remote", &Counters::moved_remote, &PCounters::moved_remote},
    {"globrunq_own", &Counters::globrunq_own, &PCounters::globrunq_own},
    {"globrunq_remote", &Counters::globrunq_remote, &PCounters::globrunq_remote},
    {"wakeups_cross_node", &Counters::wakeups_cross_node, &PCounters::wakeups_cross_node},
    {"preemptions", &Counters::preemptions, &PCounters::preemptions},
    {"placed", &Counters::placed, &PCounters::placed},
    {"placed_remote", &Counters::placed_remote, &PCounters::placed_remote},
};

inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct RunView;  // views.hpp
// The statistics of a run as the scheduler viewed it (nugo::stats while a run is on).
Stats snapshot(const RunView& run);
// The final snapshot of a run, kept for nugo::stats() after run() returns, and written to
// file (Config::stats_path, opened at start as path; runtime.cpp, once every M has been
// joined), which it closes unless it is stderr.
void save_final_stats(const RunView& run, std::FILE* file, const std::string& path);
// The last saved (empty, Stats::valid false, before any run() returned).
Stats final_stats();

}  // namespace nugo::detail
