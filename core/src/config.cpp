#include <cerrno>
#include <cstdlib>
#include <string>

#include "nugo/config.hpp"
#include "stack.hpp"

namespace nugo {
namespace {

[[noreturn]] void bad(const char* var, const char* value, const std::string& expected) {
  throw ConfigError(std::string(var) + "=\"" + value + "\": " + expected);
}

}  // namespace

Config Config::from_env() {
  Config cfg;
  if (const char* v = std::getenv("NUGO_PROCS")) {
    errno = 0;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno || n < 1 || n > kMaxProcs)
      bad("NUGO_PROCS", v, "expected a whole number from 1 to " + std::to_string(kMaxProcs));
    cfg.procs = static_cast<int>(n);
  }
  if (const char* v = std::getenv("NUGO_STACK")) {
    std::size_t size = 0;
    if (!detail::parse_size(v, &size))
      bad("NUGO_STACK", v, "expected a size such as 262144, 256k or 1m");
    if (size < kMinStack || size > kMaxStack)
      bad("NUGO_STACK", v, "stack size must be between 16k and 1g");
    cfg.stack_size = size;
  }
  if (const char* v = std::getenv("NUGO_TOPOLOGY")) cfg.topology = v;
  cfg.validate();
  return cfg;
}

void Config::validate() const {
  if (procs < 0 || procs > kMaxProcs)
    throw ConfigError("Config::procs=" + std::to_string(procs) + ": expected 0 (one per PU) to " +
                      std::to_string(kMaxProcs));
  if (stack_size < kMinStack || stack_size > kMaxStack)
    throw ConfigError("Config::stack_size=" + std::to_string(stack_size) +
                      ": stack size must be between 16k and 1g");
}

}  // namespace nugo
