// Topology::describe: the human report that nugo-topo prints and experiments log next to
// their results, so that every number can be traced to the machine (or emulation) it came from.

#include <nugo/topology.hpp>

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace nugo::topo {
namespace {

// Ascending values as ranges: {0,1,2,5,7,8} -> "0-2,5,7-8".
std::string compact_ranges(const std::vector<int>& sorted) {
    std::string out;
    for (std::size_t i = 0; i < sorted.size();) {
        std::size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(sorted[i]);
        if (j > i) out += '-' + std::to_string(sorted[j]);
        i = j + 1;
    }
    return out;
}

// "1 package", "2 packages".
std::string count(std::size_t n, const std::string& noun) {
    return std::to_string(n) + ' ' + noun + (n == 1 ? "" : "s");
}

std::vector<int> sorted_unique(std::vector<int> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
}

std::string memory_size(std::uint64_t bytes) {
    const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
    char text[32];
    if (mib < 1024.0)
        std::snprintf(text, sizeof text, "%.0f MiB", mib);
    else
        std::snprintf(text, sizeof text, "%.1f GiB", mib / 1024.0);
    return text;
}

// Nodes are named by their index, which Ps and steal orders use; the OS number is added
// when it differs, so the name can still be matched with numactl or lstopo.
std::string node_name(const Topology& t, int node) {
    std::string name = "node " + std::to_string(node);
    if (t.nodes[node].os_index != node)
        name += " (OS node " + std::to_string(t.nodes[node].os_index) + ")";
    return name;
}

std::vector<int> pu_os_indexes(const Topology& t, const std::vector<int>& pus) {
    std::vector<int> os;
    for (int pu : pus) os.push_back(t.pus[pu].os_index);
    return sorted_unique(std::move(os));
}

void describe_machine(std::ostream& out, const Topology& t) {
    out << "topology: " << t.source << '\n';
    if (t.emulated)
        out << "  (emulated: threads folded onto " << count(t.real_cpus.size(), "real CPU")
            << ", memory not bound)\n";
    if (!t.restriction.empty()) out << "  (restricted: " << t.restriction << ")\n";
    out << count(static_cast<std::size_t>(t.packages), "package") << ", "
        << count(static_cast<std::size_t>(t.cores), "core") << ", " << count(t.pus.size(), "PU")
        << ", " << count(t.nodes.size(), "NUMA node") << '\n';
    for (int i = 0; i < static_cast<int>(t.nodes.size()); ++i) {
        const Node& node = t.nodes[i];
        out << node_name(t, i) << ": ";
        if (node.package >= 0) out << "package " << node.package << ", ";
        out << memory_size(node.memory_bytes) << ", ";
        if (node.pus.empty())
            out << "memory-only\n";
        else
            out << "PUs " << compact_ranges(pu_os_indexes(t, node.pus)) << '\n';
    }
}

void describe_distances(std::ostream& out, const Topology& t) {
    out << "distances (" << t.distance_source << "):\n";
    int widest = 3;
    for (const std::vector<int>& row : t.distance)
        for (int d : row) widest = std::max(widest, static_cast<int>(std::to_string(d).size()));
    const int width = widest + 1;
    out << std::setw(width + 2) << "";
    for (std::size_t j = 0; j < t.distance.size(); ++j) out << std::setw(width) << j;
    out << '\n';
    for (std::size_t i = 0; i < t.distance.size(); ++i) {
        out << std::setw(width + 2) << i;
        for (int d : t.distance[i]) out << std::setw(width) << d;
        out << '\n';
    }
}

void describe_each_p(std::ostream& out, const Topology& t,
                     const std::vector<PAssignment>& assignment) {
    for (const PAssignment& a : assignment)
        out << "  P" << a.p << " -> node " << a.node << ", PU " << t.pus[a.pu].os_index
            << " (real CPU " << t.real_cpu(a.pu) << ")\n";
}

// One line per CPU-bearing node; a node's Ps are contiguous, so a range names them.
void describe_ps_by_node(std::ostream& out, const Topology& t,
                         const std::vector<PAssignment>& assignment) {
    for (int node = 0; node < static_cast<int>(t.nodes.size()); ++node) {
        if (t.nodes[node].pus.empty()) continue;
        std::vector<int> ps, pus, cpus;
        for (const PAssignment& a : assignment)
            if (a.node == node) {
                ps.push_back(a.p);
                pus.push_back(a.pu);
                cpus.push_back(t.real_cpu(a.pu));
            }
        out << "  " << node_name(t, node) << ": ";
        if (ps.empty()) {
            out << "no Ps\n";
            continue;
        }
        out << 'P' << ps.front();
        if (ps.size() > 1) out << "-P" << ps.back();
        const std::vector<int> used = pu_os_indexes(t, pus);
        const std::vector<int> real = sorted_unique(cpus);
        out << (used.size() == 1 ? " on PU " : " on PUs ") << compact_ranges(used);
        if (ps.size() > used.size())
            out << " (" << count(ps.size(), "P") << " on " << count(used.size(), "PU") << ')';
        out << (real.size() == 1 ? ", real CPU " : ", real CPUs ") << compact_ranges(real) << '\n';
    }
}

}  // namespace

std::string Topology::describe(int procs) const {
    // Beyond this many Ps a line per P buries the shape of the assignment.
    constexpr int kMaxPsListedOneByOne = 16;
    std::ostringstream out;
    describe_machine(out, *this);
    describe_distances(out, *this);
    const std::vector<PAssignment> assignment = assign_ps(procs);
    out << count(static_cast<std::size_t>(procs), "P") << ":\n";
    if (procs <= kMaxPsListedOneByOne)
        describe_each_p(out, *this, assignment);
    else
        describe_ps_by_node(out, *this, assignment);
    return out.str();
}

}  // namespace nugo::topo
