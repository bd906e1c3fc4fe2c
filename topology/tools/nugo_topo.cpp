// nugo-topo: shows the topology a nugo program would see (NUGO_TOPOLOGY) and where its Ps
// (NUGO_PROCS or --procs) would be placed, without starting a runtime.

#include <nugo/topology.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view kUsage =
    "usage: nugo-topo [--procs N] [--help]\n"
    "Prints the topology nugo would use and where its Ps would run.\n"
    "  --procs N  number of Ps to place (default: NUGO_PROCS, else one per PU)\n"
    "environment:\n"
    "  NUGO_TOPOLOGY  unset: this machine; synthetic:<hwloc description>; xml:<path>\n"
    "  NUGO_PROCS     default number of Ps\n";

std::optional<int> positive_int(std::string_view text) {
    if (text.empty() || text.size() > 9) return std::nullopt;
    int value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + (c - '0');
    }
    if (value < 1) return std::nullopt;
    return value;
}

[[noreturn]] void usage_error(const std::string& what) {
    std::cerr << "nugo-topo: " << what << '\n' << kUsage;
    std::exit(2);
}

int procs_from_env(const nugo::topo::Topology& topology) {
    const char* text = std::getenv("NUGO_PROCS");
    if (text == nullptr) return topology.pu_count();
    if (std::optional<int> procs = positive_int(text)) return *procs;
    throw std::runtime_error("NUGO_PROCS=" + std::string(text) + ": expected a positive integer");
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<int> procs;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (arg != "--procs") usage_error("unknown argument: " + std::string(arg));
        if (i + 1 == argc) usage_error("--procs needs a value");
        procs = positive_int(argv[++i]);
        if (!procs)
            usage_error("--procs " + std::string(argv[i]) + ": expected a positive integer");
    }
    try {
        const nugo::topo::Topology topology = nugo::topo::Topology::from_env();
        std::cout << topology.describe(procs ? *procs : procs_from_env(topology));
    } catch (const std::exception& e) {
        std::cerr << "nugo-topo: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
