// Topology::load: turns an hwloc topology (this machine, an XML file or a synthetic string)
// into the plain Topology value the scheduler reads. hwloc is used only here, only at load
// time; nothing of it outlives load().

#include <nugo/topology.hpp>

#include <hwloc.h>
#include <numa.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace nugo::topo {
namespace {

constexpr std::string_view kSyntheticScheme = "synthetic:";
constexpr std::string_view kXmlScheme = "xml:";

[[noreturn]] void fail(std::string_view spec, std::string_view what) {
    std::string prefix = spec.empty() ? "NUGO_TOPOLOGY unset or empty (this machine)"
                                      : "NUGO_TOPOLOGY=" + std::string(spec);
    throw TopologyError(prefix + ": " + std::string(what));
}

// Owns an hwloc topology so that every path out of load(), errors included, destroys it.
class HwlocTopology {
public:
    explicit HwlocTopology(std::string_view spec) {
        if (hwloc_topology_init(&topology_) != 0)
            fail(spec, std::string("hwloc_topology_init failed: ") + std::strerror(errno));
    }
    ~HwlocTopology() { hwloc_topology_destroy(topology_); }
    HwlocTopology(const HwlocTopology&) = delete;
    HwlocTopology& operator=(const HwlocTopology&) = delete;

    hwloc_topology_t get() const { return topology_; }

private:
    hwloc_topology_t topology_ = nullptr;
};

// Owns the matrices handed out by hwloc_distances_get_by_type.
class HwlocDistances {
public:
    HwlocDistances(hwloc_topology_t topology, hwloc_obj_type_t type) : topology_(topology) {
        unsigned count = 0;
        if (hwloc_distances_get_by_type(topology, type, &count, nullptr, 0, 0) != 0 || count == 0)
            return;
        matrices_.resize(count);
        if (hwloc_distances_get_by_type(topology, type, &count, matrices_.data(), 0, 0) != 0)
            count = 0;
        matrices_.resize(count);
    }
    ~HwlocDistances() {
        for (hwloc_distances_s* matrix : matrices_) hwloc_distances_release(topology_, matrix);
    }
    HwlocDistances(const HwlocDistances&) = delete;
    HwlocDistances& operator=(const HwlocDistances&) = delete;

    const std::vector<hwloc_distances_s*>& matrices() const { return matrices_; }

private:
    hwloc_topology_t topology_;
    std::vector<hwloc_distances_s*> matrices_;
};

std::string read_file(std::string_view spec, const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                         &std::fclose);
    if (!file) fail(spec, std::string("cannot read file: ") + std::strerror(errno));
    std::string text;
    char chunk[1 << 16];
    std::size_t got;
    while ((got = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) text.append(chunk, got);
    if (std::ferror(file.get()))
        fail(spec, std::string("cannot read file: ") + std::strerror(errno));
    return text;
}

// Loads the machine an XML file describes. The file's allowed CPUs and nodes are those of the
// process that wrote it (its cgroup), not part of the machine, so we keep all of them: an
// emulated topology is folded onto our own CPUs anyway. hwloc's libxml2 plugin parses the buffer
// in set_xmlbuffer, its built-in parser only in load, so a corrupt file can fail at either step.
void use_xml(std::string_view spec, hwloc_topology_t topology, const std::string& path) {
    const std::string text = read_file(spec, path);
    const std::string corrupt =
        "not a valid hwloc XML topology (HWLOC_XML_VERBOSE=1 makes hwloc say why)";
    if (text.empty() || text.size() >= static_cast<std::size_t>(std::numeric_limits<int>::max()))
        fail(spec, corrupt);
    hwloc_topology_set_flags(topology, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (hwloc_topology_set_xmlbuffer(topology, text.data(), static_cast<int>(text.size())) != 0 ||
        hwloc_topology_load(topology) != 0)
        fail(spec, corrupt);
}

void use_synthetic(std::string_view spec, hwloc_topology_t topology, const std::string& desc) {
    if (hwloc_topology_set_synthetic(topology, desc.c_str()) != 0)
        fail(spec, "malformed hwloc synthetic description");
    if (hwloc_topology_load(topology) != 0)
        fail(spec, std::string("hwloc cannot build this synthetic topology: ") +
                       std::strerror(errno));
}

void use_this_machine(std::string_view spec, hwloc_topology_t topology) {
    if (hwloc_topology_load(topology) != 0)
        fail(spec, std::string("hwloc cannot discover this machine: ") + std::strerror(errno));
}

// PUs sorted by OS index, each with a dense core number in order of first appearance. A PU
// that hwloc places under no Core object (some synthetic and XML topologies) is a core of its own.
std::vector<Pu> collect_pus(hwloc_topology_t topology, int& cores) {
    std::vector<hwloc_obj_t> objs;
    for (hwloc_obj_t pu = nullptr;
         (pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu)) != nullptr;)
        objs.push_back(pu);
    std::sort(objs.begin(), objs.end(),
              [](hwloc_obj_t a, hwloc_obj_t b) { return a->os_index < b->os_index; });

    std::map<hwloc_obj_t, int> core_number;
    std::vector<Pu> pus;
    for (hwloc_obj_t pu : objs) {
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_CORE, pu);
        const int number =
            core_number.try_emplace(core ? core : pu, static_cast<int>(core_number.size()))
                .first->second;
        pus.push_back({static_cast<int>(pu->os_index), number, -1});
    }
    cores = static_cast<int>(core_number.size());
    return pus;
}

std::vector<hwloc_obj_t> numa_objs(hwloc_topology_t topology) {
    std::vector<hwloc_obj_t> objs;
    for (hwloc_obj_t node = nullptr;
         (node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) != nullptr;)
        objs.push_back(node);
    std::sort(objs.begin(), objs.end(),
              [](hwloc_obj_t a, hwloc_obj_t b) { return a->os_index < b->os_index; });
    return objs;
}

// The node a PU lives on. hwloc gives every node a locality (cpuset), and a memory-only node
// (KNL MCDRAM, HBM, CXL memory) shares the locality of the CPUs near it or sits higher up the
// tree, so several nodes may cover one PU. The kernel's home node of a CPU is the one with the
// narrowest locality; among equals (KNL: DRAM and MCDRAM of one quadrant) the lower OS index,
// since Linux numbers the CPU-bearing nodes before the memory-only ones.
int home_node(const std::vector<hwloc_obj_t>& nodes, unsigned pu_os_index) {
    int best = -1;
    auto key = [&](int i) {
        return std::make_tuple(hwloc_bitmap_weight(nodes[i]->cpuset), nodes[i]->os_index);
    };
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
        if (!hwloc_bitmap_isset(nodes[i]->cpuset, pu_os_index)) continue;
        if (best < 0 || key(i) < key(best)) best = i;
    }
    return best;
}

// Nodes sorted by OS index, and each PU's node. hwloc 2 always reports at least one NUMA
// node; should it not, all PUs form one node, which is what the scheduler would assume.
std::vector<Node> collect_nodes(hwloc_topology_t topology, std::vector<Pu>& pus) {
    const std::vector<hwloc_obj_t> objs = numa_objs(topology);
    if (objs.empty()) {
        Node whole{0, {}, hwloc_get_root_obj(topology)->total_memory, -1};
        for (int i = 0; i < static_cast<int>(pus.size()); ++i) {
            pus[i].node = 0;
            whole.pus.push_back(i);
        }
        return {whole};
    }
    std::vector<Node> nodes;
    for (hwloc_obj_t obj : objs) {
        hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, obj);
        nodes.push_back({static_cast<int>(obj->os_index), {}, obj->attr->numanode.local_memory,
                         package ? static_cast<int>(package->logical_index) : -1});
    }
    for (int i = 0; i < static_cast<int>(pus.size()); ++i) {
        pus[i].node = home_node(objs, static_cast<unsigned>(pus[i].os_index));
        if (pus[i].node >= 0) nodes[pus[i].node].pus.push_back(i);
    }
    return nodes;
}

using Matrix = std::vector<std::vector<int>>;

int node_position(const std::vector<Node>& nodes, unsigned os_index) {
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
        if (nodes[i].os_index == static_cast<int>(os_index)) return i;
    return -1;
}

// A matrix is usable only if it covers every node: a partial one cannot order steals.
std::optional<Matrix> to_matrix(const hwloc_distances_s& d, const std::vector<Node>& nodes) {
    if (d.nbobjs != nodes.size()) return std::nullopt;
    std::vector<int> position(d.nbobjs);
    for (unsigned i = 0; i < d.nbobjs; ++i) {
        position[i] = node_position(nodes, d.objs[i]->os_index);
        if (position[i] < 0) return std::nullopt;
    }
    Matrix matrix(nodes.size(), std::vector<int>(nodes.size()));
    for (unsigned i = 0; i < d.nbobjs; ++i)
        for (unsigned j = 0; j < d.nbobjs; ++j)
            matrix[position[i]][position[j]] = static_cast<int>(d.values[i * d.nbobjs + j]);
    return matrix;
}

// hwloc may hold several NUMA matrices (latency, bandwidth, hop counts). Steal order needs
// "smaller is nearer", so a latency matrix wins and a bandwidth matrix is never used.
std::optional<Matrix> hwloc_matrix(hwloc_topology_t topology, const std::vector<Node>& nodes) {
    HwlocDistances distances(topology, HWLOC_OBJ_NUMANODE);
    std::optional<Matrix> fallback;
    for (const hwloc_distances_s* d : distances.matrices()) {
        if (d->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH) continue;
        std::optional<Matrix> matrix = to_matrix(*d, nodes);
        if (matrix && (d->kind & HWLOC_DISTANCES_KIND_MEANS_LATENCY)) return matrix;
        if (matrix && !fallback) fallback = std::move(matrix);
    }
    return fallback;
}

// The kernel's SLIT table, as /sys shows it; only meaningful for the machine we run on.
std::optional<Matrix> libnuma_matrix(const std::vector<Node>& nodes) {
    if (numa_available() < 0) return std::nullopt;
    Matrix matrix(nodes.size(), std::vector<int>(nodes.size()));
    for (std::size_t i = 0; i < nodes.size(); ++i)
        for (std::size_t j = 0; j < nodes.size(); ++j) {
            matrix[i][j] = numa_distance(nodes[i].os_index, nodes[j].os_index);
            if (matrix[i][j] <= 0) return std::nullopt;
        }
    return matrix;
}

Matrix default_matrix(std::size_t count) {
    Matrix matrix(count, std::vector<int>(count, 20));
    for (std::size_t i = 0; i < count; ++i) matrix[i][i] = 10;
    return matrix;
}

void fill_distances(Topology& t, hwloc_topology_t topology) {
    if (auto matrix = hwloc_matrix(topology, t.nodes)) {
        t.distance = std::move(*matrix);
        t.distance_source = "hwloc";
    } else if (auto numa = t.emulated ? std::nullopt : libnuma_matrix(t.nodes)) {
        t.distance = std::move(*numa);
        t.distance_source = "libnuma";
    } else {
        t.distance = default_matrix(t.nodes.size());
        t.distance_source = "default (10 local, 20 remote)";
    }
}

// The CPUs this thread may run on, read with a set that grows until the kernel's fits.
std::vector<int> affinity_cpus(std::string_view spec) {
    for (int capacity = 1024;; capacity *= 2) {
        std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(capacity),
                                                              [](cpu_set_t* s) { CPU_FREE(s); });
        const std::size_t bytes = CPU_ALLOC_SIZE(capacity);
        if (sched_getaffinity(0, bytes, set.get()) == 0) {
            std::vector<int> cpus;
            for (int cpu = 0; cpu < capacity; ++cpu)
                if (CPU_ISSET_S(cpu, bytes, set.get())) cpus.push_back(cpu);
            return cpus;
        }
        if (errno != EINVAL || capacity >= (1 << 22))
            fail(spec, std::string("sched_getaffinity failed: ") + std::strerror(errno));
    }
}

// The CPUs this process may run on, as it started: what taskset, numactl --cpunodebind or a
// cgroup cpuset gave it. Read once, during static initialization, on the thread that loads
// the library (the main thread, before main). A thread's own mask later says only where that
// thread was put: nugo binds its Ms, and a program may pin a thread to a node before it touches
// memory, as the placement checks do. Empty if the kernel would not say.
const std::vector<int>& start_cpus() {
    static const std::vector<int> cpus = [] {
        try {
            return affinity_cpus("");
        } catch (const TopologyError&) {
            return std::vector<int>{};
        }
    }();
    return cpus;
}
[[maybe_unused]] const bool start_cpus_read = !start_cpus().empty();

// The CPUs this process may run on now: those it started with that its cgroup still allows
// (`allowed`, hwloc's allowed set of this machine, null for an emulated one: a cpuset can
// shrink under a running process). When none is left, the calling thread's own mask. (Loaded
// late, by dlopen from a pinned thread or after another library's constructor pinned the main
// thread, the library reads that pinned mask as the start: such a program says NUGO_PROCS.)
std::vector<int> usable_cpus(std::string_view spec, hwloc_const_cpuset_t allowed) {
    std::vector<int> cpus;
    for (int cpu : start_cpus())
        if (!allowed || hwloc_bitmap_isset(allowed, static_cast<unsigned>(cpu))) cpus.push_back(cpu);
    if (cpus.empty()) cpus = affinity_cpus(spec);
    if (cpus.empty()) fail(spec, "this process may run on no CPU");
    return cpus;
}

Topology from_hwloc(std::string_view spec, hwloc_topology_t topology, std::string source,
                    bool emulated) {
    Topology t;
    t.source = std::move(source);
    t.emulated = emulated;
    // HWLOC_XMLFILE or HWLOC_SYNTHETIC in the environment make hwloc describe another machine
    // even for "this machine"; binding to it would then touch CPUs that are not there.
    if (!emulated && !hwloc_topology_is_thissystem(topology)) {
        t.source += ", overridden by the HWLOC_* environment";
        t.emulated = true;
    }
    t.packages = std::max(0, hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PACKAGE));
    t.pus = collect_pus(topology, t.cores);
    if (t.pus.empty()) fail(spec, "topology has no PUs");
    t.nodes = collect_nodes(topology, t.pus);
    if (std::none_of(t.nodes.begin(), t.nodes.end(), [](const Node& n) { return !n.pus.empty(); }))
        fail(spec, "no NUMA node holds a PU");
    fill_distances(t, topology);
    t.real_cpus = usable_cpus(spec, t.emulated ? nullptr : hwloc_topology_get_allowed_cpuset(topology));
    if (!t.emulated) {
        t.restrict_to_cpus(t.real_cpus);
        // hwloc itself hides the CPUs a cgroup cpuset forbids; say so too.
        const long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (t.restriction.empty() && online > static_cast<long>(t.pus.size()))
            t.restriction = std::to_string(t.pus.size()) + " of the machine's " +
                            std::to_string(online) +
                            " online CPUs: the others are outside this process's cgroup cpuset";
    }
    return t;
}

}  // namespace

void Topology::restrict_to_cpus(std::vector<int> cpus) {
    std::sort(cpus.begin(), cpus.end());
    auto allowed = [&](const Pu& pu) {
        return std::binary_search(cpus.begin(), cpus.end(), pu.os_index);
    };
    const auto kept_count = std::count_if(pus.begin(), pus.end(), allowed);
    if (kept_count == static_cast<std::ptrdiff_t>(pus.size())) return;
    if (kept_count == 0)
        throw TopologyError(source + ": this process may run on none of its CPUs (affinity " +
                            "mask or cgroup cpuset)");

    // PUs: the allowed ones, their cores renumbered densely in order of first appearance.
    std::vector<int> pu_index(pus.size(), -1);
    std::vector<Pu> kept_pus;
    std::map<int, int> core_number;
    for (std::size_t i = 0; i < pus.size(); ++i) {
        if (!allowed(pus[i])) continue;
        pu_index[i] = static_cast<int>(kept_pus.size());
        Pu pu = pus[i];
        pu.core = core_number.try_emplace(pu.core, static_cast<int>(core_number.size())).first->second;
        kept_pus.push_back(pu);
    }
    // Nodes: those that keep a PU, and those that never had one (memory-only nodes). A node
    // whose every CPU is forbidden is not this process's to schedule on.
    std::vector<int> node_index(nodes.size(), -1);
    std::vector<Node> kept_nodes;
    std::vector<int> dropped_nodes;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        Node node = nodes[n];
        node.pus.clear();
        for (int pu : nodes[n].pus)
            if (pu_index[pu] >= 0) node.pus.push_back(pu_index[pu]);
        if (node.pus.empty() && !nodes[n].pus.empty()) {
            dropped_nodes.push_back(nodes[n].os_index);
            continue;
        }
        node_index[n] = static_cast<int>(kept_nodes.size());
        kept_nodes.push_back(std::move(node));
    }
    for (Pu& pu : kept_pus) pu.node = pu.node >= 0 ? node_index[pu.node] : -1;
    std::vector<std::vector<int>> kept_distance;
    for (std::size_t a = 0; a < nodes.size(); ++a) {
        if (node_index[a] < 0) continue;
        kept_distance.emplace_back();
        for (std::size_t b = 0; b < nodes.size(); ++b)
            if (node_index[b] >= 0) kept_distance.back().push_back(distance[a][b]);
    }
    // Packages: those of the CPU-bearing nodes kept, when every node knows its package.
    std::set<int> kept_packages;
    bool packages_known = true;
    for (const Node& node : kept_nodes) {
        if (node.pus.empty()) continue;
        if (node.package < 0) packages_known = false;
        kept_packages.insert(node.package);
    }
    if (packages_known) packages = static_cast<int>(kept_packages.size());

    restriction = std::to_string(kept_pus.size()) + " of the machine's " +
                  std::to_string(pus.size()) + " CPUs, those this process may run on (taskset, " +
                  "numactl --cpunodebind or a cgroup cpuset)";
    if (!dropped_nodes.empty()) {
        restriction += "; without node";
        restriction += dropped_nodes.size() == 1 ? " " : "s ";
        for (std::size_t i = 0; i < dropped_nodes.size(); ++i)
            restriction += (i ? ", " : "") + std::to_string(dropped_nodes[i]);
        restriction += ", none of whose CPUs it may use (their memory it may)";
    }
    masked_nodes.insert(masked_nodes.end(), dropped_nodes.begin(), dropped_nodes.end());
    std::sort(masked_nodes.begin(), masked_nodes.end());
    pus = std::move(kept_pus);
    cores = static_cast<int>(core_number.size());
    nodes = std::move(kept_nodes);
    distance = std::move(kept_distance);
}

Topology Topology::load(std::string_view spec) {
    HwlocTopology topology(spec);
    if (spec.empty()) {
        use_this_machine(spec, topology.get());
        return from_hwloc(spec, topology.get(), "this machine (hwloc)", false);
    }
    if (spec.starts_with(kSyntheticScheme)) {
        use_synthetic(spec, topology.get(), std::string(spec.substr(kSyntheticScheme.size())));
        return from_hwloc(spec, topology.get(), std::string(spec), true);
    }
    if (spec.starts_with(kXmlScheme)) {
        use_xml(spec, topology.get(), std::string(spec.substr(kXmlScheme.size())));
        return from_hwloc(spec, topology.get(), std::string(spec), true);
    }
    fail(spec, R"(expected "synthetic:<description>" or "xml:<path>")");
}

Topology Topology::from_env() {
    const char* spec = std::getenv("NUGO_TOPOLOGY");
    return load(spec ? spec : "");
}

}  // namespace nugo::topo
