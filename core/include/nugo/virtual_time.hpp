// The settings of a run in virtual time (core/src/vtime/README.md): Config::virtual_time, which
// NUGO_VIRTUAL sets. A header of its own, so that virtual time's engine, the lowest room of the
// runtime, reads its settings without the rest of the configuration.
#pragma once

#include <chrono>

namespace nugo {

struct VirtualTime {
  bool on = false;
  // How far one thread's clock runs ahead while others are due (core/src/vtime/README.md).
  std::chrono::nanoseconds quantum{50'000};
  // A futex wake-up's latency, added to the woken thread's clock; -1: measured on this
  // machine when run() starts (a ping-pong of two threads, the median one way).
  std::chrono::nanoseconds wake{-1};
  // The cost model's cache-line transfer (vtime/README.md, "The cost model"): between two
  // CPUs of one node, and at the topology's nearest remote distance; a farther distance d
  // costs line + (remote_line - line) (d - 10) / (nearest - 10). Charged for the lines a
  // steal, a global queue's take, a wake-up and a goroutine moving to another P touch.
  // The defaults are the middle of the published ranges (44-51 ns within an Intel socket,
  // 108-136 ns across sockets). Zero for both: no charges (NUGO_VIRTUAL=costs=off).
  std::chrono::nanoseconds line{48};
  std::chrono::nanoseconds remote_line{122};
  static constexpr std::chrono::nanoseconds kMinQuantum{10'000};
  static constexpr std::chrono::nanoseconds kMaxQuantum{10'000'000};
  static constexpr std::chrono::nanoseconds kMaxWake{1'000'000};
  static constexpr std::chrono::nanoseconds kMaxLine{100'000};
};

}  // namespace nugo
