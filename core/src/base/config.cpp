#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "nugo/config.hpp"

namespace nugo {
namespace {

[[noreturn]] void bad(const char* var, const char* value, const std::string& expected) {
  throw ConfigError(std::string(var) + "=\"" + value + "\": " + expected);
}

// ---- the number syntax every NUGO_* variable shares (config.hpp) ----

int lower(char c) { return std::tolower(static_cast<unsigned char>(c)); }

// Decimal digits only: no sign, no space, no 0x (strtoull would skip leading spaces and take a
// '+'). Advances p past them; false if there are none or the value overflows.
bool parse_digits(const char*& p, unsigned long long* out) {
  if (*p < '0' || *p > '9') return false;
  unsigned long long v = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    unsigned d = static_cast<unsigned>(*p - '0');
    if (v > (ULLONG_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// A whole number of bytes with an optional binary unit, k, m or g (x1024, x1024^2, x1024^3),
// in either case and optionally followed by b or ib: 262144, 256k, 256K, 256kb, 256KiB, 1g.
bool parse_size(const char* text, std::size_t* out) {
  const char* p = text;
  unsigned long long v = 0;
  if (!parse_digits(p, &v)) return false;
  unsigned long long scale = 1;
  switch (lower(*p)) {
    case 'k': scale = 1ull << 10; break;
    case 'm': scale = 1ull << 20; break;
    case 'g': scale = 1ull << 30; break;
  }
  if (scale > 1) {
    ++p;
    if (lower(*p) == 'i' && lower(p[1]) == 'b') ++p;
  }
  if (lower(*p) == 'b') ++p;
  if (*p != '\0' || v > ~0ull / scale) return false;
  *out = static_cast<std::size_t>(v * scale);
  return true;
}

// The names the runtime reads, and the one the project's scripts read (numa-check.sh).
constexpr std::string_view kKnownVariables[] = {
    "NUGO_PROCS",  "NUGO_STACK",    "NUGO_TOPOLOGY",       "NUGO_MODE",
    "NUGO_BIND",   "NUGO_TIMESLICE", "NUGO_PREEMPT_SIGNAL", "NUGO_NUMA",
    "NUGO_STATS",  "NUGO_TRACE",    "NUGO_TRACE_MAX",      "NUGO_DEBUG",
    "NUGO_VIRTUAL", "NUGO_SEED",   "NUGO_REQUIRE_VM", "NUGO_PREEMPTIBLE", "NUGO_NOPREEMPT_SYMBOLS"};

// Levenshtein distance, for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// A misspelled variable (NUGO_PROC) would otherwise be ignored without a word: warn about each
// NUGO_* name nugo does not know, once per process, with the nearest known name.
void warn_unknown_variables() {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  for (char** e = environ; e && *e; ++e) {
    std::string_view name(*e, std::strcspn(*e, "="));
    if (name.substr(0, 5) != "NUGO_") continue;
    std::string_view nearest;
    std::size_t best = 3;  // suggest only within two edits
    bool known = false;
    for (std::string_view k : kKnownVariables) {
      known = known || k == name;
      if (std::size_t d = edit_distance(name, k); d < best) {
        best = d;
        nearest = k;
      }
    }
    if (known) continue;
    std::string hint = nearest.empty() ? "" : " (did you mean " + std::string(nearest) + "?)";
    std::fprintf(stderr, "nugo: warning: unknown environment variable %.*s%s is ignored\n",
                 static_cast<int>(name.size()), name.data(), hint.c_str());
  }
}

// Calls setting(item, key, value) for each item of a comma-separated key=value list (the
// shape of NUGO_DEBUG and NUGO_NUMA, as GODEBUG's); empty items are skipped.
template <class F>
void for_each_setting(const char* v, F setting) {
  std::string text(v);
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    setting(item, item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
  }
}

void parse_debug(const char* v, Config& cfg) {
  for_each_setting(v, [&](const std::string& item, const std::string& key, const std::string& value) {
    bool flag = value == "0" || value == "1";
    if (key == "deadlock" && flag)
      cfg.detect_deadlock = value == "1";
    else if (key == "asyncpreemptoff" && flag)
      cfg.async_preempt = value == "0";
    else if (key == "asyncpreemptforce" && flag)
      cfg.async_preempt_force = value == "1";
    else if (key == "numa" && flag)
      cfg.debug_numa = value == "1";
    else if (key == "scheddetail" && flag)
      cfg.scheddetail = value == "1";
    else if (key == "schedtrace" && !value.empty() &&
             value.find_first_not_of("0123456789") == std::string::npos && value.size() <= 7 &&
             std::stol(value) <= Config::kMaxSchedtrace.count())
      cfg.schedtrace = std::chrono::milliseconds(std::stol(value));
    else
      bad("NUGO_DEBUG", v,
          "unknown setting '" + item + "' (known: deadlock=0|1, asyncpreemptoff=0|1, "
          "asyncpreemptforce=0|1, numa=0|1, "
          "schedtrace=MS (0 to 3600000), scheddetail=0|1)");
  });
}

bool parse_duration(const char* v, std::chrono::nanoseconds* out);

// A comma-separated list of names (NUGO_PREEMPTIBLE, NUGO_NOPREEMPT_SYMBOLS): empty items are
// skipped, as NUGO_DEBUG's; no spaces, no '='.
std::vector<std::string> parse_names(const char* var, const char* v) {
  std::vector<std::string> names;
  for_each_setting(v, [&](const std::string& item, const std::string&, const std::string&) {
    if (item.find_first_of(" \t=") != std::string::npos)
      bad(var, v, "expected comma-separated names without spaces or '='");
    names.push_back(item);
  });
  return names;
}

// NUGO_NUMA: the settings of NumaPolicy.
void parse_numa(const char* v, Config& cfg) {
  for_each_setting(v, [&](const std::string& item, const std::string& key, const std::string& value) {
    NumaPolicy& n = cfg.numa;
    std::chrono::nanoseconds d{};
    if (key == "remote_delay" && (value == "0" || parse_duration(value.c_str(), &d)) &&
        d <= NumaPolicy::kMaxRemoteDelay)
      n.remote_delay = d;
    else if (key == "remote_take" && (value == "1" || value == "quarter" || value == "half"))
      n.remote_take = value == "1" ? NumaPolicy::Take::one
                      : value == "quarter" ? NumaPolicy::Take::quarter : NumaPolicy::Take::half;
    else if (key == "ready" && (value == "waker" || value == "home"))
      n.ready = value == "home" ? NumaPolicy::Ready::home : NumaPolicy::Ready::waker;
    else if (key == "adopt" && (value == "0" || value == "1"))
      n.adopt = value == "1";
    else if (key == "steal" && (value == "nearest" || value == "node" || value == "flat"))
      n.steal = value == "flat"   ? NumaPolicy::Steal::flat
                : value == "node" ? NumaPolicy::Steal::node
                                  : NumaPolicy::Steal::nearest;
    else if (key == "go_on" && (value == "pinned" || value == "queued"))
      n.go_on = value == "queued" ? NumaPolicy::GoOn::queued : NumaPolicy::GoOn::pinned;
    else
      bad("NUGO_NUMA", v,
          "unknown setting '" + item + "' (known: remote_delay=DURATION up to 100ms, "
          "remote_take=1|quarter|half, ready=waker|home, adopt=0|1, steal=nearest|node|flat, "
          "go_on=pinned|queued)");
  });
}

// NUGO_VIRTUAL: "on" (or "1"), or settings (which imply on): quantum=DURATION, wake=DURATION.
void parse_virtual(const char* v, Config& cfg) {
  Config::VirtualTime& vt = cfg.virtual_time;
  const std::string text(v);
  if (text == "off" || text == "0") return;
  if (!Config::kVirtualTimeBuilt)
    bad("NUGO_VIRTUAL", v,
        "this build has no virtual-time mode (configure with -DNUGO_VIRTUAL_TIME=ON; "
        "scripts/test.sh --virtual makes one in build-virtual/)");
  vt.on = true;
  if (text == "on" || text == "1") return;
  bool costs_off = false;
  for_each_setting(v, [&](const std::string& item, const std::string& key, const std::string& value) {
    std::chrono::nanoseconds d{};
    bool duration = value == "0" || parse_duration(value.c_str(), &d);
    if (key == "quantum" && duration && d >= Config::VirtualTime::kMinQuantum &&
        d <= Config::VirtualTime::kMaxQuantum)
      vt.quantum = d;
    else if (key == "wake" && duration && d <= Config::VirtualTime::kMaxWake)
      vt.wake = d;
    else if (key == "line" && duration && d <= Config::VirtualTime::kMaxLine)
      vt.line = d;
    else if (key == "remote_line" && duration && d <= Config::VirtualTime::kMaxLine)
      vt.remote_line = d;
    else if (key == "costs" && (value == "off" || value == "0"))
      costs_off = true;  // whatever line or remote_line say, before or after it
    else
      bad("NUGO_VIRTUAL", v,
          "unknown setting '" + item + "' (expected on, off, or settings: quantum=DURATION from "
          "10us to 10ms, wake=DURATION up to 1ms, line=DURATION and remote_line=DURATION up to "
          "100us, costs=off)");
  });
  if (costs_off) vt.line = vt.remote_line = std::chrono::nanoseconds{0};
  if (vt.remote_line < vt.line)
    bad("NUGO_VIRTUAL", v, "remote_line must be at least line (a remote cache line costs no less "
                           "than a local one)");
}

// A whole number with a unit: "10ms", "200us" (or "200µs"), "1s", "500000ns"; false if
// malformed.
bool parse_duration(const char* v, std::chrono::nanoseconds* out) {
  const char* end = v;
  unsigned long long n = 0;
  if (!parse_digits(end, &n)) return false;
  struct Unit { const char* name; unsigned long long ns; };
  for (Unit u : {Unit{"ns", 1}, Unit{"us", 1000}, Unit{"\u00b5s", 1000}, Unit{"ms", 1000000},
                 Unit{"s", 1000000000}}) {
    if (std::strcmp(end, u.name) != 0) continue;
    if (n > (1ull << 62) / u.ns) return false;
    *out = std::chrono::nanoseconds(n * u.ns);
    return true;
  }
  return false;
}

// "SIGURG", "URG", "sigusr2", "12"; 0 if unknown.
int parse_signal(const char* v) {
  const char* end = v;
  unsigned long long n = 0;
  if (parse_digits(end, &n) && *end == '\0') return n > 0 && n < NSIG ? static_cast<int>(n) : 0;
  std::string name(v);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
  for (int sig = 1; sig < NSIG; ++sig)
    if (const char* abbrev = sigabbrev_np(sig); abbrev && name == abbrev) return sig;
  return 0;
}

bool usable_preempt_signal(int sig) {
  return sig == SIGURG || sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGWINCH ||
         (sig >= SIGRTMIN && sig <= SIGRTMAX);
}

const char* kSignalChoices = "SIGURG, SIGUSR1, SIGUSR2, SIGWINCH or a real-time signal";

}  // namespace

std::string to_string(const NumaPolicy& p) {
  const auto delay = p.remote_delay.count();
  return "remote_delay=" +
         (delay == 0             ? std::string("0")
          : delay % 1000 == 0 ? std::to_string(delay / 1000) + "us"
                                 : std::to_string(delay) + "ns") +
         ",remote_take=" +
         (p.remote_take == NumaPolicy::Take::one       ? "1"
          : p.remote_take == NumaPolicy::Take::quarter ? "quarter"
                                                       : "half") +
         ",ready=" + (p.ready == NumaPolicy::Ready::home ? "home" : "waker") + ",adopt=" + (p.adopt ? "1" : "0") +
         ",steal=" +
         (p.steal == NumaPolicy::Steal::flat   ? "flat"
          : p.steal == NumaPolicy::Steal::node ? "node"
                                               : "nearest") +
         ",go_on=" + (p.go_on == NumaPolicy::GoOn::queued ? "queued" : "pinned");
}

Config Config::from_env() {
  warn_unknown_variables();
  Config cfg;
  if (const char* v = std::getenv("NUGO_PROCS")) {
    const char* end = v;
    unsigned long long n = 0;
    if (!parse_digits(end, &n) || *end != '\0' || n < 1 || n > kMaxProcs)
      bad("NUGO_PROCS", v, "expected a whole number from 1 to " + std::to_string(kMaxProcs));
    cfg.procs = static_cast<int>(n);
  }
  if (const char* v = std::getenv("NUGO_STACK")) {
    std::size_t size = 0;
    if (!parse_size(v, &size))
      bad("NUGO_STACK", v, "expected a size such as 262144, 256k, 256kib or 1m");
    if (size < kMinStack || size > kMaxStack)
      bad("NUGO_STACK", v, "stack size must be between 16k and 1g");
    cfg.stack_size = size;
  }
  if (const char* v = std::getenv("NUGO_TOPOLOGY")) cfg.topology = v;
  if (const char* v = std::getenv("NUGO_MODE")) {
    if (std::strcmp(v, "flat") == 0)
      cfg.mode = Mode::flat;
    else if (std::strcmp(v, "numa") == 0)
      cfg.mode = Mode::numa;
    else
      bad("NUGO_MODE", v, "expected flat or numa");
  }
  if (const char* v = std::getenv("NUGO_BIND")) {
    if (std::strcmp(v, "node") == 0)
      cfg.bind = Bind::node;
    else if (std::strcmp(v, "pu") == 0)
      cfg.bind = Bind::pu;
    else if (std::strcmp(v, "none") == 0)
      cfg.bind = Bind::none;
    else
      bad("NUGO_BIND", v, "expected node, pu or none");
  }
  if (const char* v = std::getenv("NUGO_TIMESLICE")) {
    std::chrono::nanoseconds d{};
    if (!parse_duration(v, &d)) bad("NUGO_TIMESLICE", v, "expected a duration such as 10ms or 200us");
    if (d < kMinTimeslice || d > kMaxTimeslice)
      bad("NUGO_TIMESLICE", v, "time slice must be between 20us and 10s");
    cfg.timeslice = d;
  }
  if (const char* v = std::getenv("NUGO_PREEMPT_SIGNAL")) {
    int sig = parse_signal(v);
    if (!usable_preempt_signal(sig))
      bad("NUGO_PREEMPT_SIGNAL", v, std::string("expected ") + kSignalChoices);
    cfg.preempt_signal = sig;
  }
  if (const char* v = std::getenv("NUGO_PREEMPTIBLE"))
    cfg.preemptible_libraries = parse_names("NUGO_PREEMPTIBLE", v);
  if (const char* v = std::getenv("NUGO_NOPREEMPT_SYMBOLS"))
    cfg.nopreempt_symbols = parse_names("NUGO_NOPREEMPT_SYMBOLS", v);
  if (const char* v = std::getenv("NUGO_DEBUG")) parse_debug(v, cfg);
  if (const char* v = std::getenv("NUGO_NUMA")) parse_numa(v, cfg);
  if (const char* v = std::getenv("NUGO_VIRTUAL")) parse_virtual(v, cfg);
  if (const char* v = std::getenv("NUGO_SEED")) {
    const char* end = v;
    unsigned long long n = 0;
    if (!parse_digits(end, &n) || *end != '\0')
      bad("NUGO_SEED", v, "expected a whole number (the run's seed), such as 1 or 20261129");
    cfg.seed = n;
  }
  if (const char* v = std::getenv("NUGO_STATS")) {
    if (*v == '\0') bad("NUGO_STATS", v, "expected a file path, or - for stderr");
    cfg.stats_path = v;
  }
  if (const char* v = std::getenv("NUGO_TRACE")) {
    if (*v == '\0') bad("NUGO_TRACE", v, "expected a file path");
    cfg.trace_path = v;
  }
  if (const char* v = std::getenv("NUGO_TRACE_MAX")) {
    std::size_t size = 0;
    if (!parse_size(v, &size)) bad("NUGO_TRACE_MAX", v, "expected a size such as 256m or 1g");
    if (size < kMinTraceMax) bad("NUGO_TRACE_MAX", v, "the cap must be at least 64k");
    cfg.trace_max = size;
  }
  cfg.validate();
  return cfg;
}

// A shared object of the C or C++ runtime, the loader, a sanitizer or nugo: they keep
// per-thread state the runtime relies on, and no setting makes them preemptible.
static bool runtime_library_name(std::string_view base) {
  static constexpr std::string_view kRuntime[] = {
      "libc", "libstdc++", "libc++", "libc++abi", "libgcc_s", "libunwind", "libm", "ld-linux",
      "ld64", "ld-musl", "libpthread", "libdl", "librt", "libnugo", "linux-vdso", "linux-gate",
      "libasan", "libubsan", "liblsan", "libtsan"};
  for (std::string_view r : kRuntime)
    if (base.substr(0, r.size()) == r &&
        (base.size() == r.size() || base[r.size()] == '.' || base[r.size()] == '-'))
      return true;
  return false;
}

void Config::validate() const {
  for (const std::string& name : preemptible_libraries) {
    std::string_view base(name);
    if (std::size_t slash = base.rfind('/'); slash != std::string_view::npos) base.remove_prefix(slash + 1);
    if (name.empty())
      throw ConfigError("Config::preemptible_libraries: an empty name");
    if (runtime_library_name(base))
      throw ConfigError("Config::preemptible_libraries: '" + name +
                        "' is part of the C or C++ runtime or of nugo, which keep per-thread "
                        "state and are never preemptible (NUGO_PREEMPTIBLE)");
  }
  for (const std::string& prefix : nopreempt_symbols)
    if (prefix.empty()) throw ConfigError("Config::nopreempt_symbols: an empty prefix");
  if (procs < 0 || procs > kMaxProcs)
    throw ConfigError("Config::procs=" + std::to_string(procs) + ": expected 0 (one per PU) to " +
                      std::to_string(kMaxProcs));
  if (stack_size < kMinStack || stack_size > kMaxStack)
    throw ConfigError("Config::stack_size=" + std::to_string(stack_size) +
                      ": stack size must be between 16k and 1g");
  if (timeslice < kMinTimeslice || timeslice > kMaxTimeslice)
    throw ConfigError("Config::timeslice=" + std::to_string(timeslice.count()) +
                      "ns: time slice must be between 20us and 10s");
  if (mode != Mode::automatic && mode != Mode::flat && mode != Mode::numa)
    throw ConfigError("Config::mode=" + std::to_string(static_cast<int>(mode)) +
                      ": expected Mode::automatic, Mode::flat or Mode::numa");
  if (bind != Bind::automatic && bind != Bind::node && bind != Bind::pu && bind != Bind::none)
    throw ConfigError("Config::bind=" + std::to_string(static_cast<int>(bind)) +
                      ": expected Bind::automatic, Bind::node, Bind::pu or Bind::none");
  if (schedtrace.count() < 0 || schedtrace > kMaxSchedtrace)
    throw ConfigError("Config::schedtrace=" + std::to_string(schedtrace.count()) +
                      "ms: expected 0 (off) to 3600000");
  if (numa.remote_delay.count() < 0 || numa.remote_delay > NumaPolicy::kMaxRemoteDelay)
    throw ConfigError("Config::numa.remote_delay=" + std::to_string(numa.remote_delay.count()) +
                      "ns: expected 0 to 100ms");
  if (numa.remote_take != NumaPolicy::Take::one && numa.remote_take != NumaPolicy::Take::quarter &&
      numa.remote_take != NumaPolicy::Take::half)
    throw ConfigError("Config::numa.remote_take=" +
                      std::to_string(static_cast<int>(numa.remote_take)) +
                      ": expected Take::one, Take::quarter or Take::half");
  if (numa.ready != NumaPolicy::Ready::waker && numa.ready != NumaPolicy::Ready::home)
    throw ConfigError("Config::numa.ready=" + std::to_string(static_cast<int>(numa.ready)) +
                      ": expected Ready::waker or Ready::home");
  if (numa.steal != NumaPolicy::Steal::nearest && numa.steal != NumaPolicy::Steal::node &&
      numa.steal != NumaPolicy::Steal::flat)
    throw ConfigError("Config::numa.steal=" + std::to_string(static_cast<int>(numa.steal)) +
                      ": expected Steal::nearest, Steal::node or Steal::flat");
  if (numa.go_on != NumaPolicy::GoOn::pinned && numa.go_on != NumaPolicy::GoOn::queued)
    throw ConfigError("Config::numa.go_on=" + std::to_string(static_cast<int>(numa.go_on)) +
                      ": expected GoOn::pinned or GoOn::queued");
  if (trace_max < kMinTraceMax)
    throw ConfigError("Config::trace_max=" + std::to_string(trace_max) + ": expected at least 64k");
  if (virtual_time.on && !kVirtualTimeBuilt)
    throw ConfigError("Config::virtual_time.on: this build has no virtual-time mode (configure "
                      "with -DNUGO_VIRTUAL_TIME=ON)");
  if (virtual_time.quantum < VirtualTime::kMinQuantum || virtual_time.quantum > VirtualTime::kMaxQuantum)
    throw ConfigError("Config::virtual_time.quantum=" + std::to_string(virtual_time.quantum.count()) +
                      "ns: expected 10us to 10ms");
  if (virtual_time.wake.count() < -1 || virtual_time.wake > VirtualTime::kMaxWake)
    throw ConfigError("Config::virtual_time.wake=" + std::to_string(virtual_time.wake.count()) +
                      "ns: expected -1 (measure) or 0 to 1ms");
  for (auto [name, d] : {std::pair{"line", virtual_time.line}, std::pair{"remote_line", virtual_time.remote_line}})
    if (d.count() < 0 || d > VirtualTime::kMaxLine)
      throw ConfigError(std::string("Config::virtual_time.") + name + "=" + std::to_string(d.count()) +
                        "ns: expected 0 to 100us");
  if (virtual_time.remote_line < virtual_time.line)
    throw ConfigError("Config::virtual_time.remote_line=" + std::to_string(virtual_time.remote_line.count()) +
                      "ns: expected at least line (" + std::to_string(virtual_time.line.count()) + "ns)");
  if (!usable_preempt_signal(preempt_signal))
    throw ConfigError("Config::preempt_signal=" + std::to_string(preempt_signal) + ": expected " +
                      kSignalChoices);
}

}  // namespace nugo
