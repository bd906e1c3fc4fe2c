// The deadlock report (deadlock.hpp).
#include "deadlock.hpp"

#include <algorithm>
#include <cstdio>

namespace nugo::detail {

void WaitingReport::add(std::int64_t goid, const char* reason, const Traceback& tb) {
  auto [s, fresh] = symbolized_.try_emplace(std::vector<std::uintptr_t>(tb.pc, tb.pc + tb.n));
  if (fresh) s->second = format_traceback(tb);
  // Stacks that symbolize alike (two return addresses on one line) are one place.
  entries_.try_emplace({reason, s->second}, Entry{reason, &s->second, {}}).first->second.ids.push_back(goid);
}

void WaitingReport::print() {
  std::vector<const Entry*> order;
  for (auto& [key, e] : entries_) {
    std::sort(e.ids.begin(), e.ids.end());
    order.push_back(&e);
  }
  std::sort(order.begin(), order.end(),
            [](const Entry* a, const Entry* b) { return a->ids.front() < b->ids.front(); });
  for (const Entry* e : order) {
    const char* frames = e->frames->empty() ? "(no symbols)\n" : e->frames->c_str();
    if (e->ids.size() == 1) {
      std::fprintf(stderr, "\ngoroutine %lld [%s]:\n%s", static_cast<long long>(e->ids[0]), e->reason,
                   frames);
      continue;
    }
    std::string which;  // "2, 3, 4 and 997 more"
    for (std::size_t i = 0; i < e->ids.size() && i < 3; ++i)
      which += (i ? ", " : "") + std::to_string(e->ids[i]);
    if (e->ids.size() > 3) which += " and " + std::to_string(e->ids.size() - 3) + " more";
    std::fprintf(stderr, "\n%zu goroutines [%s] (goroutines %s):\n%s", e->ids.size(), e->reason,
                 which.c_str(), frames);
  }
}

}  // namespace nugo::detail
