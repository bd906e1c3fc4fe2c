// Virtual time's cost model, in one place (README.md, "The cost model"): what one cache line
// costs to move between two nodes, and how many lines each event the scheduler charges moves.
// The scheduler charges at the events themselves (vtime::charge_lines: a steal in steal.cpp, a
// global or pinned queue's take in domain.cpp, a wake-up across Ps in idle.cpp, a goroutine
// changing P in proc.cpp), with the numbers below; nothing else of the model lives elsewhere.
#pragma once

#include <cstdint>
#include <vector>

#include "nugo/topology.hpp"

namespace nugo::detail::vtime {

// ---- lines per event ----

// A steal reads the victim's ring head and tail (two lines) and the entries it took, eight to
// a line; the goroutines' own state is charged when they run (kMovedLines).
inline std::int64_t steal_lines(int taken) { return 2 + (taken + 7) / 8; }
// A take from a global queue: the queue's line (last written where its front was queued) and
// each entry's share of a line, kEntriesPerLine to a line, each priced from where it was queued.
inline constexpr std::int64_t kEntriesPerLine = 4;
// A take from go_on's pinned queue: its entry's line.
inline constexpr std::int64_t kPinnedTakeLines = 1;
// An M woken across Ps: the waker writes the sleeper's note and the P it hands over.
inline constexpr std::int64_t kWakeLines = 2;
// A goroutine that runs on another P than it last ran on (or was made on) brings its state
// along: its G's two cache lines (the virtual-time build adds fields; the model prices the G of
// the normal build), the registers saved on its stack and its top frame.
inline constexpr std::int64_t kMovedLines = 4;

// ---- the price of a line ----

// By pair of node indexes of t, the virtual ns a cache line costs to move from one to the other:
// line_ns within a node, remote_line_ns at the nearest remote distance of t's matrix, and a
// farther distance d in proportion to d - 10 (ACPI's local), as the workloads' latency model
// scales its penalty. A topology without a matrix counts every other node as the nearest.
std::vector<std::vector<std::int64_t>> line_costs(const topo::Topology& t, std::int64_t line_ns,
                                                  std::int64_t remote_line_ns);

}  // namespace nugo::detail::vtime
