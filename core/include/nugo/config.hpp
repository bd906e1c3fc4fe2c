// nugo::Config: what a runtime instance is started with.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace nugo {

// A configuration value (usually an environment variable) was malformed; what() names it.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct Config {
  static constexpr int kMaxProcs = 1024;                      // as Go's _MaxGomaxprocs
  static constexpr std::size_t kMinStack = 16 * 1024;
  static constexpr std::size_t kMaxStack = std::size_t{1} << 30;
  static constexpr std::size_t kDefaultStack = 256 * 1024;

  // Number of Ps (GOMAXPROCS). 0: one per PU of the topology. Env: NUGO_PROCS.
  int procs = 0;
  // Usable bytes per goroutine stack; lazily committed, so this is address space, not RAM.
  // Env: NUGO_STACK ("256k", "1m", bytes).
  std::size_t stack_size = kDefaultStack;
  // Where the topology comes from: "" (this machine, via hwloc), "xml:<path>" or
  // "synthetic:<hwloc synthetic description>". Env: NUGO_TOPOLOGY.
  std::string topology;
  // Go's deadlock report ("all goroutines are asleep"), on by default. It cannot see plain
  // threads that will wake a goroutine without having called into nugo yet: turn it off for
  // such programs. Env: NUGO_DEBUG=deadlock=0.
  bool detect_deadlock = true;

  // Reads NUGO_PROCS, NUGO_STACK, NUGO_TOPOLOGY and NUGO_DEBUG (comma-separated key=value, as
  // GODEBUG: deadlock=0|1); throws ConfigError naming the variable.
  static Config from_env();
  // Throws ConfigError if a field is out of range.
  void validate() const;
};

}  // namespace nugo
