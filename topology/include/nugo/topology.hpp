// What the machine looks like to the scheduler: packages, cores, PUs (hardware threads), NUMA
// nodes and the distances between them, discovered once with hwloc at runtime start.
//
// The same description can come from the real machine or be emulated from an hwloc XML file or
// an hwloc synthetic string (NUGO_TOPOLOGY), so that the NUMA scheduler can be exercised on a
// one-node machine. An emulated topology never touches hardware that does not exist: its PUs are
// folded onto the CPUs this process may run on, and memory is never bound to its nodes.
//
// A Topology is a plain value. load() is slow (it walks /sys) and belongs at runtime start;
// every other member is const, allocation-light and safe to call from any thread.
// See topology/README.md for the design.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nugo::topo {

// A processing unit (hardware thread).
struct Pu {
    int os_index;  // the kernel's CPU number
    int core;      // dense core number within this topology: PUs of one core share it
    int node;      // index into Topology::nodes (not an OS index), -1 if no node holds it
};

struct Node {
    int os_index;                // the kernel's NUMA node number
    std::vector<int> pus;        // indexes into Topology::pus, ascending; empty: memory-only node
    std::uint64_t memory_bytes;  // local memory
    int package;                 // package holding the node, -1 unknown
};

// Where scheduler P number `p` lives.
struct PAssignment {
    int p;
    int node;  // index into Topology::nodes
    int pu;    // index into Topology::pus
};

// Every message names NUGO_TOPOLOGY and what was wrong with it.
class TopologyError : public std::runtime_error {
    using runtime_error::runtime_error;
};

struct Topology {
    std::string source;  // "this machine (hwloc)", "xml:<path>", "synthetic:<desc>"
    bool emulated = false;  // true for xml: and synthetic:
    int packages = 0;
    int cores = 0;
    std::vector<Pu> pus;      // sorted by os_index
    std::vector<Node> nodes;  // sorted by os_index; includes memory-only nodes
    std::vector<std::vector<int>> distance;  // nodes.size() squared, by position in nodes
    std::string distance_source;  // "hwloc", "libnuma", or "default (10 local, 20 remote)"
    // CPUs this process may run on, ascending: its affinity mask as the process started (read
    // before main), not the calling thread's mask of the moment, which binding may have narrowed.
    std::vector<int> real_cpus;
    // How the real machine was narrowed to the CPUs this process may use (an affinity mask
    // from taskset or numactl, a cgroup cpuset); "" when it may use the whole machine.
    std::string restriction;
    // OS numbers of the nodes restrict_to_cpus dropped, ascending: none of their CPUs is this
    // process's, but a mask does not forbid their memory (nugo::numa may still put it there).
    std::vector<int> masked_nodes;

    // "" = this machine; "synthetic:<hwloc synthetic description>"; "xml:<path>".
    static Topology load(std::string_view spec);
    // load(getenv("NUGO_TOPOLOGY") or "").
    static Topology from_env();

    int pu_count() const;
    // The real CPU that runs PU index `pu`: its own os_index on the real machine. Emulated PUs
    // are folded onto real_cpus round-robin, in the order assign_ps fills PUs (see README).
    int real_cpu(int pu) const;
    // The OS node to bind memory of node index `node` to; nullopt when emulated or no such node.
    std::optional<int> memory_node(int node) const;
    // Places procs >= 1 Ps: balanced over CPU-bearing nodes, distinct cores before SMT
    // siblings, ordered by p, the Ps of one node contiguous. Throws std::invalid_argument.
    std::vector<PAssignment> assign_ps(int procs) const;
    // All CPU-bearing nodes, nearest first (self first), ties by index.
    std::vector<int> nodes_by_distance(int node) const;
    // Multi-line human report (nugo-topo prints it).
    std::string describe(int procs) const;
    // Keeps only the PUs whose OS index is in `cpus` and the nodes that still hold one, plus
    // the memory-only nodes; the distance matrix keeps their rows and columns, and the nodes
    // dropped are listed in masked_nodes. load()
    // applies it to the real machine with real_cpus, so that a process under taskset, numactl
    // --cpunodebind or a cgroup cpuset never places a P outside its CPUs. Sets `restriction`
    // when anything was dropped. Throws TopologyError when no PU would be left.
    void restrict_to_cpus(std::vector<int> cpus);
};

// Pins the calling thread to real_cpu(pu). Throws TopologyError with the errno text.
void bind_current_thread_to_pu(const Topology& topology, int pu);

}  // namespace nugo::topo
