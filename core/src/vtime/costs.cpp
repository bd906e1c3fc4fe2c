// The price of a cache line by node distance (costs.hpp).
#include "costs.hpp"

namespace nugo::detail::vtime {

std::vector<std::vector<std::int64_t>> line_costs(const topo::Topology& t, std::int64_t line_ns,
                                                  std::int64_t remote_line_ns) {
  const std::size_t n = t.nodes.size();
  auto d = [&](std::size_t a, std::size_t b) {
    return a < t.distance.size() && b < t.distance[a].size() ? t.distance[a][b] : (a == b ? 10 : 20);
  };
  int nearest = 0;  // the nearest remote distance
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (d(a, b) > 10 && (nearest == 0 || d(a, b) < nearest)) nearest = d(a, b);
  std::vector<std::vector<std::int64_t>> cost(n, std::vector<std::int64_t>(n, line_ns));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      if (d(a, b) > 10) cost[a][b] = line_ns + (remote_line_ns - line_ns) * (d(a, b) - 10) / (nearest - 10);
  return cost;
}

}  // namespace nugo::detail::vtime
