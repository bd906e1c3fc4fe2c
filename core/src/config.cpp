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

// NUGO_DEBUG: comma-separated key=value settings, like GODEBUG.
void parse_debug(const char* v, Config& cfg) {
  std::string text(v);
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "deadlock" && (value == "0" || value == "1"))
      cfg.detect_deadlock = value == "1";
    else
      bad("NUGO_DEBUG", v, "unknown setting '" + item + "' (known: deadlock=0|1)");
  }
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
  if (const char* v = std::getenv("NUGO_DEBUG")) parse_debug(v, cfg);
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
