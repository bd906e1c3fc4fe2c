// Go's report of a deadlock ("all goroutines are asleep"): the goroutines and where they wait.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "traceback.hpp"

namespace nugo::detail {

// Every waiting goroutine with where it waits, as Go's traceback shows it, but folded: the
// goroutines waiting for the same reason at the same place are one entry with their count
// (a thousand workers blocked on one channel are one entry, not a thousand), in the order of
// each entry's first goroutine id. The scheduler adds each goroutine as it captures its stack
// (capture_waiting_goroutines, sched/inspect.cpp, from checkdead just before the process
// ends); each distinct stack is symbolized once, when first added.
class WaitingReport {
 public:
  void add(std::int64_t goid, const char* reason, const Traceback& tb);
  void print();  // on stderr

 private:
  struct Entry {
    const char* reason;
    const std::string* frames;
    std::vector<std::int64_t> ids;
  };
  std::map<std::vector<std::uintptr_t>, std::string> symbolized_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;  // by reason and frames
};

}  // namespace nugo::detail
