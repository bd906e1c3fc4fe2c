// Tests for topology/: discovery of this machine, the real machines in topology/machines,
// synthetic topologies, errors, and P placement.
//
// Compile definitions: NUGO_MACHINES_DIR (topology/machines) and, optionally, NUGO_TOPO_BIN
// (path of the nugo-topo binary, to test the tool).

#include <nugo/topology.hpp>

#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using nugo::topo::PAssignment;
using nugo::topo::Topology;
using nugo::topo::TopologyError;

namespace {

const char* const kTwoNodes = "synthetic:pack:2 numa:1 core:4 pu:2";

// The real machines' XMLs (topology/machines), part of every clone.
std::optional<fs::path> shared_topologies() {
    const fs::path dir = NUGO_MACHINES_DIR;
    if (!fs::is_directory(dir)) FAIL("the machines' folder " << dir << " is missing");
    return dir;
}

std::optional<Topology> load_shared(const std::string& file) {
    const std::optional<fs::path> dir = shared_topologies();
    if (!dir) return std::nullopt;
    return Topology::load("xml:" + (*dir / file).string());
}

// A file in the temporary directory, removed when the test is done with it.
class TempFile {
public:
    TempFile(const std::string& name, const std::string& text)
        : path_(fs::temp_directory_path() /
                ("nugo-topology-test-" + std::to_string(getpid()) + "-" + name)) {
        std::ofstream(path_, std::ios::binary) << text;
    }
    ~TempFile() { fs::remove(path_); }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    std::string spec() const { return "xml:" + path_.string(); }

private:
    fs::path path_;
};

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

std::string load_error(const std::string& spec) {
    try {
        Topology::load(spec);
    } catch (const TopologyError& e) {
        return e.what();
    }
    FAIL("no TopologyError for " << spec);
    return {};
}

// What every loaded topology must satisfy, whatever its source.
void check_invariants(const Topology& t) {
    INFO(t.source);
    REQUIRE(t.pu_count() > 0);
    REQUIRE(!t.nodes.empty());
    for (std::size_t i = 1; i < t.pus.size(); ++i) CHECK(t.pus[i - 1].os_index < t.pus[i].os_index);
    for (std::size_t i = 1; i < t.nodes.size(); ++i)
        CHECK(t.nodes[i - 1].os_index < t.nodes[i].os_index);
    std::set<int> cores;
    for (const nugo::topo::Pu& pu : t.pus) {
        CHECK(pu.core >= 0);
        CHECK(pu.core < t.cores);
        cores.insert(pu.core);
        CHECK(pu.node >= -1);
        CHECK(pu.node < static_cast<int>(t.nodes.size()));
    }
    CHECK(static_cast<int>(cores.size()) == t.cores);
    for (int n = 0; n < static_cast<int>(t.nodes.size()); ++n) {
        CHECK(std::is_sorted(t.nodes[n].pus.begin(), t.nodes[n].pus.end()));
        for (int pu : t.nodes[n].pus) CHECK(t.pus.at(pu).node == n);
    }
    REQUIRE(t.distance.size() == t.nodes.size());
    for (std::size_t i = 0; i < t.distance.size(); ++i) {
        REQUIRE(t.distance[i].size() == t.nodes.size());
        CHECK(*std::min_element(t.distance[i].begin(), t.distance[i].end()) == t.distance[i][i]);
    }
    CHECK(!t.distance_source.empty());
    CHECK(!t.real_cpus.empty());
    CHECK(std::is_sorted(t.real_cpus.begin(), t.real_cpus.end()));
}

bool symmetric(const std::vector<std::vector<int>>& m) {
    for (std::size_t i = 0; i < m.size(); ++i)
        for (std::size_t j = 0; j < m.size(); ++j)
            if (m[i][j] != m[j][i]) return false;
    return true;
}

std::vector<int> ps_per_node(const Topology& t, const std::vector<PAssignment>& assignment) {
    std::vector<int> count(t.nodes.size());
    for (const PAssignment& a : assignment) ++count.at(a.node);
    return count;
}

// Ps come out ordered by p, each on a PU of its node, and the Ps of one node are contiguous.
void check_assignment_shape(const Topology& t, const std::vector<PAssignment>& assignment) {
    for (std::size_t i = 0; i < assignment.size(); ++i) {
        CHECK(assignment[i].p == static_cast<int>(i));
        CHECK(t.pus.at(assignment[i].pu).node == assignment[i].node);
        if (i > 0) CHECK(assignment[i - 1].node <= assignment[i].node);
    }
}

// Runs f on a fresh thread so that binding it does not pin the test runner.
template <typename F>
void on_thread(F f) {
    std::thread thread(f);
    thread.join();
}

std::vector<int> current_affinity() {
    cpu_set_t set;
    CPU_ZERO(&set);
    REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
    std::vector<int> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

}  // namespace

TEST_CASE("this machine loads as itself", "[topology]") {
    const Topology t = Topology::load("");
    check_invariants(t);
    CHECK(t.source == "this machine (hwloc)");
    CHECK_FALSE(t.emulated);
    CHECK(t.distance[0][0] >= 10);
    CHECK(t.distance[0][0] <= 20);
    for (int pu = 0; pu < t.pu_count(); ++pu) CHECK(t.real_cpu(pu) == t.pus[pu].os_index);
    for (int n = 0; n < static_cast<int>(t.nodes.size()); ++n)
        CHECK(t.memory_node(n) == t.nodes[n].os_index);
    CHECK_FALSE(t.memory_node(static_cast<int>(t.nodes.size())).has_value());
    CHECK_FALSE(t.memory_node(-1).has_value());
}

TEST_CASE("this machine is the CPUs the process started with, not a pinned thread's", "[topology]") {
    const Topology whole = Topology::load("");
    CHECK(whole.restriction.empty() == (whole.pu_count() >= static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))));
    std::vector<int> every;
    for (const nugo::topo::Pu& pu : whole.pus) every.push_back(pu.os_index);
    CHECK(every == whole.real_cpus);  // the real machine is narrowed to the process's CPUs
    // A thread pinned to one CPU (as nugo binds its Ms, or a program pins a thread to a node
    // before it touches memory) still sees the process's machine: nugo::numa's view of the
    // real machine is loaded lazily, by whichever thread allocates first.
    std::optional<Topology> pinned;
    on_thread([&] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(whole.real_cpus.back(), &set);
        REQUIRE(sched_setaffinity(0, sizeof set, &set) == 0);
        pinned = Topology::load("");
    });
    REQUIRE(pinned);
    CHECK(pinned->real_cpus == whole.real_cpus);
    CHECK(pinned->pu_count() == whole.pu_count());
    CHECK(pinned->nodes.size() == whole.nodes.size());
    CHECK(pinned->restriction == whole.restriction);
}

TEST_CASE("binding pins the calling thread to the PU's real CPU", "[topology]") {
    const Topology t = Topology::load("");
    for (int pu = 0; pu < t.pu_count(); ++pu) {
        if (!std::binary_search(t.real_cpus.begin(), t.real_cpus.end(), t.real_cpu(pu))) continue;
        std::vector<int> pinned;
        on_thread([&] {
            nugo::topo::bind_current_thread_to_pu(t, pu);
            pinned = current_affinity();
        });
        CHECK(pinned == std::vector<int>{t.real_cpu(pu)});
    }
    CHECK_THROWS_AS(nugo::topo::bind_current_thread_to_pu(t, t.pu_count()), std::out_of_range);
}

TEST_CASE("from_env reads NUGO_TOPOLOGY", "[topology]") {
    {
        ScopedEnv env("NUGO_TOPOLOGY", kTwoNodes);
        CHECK(Topology::from_env().source == kTwoNodes);
    }
    {
        ScopedEnv env("NUGO_TOPOLOGY", "");
        CHECK(Topology::from_env().source == "this machine (hwloc)");
    }
}

TEST_CASE("synthetic topologies are emulated", "[topology]") {
    const Topology t = Topology::load(kTwoNodes);
    check_invariants(t);
    CHECK(t.emulated);
    CHECK(t.source == kTwoNodes);
    CHECK(t.packages == 2);
    CHECK(t.cores == 8);
    CHECK(t.pu_count() == 16);
    REQUIRE(t.nodes.size() == 2);
    CHECK(t.nodes[0].pus.size() == 8);
    CHECK(t.nodes[1].pus.size() == 8);
    CHECK(t.nodes[0].package == 0);
    CHECK(t.nodes[1].package == 1);
    CHECK((t.distance_source == "hwloc" || t.distance_source == "default (10 local, 20 remote)"));
    CHECK(symmetric(t.distance));
    CHECK_FALSE(t.memory_node(0).has_value());

    SECTION("PUs are folded onto the real CPUs this process may use") {
        for (int pu = 0; pu < t.pu_count(); ++pu)
            CHECK(std::binary_search(t.real_cpus.begin(), t.real_cpus.end(), t.real_cpu(pu)));
        std::vector<int> pinned;
        on_thread([&] {
            nugo::topo::bind_current_thread_to_pu(t, 15);
            pinned = current_affinity();
        });
        CHECK(pinned == std::vector<int>{t.real_cpu(15)});
    }
    SECTION("a description without NUMA level yields one node holding every PU") {
        const Topology flat = Topology::load("synthetic:pack:2 core:2 pu:2");
        check_invariants(flat);
        REQUIRE(flat.nodes.size() == 1);
        CHECK(flat.nodes[0].pus.size() == 8);
    }
}

TEST_CASE("load errors name NUGO_TOPOLOGY and what was wrong", "[topology]") {
    CHECK_THAT(load_error("xml:/nope/missing.xml"),
               Catch::Contains("NUGO_TOPOLOGY=xml:/nope/missing.xml") &&
                   Catch::Contains("cannot read file: No such file or directory"));
    CHECK_THAT(load_error("xml:"), Catch::Contains("NUGO_TOPOLOGY=xml:"));
    CHECK_THAT(load_error("xml:/tmp"), Catch::Contains("NUGO_TOPOLOGY=xml:/tmp"));
    CHECK_THAT(load_error("synthetic:foo:x"),
               Catch::Contains("NUGO_TOPOLOGY=synthetic:foo:x: malformed hwloc synthetic"));
    CHECK_THAT(load_error("synthetic:"), Catch::Contains("malformed hwloc synthetic description"));
    CHECK_THAT(load_error("bogus"),
               Catch::Contains(R"(NUGO_TOPOLOGY=bogus: expected "synthetic:<description>")"));
    CHECK_THAT(load_error("XML:/x.xml"), Catch::Contains("NUGO_TOPOLOGY=XML:/x.xml"));
}

TEST_CASE("a corrupt XML file is a clean error with either hwloc XML parser", "[topology]") {
    std::vector<std::string> corrupt = {
        "",
        "not xml at all",
        "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\" cpu",
    };
    if (const std::optional<fs::path> dir = shared_topologies()) {
        const std::string whole = read_text(*dir / "xeon-2socket-2node-24pu.xml");
        for (std::size_t cut : {whole.size() / 10, whole.size() / 2, whole.size() - 20})
            corrupt.push_back(whole.substr(0, cut));
    }
    // HWLOC_LIBXML_IMPORT=0 selects hwloc's built-in parser, which is all a machine without
    // the hwloc plugins package has.
    for (const char* use_libxml : {"1", "0"}) {
        ScopedEnv parser("HWLOC_LIBXML_IMPORT", use_libxml);
        for (std::size_t i = 0; i < corrupt.size(); ++i) {
            INFO("HWLOC_LIBXML_IMPORT=" << use_libxml << ", corrupt text #" << i);
            const TempFile file("corrupt-" + std::to_string(i) + ".xml", corrupt[i]);
            CHECK_THAT(load_error(file.spec()),
                       Catch::Contains("NUGO_TOPOLOGY=" + file.spec() +
                                       ": not a valid hwloc XML topology"));
        }
    }
}

TEST_CASE("every reference machine loads with its shape", "[topology][shared]") {
    struct Expected {
        const char* file;
        std::size_t nodes;
        int pus;
        int memory_only;
        bool hwloc_distances;
    };
    const Expected machines[] = {
        {"xeon-2socket-2node-24pu.xml", 2, 24, 0, true},
        {"xeon-2socket-2node-32pu.xml", 2, 32, 0, true},
        {"xeon-4socket-4node-96pu.xml", 4, 96, 0, true},
        {"opteron-8node-16pu-distances.xml", 8, 16, 0, true},
        {"em64t-24node-384pu.xml", 24, 384, 0, true},
        {"intel-irregular-groups-64pu.xml", 8, 64, 0, true},
        {"knl-snc4-hybrid-mcdram-memory-nodes.xml", 8, 64, 4, false},
    };
    const std::optional<fs::path> dir = shared_topologies();
    if (!dir) return;
    for (const Expected& m : machines) {
        INFO(m.file);
        const Topology t = Topology::load("xml:" + (*dir / m.file).string());
        check_invariants(t);
        CHECK(t.emulated);
        CHECK(t.nodes.size() == m.nodes);
        CHECK(t.pu_count() == m.pus);
        CHECK(std::count_if(t.nodes.begin(), t.nodes.end(),
                            [](const auto& n) { return n.pus.empty(); }) == m.memory_only);
        CHECK(t.distance_source ==
              (m.hwloc_distances ? "hwloc" : "default (10 local, 20 remote)"));
        CHECK(symmetric(t.distance));  // all of these sources are
        for (int n = 0; n < static_cast<int>(t.nodes.size()); ++n)
            CHECK_FALSE(t.memory_node(n).has_value());
        for (int pu = 0; pu < t.pu_count(); ++pu)
            CHECK(std::binary_search(t.real_cpus.begin(), t.real_cpus.end(), t.real_cpu(pu)));
    }
    // Files added to topology/machines later must load too.
    for (const fs::directory_entry& entry : fs::directory_iterator(*dir))
        if (entry.path().extension() == ".xml") {
            INFO(entry.path());
            check_invariants(Topology::load("xml:" + entry.path().string()));
        }
}

TEST_CASE("nodes keep OS numbers and hold their own PUs", "[topology][shared]") {
    // The opteron lists node P#1 before P#0; nodes are still sorted by OS index.
    const std::optional<Topology> t = load_shared("opteron-8node-16pu-distances.xml");
    if (!t) return;
    for (int n = 0; n < 8; ++n) CHECK(t->nodes[n].os_index == n);
    std::vector<int> node0;
    for (int pu : t->nodes[0].pus) node0.push_back(t->pus[pu].os_index);
    CHECK(node0 == std::vector<int>{2, 3});

    const std::optional<Topology> xeon = load_shared("xeon-4socket-4node-96pu.xml");
    REQUIRE(xeon);
    CHECK(xeon->packages == 16);
    CHECK(xeon->nodes[0].package == -1);  // the node sits above its four packages

    const std::optional<Topology> knl = load_shared("knl-snc4-hybrid-mcdram-memory-nodes.xml");
    REQUIRE(knl);
    for (int n = 0; n < 8; ++n) CHECK(knl->nodes[n].pus.empty() == (n >= 4));
    CHECK(knl->nodes[7].memory_bytes == 2ULL << 30);
}

TEST_CASE("hwloc distances are mapped from hwloc's order to node positions", "[topology][shared]") {
    const std::optional<fs::path> dir = shared_topologies();
    if (!dir) return;
    // Rewrite the opteron's NUMA matrix (listed in OS order 1 0 2 5 4 3 6 7) so that every
    // entry tells which pair of OS nodes it belongs to: 10 on the diagonal, 100 + 10a + b off it.
    std::string xml = read_text(*dir / "opteron-8node-16pu-distances.xml");
    const std::size_t begin = xml.find("<distances2 type=\"NUMANode\"");
    const std::size_t end = xml.find("</distances2>", begin);
    REQUIRE(begin != std::string::npos);
    const int order[] = {1, 0, 2, 5, 4, 3, 6, 7};
    std::string values;
    for (int a : order)
        for (int b : order) values += std::to_string(a == b ? 10 : 100 + 10 * a + b) + " ";
    const std::string indexes = "1 0 2 5 4 3 6 7 ";
    xml.replace(begin, end - begin,
                "<distances2 type=\"NUMANode\" nbobjs=\"8\" kind=\"5\" name=\"NUMALatency\" "
                "indexing=\"os\">\n<indexes length=\"" + std::to_string(indexes.size()) + "\">" +
                    indexes + "</indexes>\n<u64values length=\"" +
                    std::to_string(values.size()) + "\">" + values + "</u64values>\n");
    const TempFile file("remapped.xml", xml);
    const Topology t = Topology::load(file.spec());
    REQUIRE(t.distance_source == "hwloc");
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
            const int a = t.nodes[i].os_index, b = t.nodes[j].os_index;
            CHECK(t.distance[i][j] == (a == b ? 10 : 100 + 10 * a + b));
        }
}

TEST_CASE("assign_ps balances nodes and fills distinct cores first", "[topology]") {
    const Topology t = Topology::load(kTwoNodes);
    CHECK_THROWS_AS(t.assign_ps(0), std::invalid_argument);
    CHECK_THROWS_AS(t.assign_ps(-3), std::invalid_argument);

    SECTION("one P lands on node 0") {
        const std::vector<PAssignment> a = t.assign_ps(1);
        REQUIRE(a.size() == 1);
        CHECK(a[0].node == 0);
    }
    SECTION("an odd count gives the extra P to the lower node") {
        const std::vector<PAssignment> a = t.assign_ps(3);
        check_assignment_shape(t, a);
        CHECK(ps_per_node(t, a) == std::vector<int>{2, 1});
    }
    SECTION("up to one P per core, every P has a core of its own") {
        const std::vector<PAssignment> a = t.assign_ps(8);
        check_assignment_shape(t, a);
        CHECK(ps_per_node(t, a) == std::vector<int>{4, 4});
        std::set<int> cores;
        for (const PAssignment& p : a) cores.insert(t.pus[p.pu].core);
        CHECK(cores.size() == 8);
    }
}

TEST_CASE("assign_ps on the 2-node 24-PU Xeon", "[topology][shared]") {
    const std::optional<Topology> t = load_shared("xeon-2socket-2node-24pu.xml");
    if (!t) return;
    SECTION("two Ps: one per node") {
        CHECK(ps_per_node(*t, t->assign_ps(2)) == std::vector<int>{1, 1});
    }
    SECTION("24 Ps: 12 per node, distinct cores before SMT siblings") {
        const std::vector<PAssignment> a = t->assign_ps(24);
        check_assignment_shape(*t, a);
        CHECK(ps_per_node(*t, a) == std::vector<int>{12, 12});
        std::set<int> pus;
        for (const PAssignment& p : a) pus.insert(p.pu);
        CHECK(pus.size() == 24);
        for (int node = 0; node < 2; ++node) {
            std::set<int> first_cores;
            for (int i = 0; i < 6; ++i) first_cores.insert(t->pus[a[node * 12 + i].pu].core);
            CHECK(first_cores.size() == 6);
        }
    }
    SECTION("30 Ps: 15 per node, wrapping around the node's PUs in the same order") {
        const std::vector<PAssignment> a = t->assign_ps(30);
        check_assignment_shape(*t, a);
        CHECK(ps_per_node(*t, a) == std::vector<int>{15, 15});
        for (int node = 0; node < 2; ++node)
            for (int i = 12; i < 15; ++i) CHECK(a[node * 15 + i].pu == a[node * 15 + i - 12].pu);
    }
}

TEST_CASE("assign_ps gives memory-only nodes no Ps", "[topology][shared]") {
    const std::optional<Topology> knl = load_shared("knl-snc4-hybrid-mcdram-memory-nodes.xml");
    if (!knl) return;
    for (int procs : {1, 6, 64, 100}) {
        INFO("procs=" << procs);
        const std::vector<PAssignment> a = knl->assign_ps(procs);
        CHECK(a.size() == static_cast<std::size_t>(procs));
        check_assignment_shape(*knl, a);
        const std::vector<int> count = ps_per_node(*knl, a);
        for (int n = 4; n < 8; ++n) CHECK(count[n] == 0);
    }
    CHECK(ps_per_node(*knl, knl->assign_ps(6)) == std::vector<int>{2, 2, 1, 1, 0, 0, 0, 0});
}

// The CPUs (OS indexes) of the nodes with these OS numbers.
std::vector<int> cpus_of_nodes(const Topology& t, const std::set<int>& os_nodes) {
    std::vector<int> cpus;
    for (const nugo::topo::Pu& pu : t.pus)
        if (pu.node >= 0 && os_nodes.count(t.nodes[pu.node].os_index)) cpus.push_back(pu.os_index);
    return cpus;  // ascending: pus are sorted by OS index
}

TEST_CASE("restrict_to_cpus keeps the allowed CPUs, their nodes and their distances", "[topology][shared]") {
    const std::optional<Topology> opteron = load_shared("opteron-8node-16pu-distances.xml");
    if (!opteron) return;
    Topology t = *opteron;
    t.restrict_to_cpus(cpus_of_nodes(t, {2, 5}));  // numactl --cpunodebind=2,5
    check_invariants(t);
    REQUIRE(t.nodes.size() == 2);
    CHECK(t.nodes[0].os_index == 2);
    CHECK(t.nodes[1].os_index == 5);
    CHECK(t.pu_count() == 4);
    CHECK(t.distance == std::vector<std::vector<int>>{{opteron->distance[2][2], opteron->distance[2][5]},
                                                       {opteron->distance[5][2], opteron->distance[5][5]}});
    CHECK(t.restriction == "4 of the machine's 16 CPUs, those this process may run on (taskset, numactl "
                           "--cpunodebind or a cgroup cpuset); without nodes 0, 1, 3, 4, 6, 7, none of "
                           "whose CPUs it may use (their memory it may)");
    CHECK(t.masked_nodes == std::vector<int>{0, 1, 3, 4, 6, 7});
    CHECK(ps_per_node(t, t.assign_ps(4)) == std::vector<int>{2, 2});
    CHECK(t.nodes_by_distance(1) == std::vector<int>{1, 0});

    // Part of a node: the node stays with the CPUs allowed.
    Topology part = *opteron;
    part.restrict_to_cpus({cpus_of_nodes(part, {0})[0]});
    check_invariants(part);
    REQUIRE(part.nodes.size() == 1);
    CHECK(part.nodes[0].pus.size() == 1);
    CHECK_THAT(part.restriction, Catch::StartsWith("1 of the machine's 16 CPUs"));
    CHECK(part.masked_nodes == std::vector<int>{1, 2, 3, 4, 5, 6, 7});
    Topology unsorted = *opteron;  // the CPUs in any order, repeated: the same machine
    std::vector<int> cpus = cpus_of_nodes(unsorted, {2, 5});
    std::reverse(cpus.begin(), cpus.end());
    cpus.push_back(cpus.front());
    unsorted.restrict_to_cpus(cpus);
    CHECK(unsorted.pu_count() == 4);

    // Everything allowed: nothing changes, nothing is said.
    Topology all = *opteron;
    std::vector<int> every;
    for (const nugo::topo::Pu& pu : all.pus) every.push_back(pu.os_index);
    all.restrict_to_cpus(every);
    CHECK(all.pu_count() == opteron->pu_count());
    CHECK(all.nodes.size() == opteron->nodes.size());
    CHECK(all.restriction.empty());
    CHECK(all.masked_nodes.empty());

    // Nothing allowed: an error, never an empty machine.
    Topology none = *opteron;
    CHECK_THROWS_AS(none.restrict_to_cpus({1000}), TopologyError);

    // Memory-only nodes stay: their memory is not the mask's to forbid.
    const std::optional<Topology> knl = load_shared("knl-snc4-hybrid-mcdram-memory-nodes.xml");
    REQUIRE(knl);
    Topology quadrant = *knl;
    quadrant.restrict_to_cpus(cpus_of_nodes(quadrant, {0}));
    check_invariants(quadrant);
    REQUIRE(quadrant.nodes.size() == 5);
    CHECK(quadrant.nodes[0].os_index == 0);
    for (int n = 1; n < 5; ++n) {
        CHECK(quadrant.nodes[n].os_index == n + 3);
        CHECK(quadrant.nodes[n].pus.empty());
    }
    CHECK(ps_per_node(quadrant, quadrant.assign_ps(3)) == std::vector<int>{3, 0, 0, 0, 0});
    CHECK(quadrant.masked_nodes == std::vector<int>{1, 2, 3});
}

// Ps per real CPU, when every emulated PU's thread is bound with real_cpu.
std::map<int, int> ps_per_real_cpu(const Topology& t, int procs) {
    std::map<int, int> count;
    for (int cpu : t.real_cpus) count[cpu] = 0;
    for (const PAssignment& a : t.assign_ps(procs)) ++count.at(t.real_cpu(a.pu));
    return count;
}

void check_evenly_folded(const Topology& t, int procs) {
    INFO(t.source << ", procs=" << procs);
    const std::map<int, int> count = ps_per_real_cpu(t, procs);
    const auto [fewest, most] = std::minmax_element(
        count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    CHECK(most->second - fewest->second <= 1);
}

// Holds for nodes of equal size and at most one P per PU, whatever the number of real CPUs.
TEST_CASE("emulated Ps are spread evenly over the real CPUs", "[topology]") {
    // Folding PU i onto real_cpus[i % n] would put all of these Ps on one CPU of a 2-CPU
    // machine: the Ps take the first, even-numbered, PU of every core.
    for (const char* spec : {kTwoNodes, "synthetic:pack:1 numa:1 core:8 pu:2",
                             "synthetic:pack:4 numa:1 core:3 pu:4"}) {
        const Topology t = Topology::load(spec);
        for (int procs = 1; procs <= t.pu_count(); ++procs) check_evenly_folded(t, procs);
    }
    for (const char* file : {"knl-snc4-hybrid-mcdram-memory-nodes.xml", "em64t-24node-384pu.xml",
                             "xeon-2socket-2node-24pu.xml"}) {
        const std::optional<Topology> t = load_shared(file);
        if (!t) return;
        for (int procs : {2, 3, 6, 16, 24, 30, 64})
            if (procs <= t->pu_count()) check_evenly_folded(*t, procs);
    }
}

TEST_CASE("nodes_by_distance: self first, then nearest, ties by index", "[topology]") {
    const Topology two = Topology::load(kTwoNodes);
    CHECK(two.nodes_by_distance(1) == std::vector<int>{1, 0});
    CHECK_THROWS_AS(two.nodes_by_distance(2), std::out_of_range);

    const std::optional<Topology> big = load_shared("em64t-24node-384pu.xml");
    if (!big) return;
    for (int n = 0; n < 24; ++n) {
        const std::vector<int> order = big->nodes_by_distance(n);
        REQUIRE(order.size() == 24);
        CHECK(order[0] == n);
        CHECK(order[1] == (n ^ 1));  // nodes come in pairs at distance 50
        for (std::size_t k = 2; k < order.size(); ++k) {
            const int before = big->distance[n][order[k - 1]], now = big->distance[n][order[k]];
            CHECK(before <= now);
            if (before == now) CHECK(order[k - 1] < order[k]);
        }
    }
    const std::optional<Topology> knl = load_shared("knl-snc4-hybrid-mcdram-memory-nodes.xml");
    REQUIRE(knl);
    CHECK(knl->nodes_by_distance(2) == std::vector<int>{2, 0, 1, 3});
    CHECK(knl->nodes_by_distance(5) == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("describe reports the machine, the distances and the Ps", "[topology]") {
    const std::string text = Topology::load(kTwoNodes).describe(4);
    CHECK_THAT(text, Catch::Contains(std::string("topology: ") + kTwoNodes));
    CHECK_THAT(text, Catch::Contains("(emulated: threads folded onto"));
    CHECK_THAT(text, Catch::Contains("2 packages, 8 cores, 16 PUs, 2 NUMA nodes"));
    CHECK_THAT(text, Catch::Contains("node 1: package 1,"));
    CHECK_THAT(text, Catch::Contains("PUs 8-15"));
    CHECK_THAT(text, Catch::Contains("P3 -> node 1, PU 10 (real CPU"));

    const std::optional<Topology> knl = load_shared("knl-snc4-hybrid-mcdram-memory-nodes.xml");
    if (!knl) return;
    const std::string report = knl->describe(64);
    CHECK_THAT(report, Catch::Contains("node 0: package 0, 1.0 GiB, PUs 0-3,16-19,32-35,48-51"));
    CHECK_THAT(report, Catch::Contains("node 7: package 0, 2.0 GiB, memory-only"));
    CHECK_THAT(report, Catch::Contains("distances (default (10 local, 20 remote))"));
    CHECK_THAT(report, Catch::Contains("node 3: P48-P63 on PUs 12-15,28-31,44-47,60-63"));
}

#ifdef NUGO_TOPO_BIN
namespace {

struct Run {
    int status;
    std::string output;  // stdout and stderr
};

Run run_tool(const std::string& env, const std::string& args) {
    const std::string command = env + " " NUGO_TOPO_BIN " " + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char chunk[4096];
    while (std::size_t got = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, got);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace

TEST_CASE("nugo-topo prints the report and fails cleanly", "[topology][tool]") {
    const std::string two = std::string("NUGO_TOPOLOGY='") + kTwoNodes + "'";
    Run ok = run_tool(two + " NUGO_PROCS=3", "");
    CHECK(ok.status == 0);
    CHECK_THAT(ok.output, Catch::Contains("P2 -> node 1"));
    CHECK_THAT(run_tool(two, "--procs 20").output, Catch::Contains("node 1: P10-P19"));

    Run bad_spec = run_tool("NUGO_TOPOLOGY=bogus", "");
    CHECK(bad_spec.status == 1);
    CHECK_THAT(bad_spec.output, Catch::StartsWith("nugo-topo: NUGO_TOPOLOGY=bogus: expected"));
    Run bad_procs = run_tool(two + " NUGO_PROCS=zero", "");
    CHECK(bad_procs.status == 1);
    CHECK_THAT(bad_procs.output, Catch::Contains("NUGO_PROCS=zero"));
    CHECK(run_tool(two, "--frobnicate").status == 2);
    CHECK(run_tool(two, "--procs 0").status == 2);
    CHECK(run_tool(two, "--help").status == 0);

    // Under an affinity mask (taskset), the real machine is the CPUs of the mask, and every P is
    // bound within it; an emulated one is folded onto them.
    const Topology whole = Topology::load("");
    if (whole.real_cpus.size() < 2) {
        WARN("one CPU: no narrower affinity mask to try");
        return;
    }
    const std::string last = std::to_string(whole.real_cpus.back());
    Run masked = run_tool("taskset -c " + last + " env -u NUGO_TOPOLOGY", "--procs 2");
    CHECK(masked.status == 0);
    CHECK_THAT(masked.output, Catch::Contains("(restricted: 1 of the machine's"));
    CHECK_THAT(masked.output, Catch::Contains("1 PU, "));
    CHECK_THAT(masked.output, Catch::Contains("P0 -> node 0, PU " + last + " (real CPU " + last + ")"));
    CHECK_THAT(masked.output, Catch::Contains("(real CPU " + last + ")\n  P1"));
    Run folded = run_tool("taskset -c " + last + " env " + two, "--procs 4");
    CHECK(folded.status == 0);
    CHECK_THAT(folded.output, Catch::Contains("folded onto 1 real CPU,"));
}
#endif
