// Where the scheduler's Ps and threads go: the P-to-node-and-PU assignment, the steal order
// between nodes, and the mapping from (possibly emulated) PUs to real CPUs and memory nodes.
// Everything here reads a loaded Topology and nothing else.

#include <nugo/topology.hpp>

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>

namespace nugo::topo {
namespace {

std::vector<int> cpu_bearing_nodes(const std::vector<Node>& nodes) {
    std::vector<int> bearing;
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
        if (!nodes[i].pus.empty()) bearing.push_back(i);
    return bearing;
}

// Splits procs over nodes in proportion to their PU counts by the largest-remainder rule
// (ties to the lower index), so no node is more than one P from its fair share.
std::vector<int> proportional_shares(int procs, const std::vector<int>& weights) {
    const long long total = std::accumulate(weights.begin(), weights.end(), 0LL);
    std::vector<int> shares(weights.size());
    std::vector<long long> remainders(weights.size());
    int left = procs;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        shares[i] = static_cast<int>(procs * static_cast<long long>(weights[i]) / total);
        remainders[i] = procs * static_cast<long long>(weights[i]) % total;
        left -= shares[i];
    }
    std::vector<std::size_t> order(weights.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
    for (int k = 0; k < left; ++k) ++shares[order[k]];
    return shares;
}

// The order in which a node's PUs receive Ps: the first PU of every core, then the second PU
// of every core, and so on, so that SMT siblings share a core only once every core is busy.
std::vector<int> pu_fill_order(const Topology& t, const Node& node) {
    std::vector<std::vector<int>> by_core;  // cores in order of their first PU
    std::vector<int> core_slot(t.cores, -1);
    for (int pu : node.pus) {
        int& slot = core_slot[t.pus[pu].core];
        if (slot < 0) {
            slot = static_cast<int>(by_core.size());
            by_core.emplace_back();
        }
        by_core[slot].push_back(pu);
    }
    std::vector<int> order;
    for (std::size_t round = 0; order.size() < node.pus.size(); ++round)
        for (const std::vector<int>& core : by_core)
            if (round < core.size()) order.push_back(core[round]);
    return order;
}

int index_of(const std::vector<int>& values, int value) {
    return static_cast<int>(std::find(values.begin(), values.end(), value) - values.begin());
}

// An emulated PU's place in the order Ps fill the machine: the first PU of every node, then
// the second PU of every node, and so on. Dealing real CPUs out in this order spreads any
// number of Ps evenly over them. Dealing them out by PU index would not: Ps take the first PU
// of every core first, and on a 2-way SMT topology those are all even, so a 2-CPU machine would
// run every P on the same CPU.
std::size_t fill_rank(const Topology& t, int pu) {
    const int node = t.pus[pu].node;
    if (node < 0) return static_cast<std::size_t>(pu);  // such a PU never gets a P
    const std::vector<int> bearing = cpu_bearing_nodes(t.nodes);
    const int position = index_of(pu_fill_order(t, t.nodes[node]), pu);
    return static_cast<std::size_t>(position) * bearing.size() +
           static_cast<std::size_t>(index_of(bearing, node));
}

}  // namespace

int Topology::pu_count() const { return static_cast<int>(pus.size()); }

int Topology::real_cpu(int pu) const {
    const int os_index = pus.at(pu).os_index;
    if (!emulated) return os_index;
    return real_cpus[fill_rank(*this, pu) % real_cpus.size()];
}

std::optional<int> Topology::memory_node(int node) const {
    if (emulated || node < 0 || node >= static_cast<int>(nodes.size())) return std::nullopt;
    return nodes[node].os_index;
}

std::vector<PAssignment> Topology::assign_ps(int procs) const {
    if (procs < 1)
        throw std::invalid_argument("assign_ps: procs must be at least 1, got " +
                                    std::to_string(procs));
    const std::vector<int> bearing = cpu_bearing_nodes(nodes);
    std::vector<int> weights;
    for (int node : bearing) weights.push_back(static_cast<int>(nodes[node].pus.size()));
    if (weights.empty()) throw std::logic_error("assign_ps: no node of the topology has a PU");
    const std::vector<int> shares = proportional_shares(procs, weights);

    std::vector<PAssignment> assignment;
    for (std::size_t k = 0; k < bearing.size(); ++k) {
        const std::vector<int> order = pu_fill_order(*this, nodes[bearing[k]]);
        for (int i = 0; i < shares[k]; ++i) {
            const int p = static_cast<int>(assignment.size());
            assignment.push_back({p, bearing[k], order[i % order.size()]});
        }
    }
    return assignment;
}

std::vector<int> Topology::nodes_by_distance(int node) const {
    const std::vector<int>& from = distance.at(node);
    std::vector<int> order = cpu_bearing_nodes(nodes);
    // Self first even if a hand-written matrix claims a remote node is as near.
    auto key = [&](int other) { return std::make_tuple(other != node, from[other], other); };
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    return order;
}

void bind_current_thread_to_pu(const Topology& topology, int pu) {
    const int cpu = topology.real_cpu(pu);
    std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(cpu + 1),
                                                          [](cpu_set_t* s) { CPU_FREE(s); });
    const std::size_t bytes = CPU_ALLOC_SIZE(cpu + 1);
    CPU_ZERO_S(bytes, set.get());
    CPU_SET_S(cpu, bytes, set.get());
    if (sched_setaffinity(0, bytes, set.get()) == 0) return;

    std::string what = "cannot bind thread for PU " + std::to_string(pu) + " to CPU " +
                       std::to_string(cpu) + ": " + std::strerror(errno);
    const std::vector<int>& allowed = topology.real_cpus;
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu))
        what += " (the CPU is outside this process's affinity, set by taskset or a cgroup)";
    throw TopologyError(what);
}

}  // namespace nugo::topo
