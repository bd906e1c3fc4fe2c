// The execution tracer: records what the scheduler did (goroutines created, run, blocked and
// woken, steals, preemptions, system calls, Ps and Ms starting and stopping, timers, the
// network poller) and writes it as Chrome trace-event JSON, which Perfetto
// (https://ui.perfetto.dev) and chrome://tracing open, and scripts/tools/timeline.py draws.
// NUGO_TRACE=PATH records a whole run; start() and stop() a part of one. core/README.md,
// "Execution tracer", describes the records, the file and what tracing costs.
#pragma once

#include <cstddef>
#include <string>

namespace nugo::trace {

inline constexpr std::size_t kDefaultMaxBytes = std::size_t{256} << 20;

// Starts recording into path, which is created (or truncated) now. The file stays below
// max_bytes: once the events recorded would pass it, recording stops with a message on
// stderr, and the file ends there. Throws std::logic_error outside nugo::run or while a
// trace is being recorded or written, std::runtime_error if path cannot be written.
void start(const std::string& path, std::size_t max_bytes = kDefaultMaxBytes);

// Stops recording and writes the file (from a goroutine, as a blocking system call: its P
// goes on without it). Returns false if no trace was being recorded; throws
// std::runtime_error if the file could not be written. run() stops a trace still on when it
// returns.
bool stop();

// Stops recording and throws the records away: the file is removed, nothing is written
// (a recording that turned out not to be needed; the benchmarks' cost of tracing). Returns
// false if no trace was being recorded.
bool discard();

// A trace is being recorded (or has stopped at its cap and waits for stop()).
bool active();

}  // namespace nugo::trace
