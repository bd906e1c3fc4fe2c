// Scheduler statistics: the snapshot (summing the per-P counters of stats.hpp) and its JSON.
// numa/README.md ("Statistics") defines each counter; the JSON keys are a contract.
#include "nugo/stats.hpp"

#include <cstdio>
#include <iterator>
#include <mutex>

#include "views.hpp"
#include "vtime.hpp"

namespace nugo {

Counters& Counters::operator+=(const Counters& o) {
  for (const detail::CounterKey& k : detail::kCounterKeys) this->*k.total += o.*k.total;
  runs_home += o.runs_home;
  idle_ns += o.idle_ns;
  for (auto [distance, n] : o.moved_remote_by_distance) moved_remote_by_distance[distance] += n;
  for (auto [distance, n] : o.steals_remote_by_distance) steals_remote_by_distance[distance] += n;
  return *this;
}

namespace detail {
namespace {

constexpr auto rlx = std::memory_order_relaxed;

// A 64-bit hash as JSON carries it without loss: 16 hex digits (a JSON number is a double).
std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::mutex final_mutex;
Stats last_stats;  // of the last run() that returned

}  // namespace

Stats snapshot(const RunView& s) {
  Stats out;
  out.valid = true;
  out.mode = s.mode;
  out.bind = s.bind;
  out.numa_policy = s.numa_policy;
  out.procs = s.procs;
  out.seed = s.seed;
  out.topology_source = s.topology_source;
  out.emulated = s.emulated;
  out.topology_nodes = s.topology_nodes;
  if (s.virtual_time) {
    const vtime::Report r = s.clock_at_return ? *s.clock_at_return : vtime::report();
    ClockStats& c = out.clock;
    c.virtual_time = true;
    c.quantum_ns = r.quantum_ns;
    c.wake_ns = r.wake_ns;
    const std::int64_t end = s.main_return_ns;
    c.elapsed_ns = (end != 0 ? std::min(end, r.end_ns) : r.end_ns) - s.start_ns;
    c.turns = r.turns;
    c.quanta = r.quanta;
    c.paused = r.paused_by_signal;
    c.timed_out = r.timed_out;
    c.threads = r.peak_members;
    c.first_turn_threads = r.first_turn_members;
    c.fingerprint = r.fingerprint;
    c.order_fingerprint = r.order_fingerprint;
    c.line_ns = r.line_ns;
    c.remote_line_ns = r.remote_line_ns;
    using vtime::Cost;
    c.charged_steal_ns = r.charged_ns[static_cast<int>(Cost::steal)];
    c.charged_queue_ns = r.charged_ns[static_cast<int>(Cost::queue)];
    c.charged_migrate_ns = r.charged_ns[static_cast<int>(Cost::migrate)];
    c.charged_wake_ns = r.charged_ns[static_cast<int>(Cost::wake)];
    c.charged_program_ns = r.charged_ns[static_cast<int>(Cost::program)];
  }
  const std::int64_t now = s.now_ns;
  for (const RunView::PView& pv : s.ps) {
    const PCounters& c = *pv.counters;
    PStats p;
    p.p = pv.p;
    p.node = pv.os_node;
    for (const CounterKey& k : kCounterKeys) p.*k.total = (c.*k.per_p).load(rlx);
    p.runs_home = p.runs - p.runs_away;
    p.idle_ns = c.idle_ns.load(rlx);
    if (std::int64_t since = c.idle_since.load(rlx); since != 0 && now > since) p.idle_ns += now - since;
    for (std::size_t k = 0; k < s.distances.size(); ++k) {
      if (std::uint64_t n = c.moved_remote_by_distance[k].load(rlx))
        p.moved_remote_by_distance[s.distances[k]] = n;
      if (std::uint64_t n = c.steals_remote_by_distance[k].load(rlx))
        p.steals_remote_by_distance[s.distances[k]] = n;
    }
    // Nodes in order of their number; a node's Ps are contiguous only in NUMA mode.
    auto it = out.nodes.begin();
    while (it != out.nodes.end() && it->node < p.node) ++it;
    if (it == out.nodes.end() || it->node != p.node) {
      it = out.nodes.insert(it, NodeStats{});
      it->node = p.node;
    }
    it->ps.push_back(p.p);
    *it += p;
    out.totals += p;
    out.ps.push_back(std::move(p));
  }
  // Goroutines made by threads without a P, by the node of the domain they were queued in.
  for (const RunView::DomainView& d : s.domains) {
    std::uint64_t n = d.created_foreign;
    out.created_foreign += n;
    int node = d.os_node >= 0 ? d.os_node : out.nodes.front().node;
    for (NodeStats& ns : out.nodes)
      if (ns.node == node) ns.created_foreign += n;
  }
  return out;
}

namespace {

void append_counters(std::string& j, const Counters& c) {
  for (const CounterKey& k : kCounterKeys) {
    j += '"' + std::string(k.name) + "\": " + std::to_string(c.*k.total) + ", ";
    if (k.total == &Counters::runs) j += "\"runs_home\": " + std::to_string(c.runs_home) + ", ";
  }
  j += "\"idle_ns\": " + std::to_string(c.idle_ns) + ", ";
  const std::pair<const char*, const std::map<int, std::uint64_t>*> by_distance[] = {
      {"moved_remote_by_distance", &c.moved_remote_by_distance},
      {"steals_remote_by_distance", &c.steals_remote_by_distance}};
  for (std::size_t i = 0; i < std::size(by_distance); ++i) {
    const auto& [name, counts] = by_distance[i];
    if (i > 0) j += ", ";
    j += '"' + std::string(name) + "\": {";
    bool first = true;
    for (auto [distance, n] : *counts) {
      if (!first) j += ", ";
      first = false;
      j += '"' + std::to_string(distance) + "\": " + std::to_string(n);
    }
    j += '}';
  }
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + '"';
}

}  // namespace

void save_final_stats(const RunView& run, std::FILE* file, const std::string& path) {
  Stats st = snapshot(run);
  if (file) {
    std::string j = to_json(st);
    j += '\n';
    bool ok = std::fwrite(j.data(), 1, j.size(), file) == j.size();
    ok = (file == stderr ? std::fflush(stderr) : std::fclose(file)) == 0 && ok;
    if (!ok) std::fprintf(stderr, "nugo: NUGO_STATS=\"%s\": writing the statistics failed\n", path.c_str());
  }
  std::lock_guard lock(final_mutex);
  last_stats = std::move(st);
}

Stats final_stats() {
  std::lock_guard lock(final_mutex);
  return last_stats;
}

}  // namespace detail

std::string to_json(const Stats& s) {
  using detail::append_counters;
  std::string j = "{\"mode\": ";
  j += s.mode == Mode::numa ? "\"numa\"" : "\"flat\"";
  j += ", \"bind\": ";
  j += s.bind == Bind::node ? "\"node\"" : s.bind == Bind::pu ? "\"pu\"" : "\"none\"";
  j += ", \"numa_policy\": " + detail::json_string(s.numa_policy);
  j += ", \"procs\": " + std::to_string(s.procs);
  j += ", \"seed\": " + std::to_string(s.seed);
  j += ", \"topology\": {\"source\": " + detail::json_string(s.topology_source);
  j += ", \"emulated\": ";
  j += s.emulated ? "true" : "false";
  j += ", \"nodes\": " + std::to_string(s.topology_nodes) + "}";
  j += ",\n \"clock\": {\"kind\": ";
  if (!s.clock.virtual_time) {
    j += "\"real\"}";
  } else {
    const ClockStats& c = s.clock;
    j += "\"virtual\", \"quantum_ns\": " + std::to_string(c.quantum_ns) +
         ", \"wake_ns\": " + std::to_string(c.wake_ns) +
         ", \"elapsed_ns\": " + std::to_string(c.elapsed_ns) + ", \"turns\": " +
         std::to_string(c.turns) + ", \"quanta\": " + std::to_string(c.quanta) +
         ", \"paused\": " + std::to_string(c.paused) + ", \"timed_out\": " +
         std::to_string(c.timed_out) + ", \"threads\": " + std::to_string(c.threads) +
         ", \"first_turn_threads\": " + std::to_string(c.first_turn_threads) +
         ", \"fingerprint\": \"" + detail::hex64(c.fingerprint) + "\", \"order_fingerprint\": \"" +
         detail::hex64(c.order_fingerprint) + "\"" +
         ", \"line_ns\": " + std::to_string(c.line_ns) +
         ", \"remote_line_ns\": " + std::to_string(c.remote_line_ns) +
         ", \"charged_ns\": {\"steal\": " + std::to_string(c.charged_steal_ns) +
         ", \"queue\": " + std::to_string(c.charged_queue_ns) +
         ", \"migrate\": " + std::to_string(c.charged_migrate_ns) +
         ", \"wake\": " + std::to_string(c.charged_wake_ns) +
         ", \"program\": " + std::to_string(c.charged_program_ns) + "}}";
  }
  j += ",\n \"totals\": {";
  append_counters(j, s.totals);
  j += ", \"created_foreign\": " + std::to_string(s.created_foreign) + "}";
  j += ",\n \"nodes\": [";
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const NodeStats& n = s.nodes[i];
    j += i ? ",\n   {" : "\n   {";
    j += "\"node\": " + std::to_string(n.node) + ", \"ps\": [";
    for (std::size_t k = 0; k < n.ps.size(); ++k) j += (k ? ", " : "") + std::to_string(n.ps[k]);
    j += "], ";
    append_counters(j, n);
    j += ", \"created_foreign\": " + std::to_string(n.created_foreign) + "}";
  }
  j += "],\n \"ps\": [";
  for (std::size_t i = 0; i < s.ps.size(); ++i) {
    const PStats& p = s.ps[i];
    j += i ? ",\n   {" : "\n   {";
    j += "\"p\": " + std::to_string(p.p) + ", \"node\": " + std::to_string(p.node) + ", ";
    append_counters(j, p);
    j += '}';
  }
  j += "]}";
  return j;
}

}  // namespace nugo
