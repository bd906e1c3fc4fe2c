// The deadlock report (deadlock.hpp).
#include "deadlock.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "sched.hpp"
#include "traceback.hpp"

namespace nugo::detail {

// Every waiting goroutine with where it waits, as Go's traceback shows it, but folded: the
// goroutines waiting for the same reason at the same place are one entry with their count
// (a thousand workers blocked on one channel are one entry, not a thousand). Entries come in
// the order of their first goroutine's id. Each goroutine's stack is captured where it is
// parked (traceback_parked), which leaves it unable to run again: for reports that end the
// process. Each distinct stack is symbolized once.
void report_waiting_goroutines(M* m) {
  struct Entry {
    WaitReason reason;
    const std::string* frames;
    std::vector<std::int64_t> ids;
  };
  std::map<std::vector<std::uintptr_t>, std::string> symbolized;
  std::map<std::pair<WaitReason, std::string>, Entry> entries;
  for_each_g_in(sched->gchunks, [&](G* gp) {  // glock held (checkdead)
    if (gp->status.load() != GStatus::waiting) return;
    Traceback tb;
    traceback_parked(m, gp, &tb);
    auto [s, fresh] = symbolized.try_emplace(std::vector<std::uintptr_t>(tb.pc, tb.pc + tb.n));
    if (fresh) s->second = format_traceback(tb);
    Entry& e = entries.try_emplace({gp->waitreason, s->second}, Entry{gp->waitreason, &s->second, {}})
                   .first->second;
    e.ids.push_back(gp->goid);
  });
  std::vector<Entry*> order;
  for (auto& [key, e] : entries) {
    std::sort(e.ids.begin(), e.ids.end());
    order.push_back(&e);
  }
  std::sort(order.begin(), order.end(),
            [](const Entry* a, const Entry* b) { return a->ids.front() < b->ids.front(); });
  for (const Entry* e : order) {
    const char* frames = e->frames->empty() ? "(no symbols)\n" : e->frames->c_str();
    if (e->ids.size() == 1) {
      std::fprintf(stderr, "\ngoroutine %lld [%s]:\n%s", static_cast<long long>(e->ids[0]),
                   to_string(e->reason), frames);
      continue;
    }
    std::string which;  // "2, 3, 4 and 997 more"
    for (std::size_t i = 0; i < e->ids.size() && i < 3; ++i)
      which += (i ? ", " : "") + std::to_string(e->ids[i]);
    if (e->ids.size() > 3) which += " and " + std::to_string(e->ids.size() - 3) + " more";
    std::fprintf(stderr, "\n%zu goroutines [%s] (goroutines %s):\n%s", e->ids.size(),
                 to_string(e->reason), which.c_str(), frames);
  }
}

}  // namespace nugo::detail
