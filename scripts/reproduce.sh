#!/usr/bin/env bash
# The main job: build nugo (Release) with its baselines, run the micro-benchmarks beside their
# Go 1.19 and Boost.Fiber twins in one go, and print the comparison table with ratios.
#   scripts/reproduce.sh           full run (5 repetitions, medians; a few minutes)
#   scripts/reproduce.sh --quick   one short repetition of everything (a smoke test)
# Results: results/micro/ (micro.md, micro.json), results/preempt/, results/net/, and
# results/numa/ (NUMA mode against flat mode on emulated 2- and 4-node machines, with the
# locality statistics, and the NUGO_NUMA policies against each other: scheduler decisions,
# not memory speed), and results/trace/ (what the execution tracer costs, and a timeline of a
# fork-join run, flat beside NUMA mode, on the emulated 2-node machine). Later issues grow
# this into the paper's experiment pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: scripts/reproduce.sh [--quick]" >&2; exit 2; }

quick=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=(--quick) ;;
    -h|--help) usage ;;
    *) echo "reproduce.sh: unknown argument '$arg'" >&2; usage ;;
  esac
done

bash scripts/bootstrap.sh --baselines

build=build-release
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNUGO_BUILD_TESTS=OFF
cmake --build "$build" -j "$(nproc)" --target nugo-bench nugo-locality nugo-preempt-bench nugo-floor nugo-http nugo-echo fiber-bench nugo-topo

echo
"$build/topology/nugo-topo" | head -n 20
echo
python3 scripts/micro.py --build-dir "$build" --out results/micro "${quick[@]}"
echo
python3 scripts/preempt.py "$build" results/preempt "${quick[@]}"
echo
python3 scripts/net.py "$build" results/net "${quick[@]}"
echo
python3 scripts/numa.py "$build" results/numa "${quick[@]}"
echo
python3 scripts/numa_policies.py "$build" results/numa "${quick[@]}"
echo
python3 scripts/tracer.py "$build" results/trace "${quick[@]}"
