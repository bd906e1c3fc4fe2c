#!/usr/bin/env python3
"""NUMA mode against flat mode on an emulated multi-node machine, in the same run.

usage: scripts/pipeline/numa.py BUILD_DIR OUT_DIR [--quick] [--topology SPEC] [--repetitions N]
                       [--bind node|pu|none]

Runs BUILD/experiments/nugo-bench with NUGO_TOPOLOGY=SPEC (default: the 2-node Xeon of
topology/machines, scripts/pipeline/catalogue.py) and
NUGO_MODE=flat and =numa alternately, N repetitions each (default 5; 1 with --quick),
and writes OUT_DIR/numa.md and numa.json with the medians and the ratio numa/flat.
Both modes run with the same NUGO_BIND (default none), so that the ratio is the
scheduling policy's alone, not thread pinning's.

Locality: BUILD/experiments/nugo-locality then runs `fib N` (N = 27, 22 with --quick) and
`skynet` once per repetition, in each mode, on two emulated machines of their own (the
2-node Xeon with NUGO_PROCS=4 and the 4-node Xeon with NUGO_PROCS=8, catalogue.LOCALITY;
--topology does not change them), each with NUGO_STATS set. From the
statistics the runtime writes it reports where goroutines ran (home node or away), how many
moved across nodes (moved_remote), steals within and across nodes, and idle time per node,
beside the targets: NUMA mode moves at most 10% as many goroutines across nodes as flat
mode, and runs at least 95% of goroutine runs on their home node. The targets are stated,
not enforced. Without nugo-locality (not built) the section is left out, with a note.

EMULATED: the topology's nodes are folded onto this machine's real CPUs and memory is
not bound to them. These numbers measure the scheduler's decisions (where goroutines run,
what is stolen from where), not memory speed, and say so in every table they produce.

Every process is killed after 300 s (PROCESS_TIMEOUT_S), so that a hung runtime fails the
run instead of hanging it.

Exit status: 0 when every run succeeded, 1 when a benchmark run failed (including a
timeout, a wrong result, or a statistics file missing or not as STATS_COUNTERS describes),
2 on bad usage.
"""
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import catalogue  # noqa: E402
from pipeline import explib  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# The list is yield, create-and-run, channel ping-pong (chan_sync), skynet and
# fork-join fib. yield_ping exists only at procs:1, where both modes build the same single
# domain, so its ratio could only measure noise: it is left out.
BENCHMARKS = ["create_and_run/procs:2", "chan_sync/procs:2", "chan_prod_cons0/procs:2",
              "fanout_100k/procs:2", "skynet/procs:2", "fib/procs:2"]
PROCESS_TIMEOUT_S = 300

# Locality: the workloads of nugo-locality, and the n of fib (nugo-bench's kFibN in
# experiments/workloads/forkjoin.hpp; smaller with --quick, for time only).
LOCALITY_FIB_N = 27
LOCALITY_FIB_N_QUICK = 22
MOVED_REMOTE_NUMA_VS_FLAT_MAX = catalogue.LOCALITY_TARGETS["moved_remote_vs_flat"]
RUNS_HOME_MIN = catalogue.LOCALITY_TARGETS["runs_home"]
# The statistics JSON that the runtime writes to NUGO_STATS when run() returns: these counters,
# all integers, in "totals", in every entry of "nodes" (with "node", the OS node number) and of
# "ps"; and "moved_remote_by_distance" ({distance: count}) in "totals" and "nodes".
STATS_COUNTERS = catalogue.STATS_COUNTERS


def usage(msg: str) -> int:
    print(f"numa.py: {msg}\n\n{__doc__}", file=sys.stderr)
    return 2


def default_topology() -> str:
    return catalogue.machine_spec(catalogue.LOCALITY[0][0])


def locality_topologies() -> list[tuple[str, int]]:
    """(NUGO_TOPOLOGY, NUGO_PROCS): two Ps per node, so that a node's Ps can rob each other
    before anyone robs across nodes."""
    return [(catalogue.machine_spec(file), procs) for file, procs in catalogue.LOCALITY]


def topology_label(topology: str) -> str:
    return Path(topology[4:]).stem if topology.startswith("xml:") else topology


def run_process(args: list[str], env: dict,
                shown: str | None = None) -> subprocess.CompletedProcess:
    """Runs args, killed after PROCESS_TIMEOUT_S; shown is the command as errors name it."""
    shown = shown or shlex.join(args)
    try:
        return subprocess.run(args, capture_output=True, text=True, env=env,
                              timeout=PROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"no result after {PROCESS_TIMEOUT_S} s, killed: {shown}")
    except OSError as e:
        raise RuntimeError(f"cannot run {shown}: {e}")


def run_once(exe: Path, topology: str, mode: str, bind: str, min_time: float) -> dict:
    env = dict(os.environ, NUGO_TOPOLOGY=topology, NUGO_MODE=mode, NUGO_BIND=bind)
    pattern = "^(" + "|".join(BENCHMARKS) + ")(/real_time)?$"
    args = [str(exe), "--benchmark_format=json", f"--benchmark_filter={pattern}",
            f"--benchmark_min_time={min_time}"]
    out = run_process(args, env, shlex.join([f"NUGO_TOPOLOGY={topology}", f"NUGO_MODE={mode}",
                                             f"NUGO_BIND={bind}", *args]))
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        raise RuntimeError(f"nugo-bench failed in {mode} mode (exit {out.returncode})")
    try:
        report = json.loads(out.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"nugo-bench printed no JSON in {mode} mode: {out.stderr.strip()}")
    rows = {}
    for b in report.get("benchmarks", []):
        name = b["name"].replace("/real_time", "")
        unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}.get(b.get("time_unit"))
        if unit is None or not b.get("real_time"):
            raise RuntimeError(f"{name}: no usable time in nugo-bench's report ({mode} mode)")
        rows[name] = b["real_time"] * unit
    return rows


def read_stats(path: Path, mode: str, procs: int, command: str) -> dict:
    """The statistics file of one nugo-locality run, checked against the contract."""
    def bad(what: str) -> RuntimeError:
        return RuntimeError(f"{path} (NUGO_STATS of `{command}`): {what}")

    def counters(block: dict, where: str) -> None:
        for key in STATS_COUNTERS:
            if not isinstance(block.get(key), int):
                raise bad(f"{where}.{key} is {block.get(key)!r}, expected an integer")
        by_distance = block.get("moved_remote_by_distance")
        if not isinstance(by_distance, dict) or not all(
                isinstance(v, int) for v in by_distance.values()):
            raise bad(f"{where}.moved_remote_by_distance is {by_distance!r}, expected "
                      "{distance: count}")

    try:
        stats = json.loads(path.read_text())
    except FileNotFoundError:
        raise bad("not written (does the runtime implement NUGO_STATS?)")
    except (OSError, json.JSONDecodeError) as e:
        raise bad(f"not readable JSON ({e})")
    if not isinstance(stats, dict):
        raise bad("not a JSON object")
    # A mode or P count other than asked for means the environment did not reach the
    # runtime, and the comparison would be of something else.
    if stats.get("mode") != mode or stats.get("procs") != procs:
        raise bad(f"mode {stats.get('mode')!r} with {stats.get('procs')!r} Ps, "
                  f"expected {mode!r} with {procs}")
    if not isinstance(stats.get("topology"), dict) or "emulated" not in stats["topology"]:
        raise bad("no topology.emulated")
    if not isinstance(stats.get("totals"), dict):
        raise bad("no totals")
    counters(stats["totals"], "totals")
    if not isinstance(stats.get("nodes"), list) or not stats["nodes"]:
        raise bad("no nodes")
    for i, node in enumerate(stats["nodes"]):
        if not isinstance(node, dict) or not isinstance(node.get("node"), int):
            raise bad(f"nodes[{i}] has no integer node number")
        counters(node, f"nodes[{i}]")
    return stats


def run_locality_once(exe: Path, workload: list[str], topology: str, procs: int, mode: str,
                      bind: str, stats_dir: Path, numa: str = "", virtual: bool = False) -> tuple[float, dict]:
    """(seconds, statistics) of one nugo-locality run; numa: NUGO_NUMA's settings, if any;
    virtual: in virtual time (NUGO_VIRTUAL with catalogue.VIRTUAL_MODEL's constants; exe must be
    the virtual-time build's)."""
    stats_path = stats_dir / "stats.json"
    stats_path.unlink(missing_ok=True)  # a file left by the previous run must not pass
    env = dict(os.environ, NUGO_TOPOLOGY=topology, NUGO_MODE=mode, NUGO_BIND=bind,
               NUGO_PROCS=str(procs), NUGO_STATS=str(stats_path))
    env.pop("NUGO_NUMA", None)
    env.pop("NUGO_VIRTUAL", None)
    settings = [f"NUGO_NUMA={numa}"] if numa else []
    if virtual:
        env["NUGO_VIRTUAL"] = catalogue.virtual_setting()
        settings.append(f"NUGO_VIRTUAL={env['NUGO_VIRTUAL']}")
    if numa:
        env["NUGO_NUMA"] = numa
    args = [str(exe), *workload]
    command = shlex.join([f"NUGO_TOPOLOGY={topology}", f"NUGO_PROCS={procs}", f"NUGO_MODE={mode}",
                          f"NUGO_BIND={bind}", *settings, *args])
    out = run_process(args, env, command)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        raise RuntimeError(f"`{command}` failed (exit {out.returncode})")
    seconds = re.search(r"\bseconds=([0-9.eE+-]+)", out.stdout)
    if not seconds:
        raise RuntimeError(f"`{command}` printed no seconds=: {out.stdout.strip()!r}")
    return float(seconds.group(1)), read_stats(stats_path, mode, procs, command)


def add_counters(into: dict, block: dict) -> None:
    for key in STATS_COUNTERS:
        into[key] = into.get(key, 0) + block[key]
    by_distance = into.setdefault("moved_remote_by_distance", {})
    for distance, count in block["moved_remote_by_distance"].items():
        by_distance[distance] = by_distance.get(distance, 0) + count


def measure_locality(exe: Path, fib_n: int, reps: int, bind: str) -> dict:
    """Counters summed over the repetitions, per (topology, workload, mode)."""
    workloads = {"fib": ["fib", str(fib_n)], "skynet": ["skynet"]}
    cells: dict[tuple[str, str, str], dict] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nugo-numa-") as stats_dir:
        for r in range(reps):
            for topology, procs in locality_topologies():
                for workload, args in workloads.items():
                    for mode in ("flat", "numa"):
                        seconds, stats = run_locality_once(exe, args, topology, procs, mode,
                                                           bind, Path(stats_dir))
                        cell = cells.setdefault((topology, workload, mode), {
                            "topology": topology, "procs": procs, "workload": workload,
                            "mode": mode, "emulated": stats["topology"]["emulated"],
                            "seconds": [], "totals": {}, "nodes": {}})
                        cell["seconds"].append(seconds)
                        add_counters(cell["totals"], stats["totals"])
                        for node in stats["nodes"]:
                            add_counters(cell["nodes"].setdefault(str(node["node"]), {}), node)
            done = r + 1
            left = (time.monotonic() - started) / done * (reps - done)
            print(f"numa.py: locality repetition {done}/{reps} done, about {left:.0f} s left",
                  file=sys.stderr)
    return cells


def fraction(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def locality_rows(cells: dict, reps: int) -> list[dict]:
    rows = []
    for (topology, workload, mode), cell in cells.items():
        t = cell["totals"]
        flat_moved = cells[(topology, workload, "flat")]["totals"]["moved_remote"]
        row = {
            "topology": topology, "procs": cell["procs"], "workload": workload, "mode": mode,
            "emulated": cell["emulated"], "runs_per_run": t["runs"] / reps,
            "runs_away_fraction": fraction(t["runs_away"], t["runs"]),
            "runs_home_fraction": fraction(t["runs_home"], t["runs"]),
            "moved_remote_per_run": t["moved_remote"] / reps,
            "moved_remote_numa_vs_flat": (fraction(t["moved_remote"], flat_moved)
                                          if mode == "numa" else None),
            "steals_same_node_per_run": t["steals_same_node"] / reps,
            "steals_remote_per_run": t["steals_remote"] / reps,
            "idle_seconds_per_node_per_run": {node: c["idle_ns"] / 1e9 / reps
                                              for node, c in sorted(cell["nodes"].items(),
                                                                    key=lambda n: int(n[0]))},
            "seconds_median": statistics.median(cell["seconds"]),
            "seconds": cell["seconds"], "totals": t, "nodes": cell["nodes"],
        }
        if mode == "numa":
            ratio, home = row["moved_remote_numa_vs_flat"], row["runs_home_fraction"]
            row["moved_remote_target_met"] = (None if ratio is None
                                              else ratio <= MOVED_REMOTE_NUMA_VS_FLAT_MAX)
            row["runs_home_target_met"] = None if home is None else home >= RUNS_HOME_MIN
        rows.append(row)
    return rows


def locality_markdown(rows: list[dict], fib_n: int, reps: int, bind: str) -> list[str]:
    def count(v: float) -> str:
        return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"

    def share(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f}%"

    def verdict(met: bool | None) -> str:
        return "" if met is None else (" (met)" if met else " (missed)")

    emulated = all(row["emulated"] for row in rows)
    lines = ["", "## Locality" + (" (EMULATED topologies)" if emulated else ""), "",
             f"`nugo-locality fib {fib_n}` and `nugo-locality skynet`, each run once per "
             f"repetition in each mode ({reps} repetition(s)), with NUGO_BIND={bind} and the "
             "runtime's statistics (NUGO_STATS). Counts and idle seconds are means per run; "
             "fractions and ratios are of the sums over all runs. An EMULATED topology's "
             "nodes are folded onto this machine's real CPUs: this counts the scheduler's "
             "decisions, not memory speed.",
             "",
             "- runs away / runs: goroutine runs away from the goroutine's home node.",
             "- moved remote: goroutines moved across nodes by steals and by takes from "
             "another node's global queue.",
             f"- Targets (stated, not enforced; NUMA mode): moved remote numa/flat <= "
             f"{MOVED_REMOTE_NUMA_VS_FLAT_MAX:.2f}x, runs home >= {100 * RUNS_HOME_MIN:.0f}%.",
             "",
             "| topology | workload | mode | runs | runs away / runs | runs home / runs "
             f"(target >= {100 * RUNS_HOME_MIN:.0f}%) | moved remote | moved remote numa/flat "
             f"(target <= {MOVED_REMOTE_NUMA_VS_FLAT_MAX:.2f}x) | steals same node | "
             "steals remote | idle s per node | seconds (median) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for row in rows:
        label = f"{topology_label(row['topology'])}, {row['procs']} Ps" + (
            " (EMULATED)" if row["emulated"] else "")
        ratio = row["moved_remote_numa_vs_flat"]
        ratio_cell = "-" if row["mode"] == "flat" else (
            "- (flat moved none)" if ratio is None else
            f"{ratio:.3f}x{verdict(row.get('moved_remote_target_met'))}")
        home_cell = share(row["runs_home_fraction"]) + verdict(row.get("runs_home_target_met"))
        idle = ", ".join(f"{node}: {s:.4f}"
                         for node, s in row["idle_seconds_per_node_per_run"].items())
        lines.append(
            f"| {label} | {row['workload']} | {row['mode']} | {count(row['runs_per_run'])} | "
            f"{share(row['runs_away_fraction'])} | {home_cell} | "
            f"{count(row['moved_remote_per_run'])} | {ratio_cell} | "
            f"{count(row['steals_same_node_per_run'])} | {count(row['steals_remote_per_run'])} | "
            f"{idle} | {row['seconds_median']:.3f} |")
    return lines


def main() -> int:
    argv = sys.argv[1:]
    quick = "--quick" in argv
    argv = [a for a in argv if a != "--quick"]
    topology, reps, bind = default_topology(), None, "none"
    positional = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--topology", "--repetitions", "--bind"):
            if i + 1 == len(argv):
                return usage(f"{argv[i]} needs a value")
            if argv[i] == "--topology":
                topology = argv[i + 1]
            elif argv[i] == "--bind":
                bind = argv[i + 1]
                if bind not in ("node", "pu", "none"):
                    return usage(f"--bind {bind!r}: expected node, pu or none")
            else:
                try:
                    reps = int(argv[i + 1])
                except ValueError:
                    return usage(f"--repetitions {argv[i + 1]!r}: expected a whole number")
                if reps < 1:
                    return usage(f"--repetitions {reps}: expected at least 1")
            i += 2
        elif argv[i].startswith("-"):
            return usage(f"unknown option {argv[i]!r}")
        else:
            positional.append(argv[i])
            i += 1
    if len(positional) != 2:
        return usage("expected BUILD_DIR and OUT_DIR")
    build, out_dir = Path(positional[0]), Path(positional[1])
    exe = build / "experiments" / "nugo-bench"
    if not exe.exists():
        print(f"numa.py: {exe} not found (build with NUGO_BUILD_EXPERIMENTS=ON)", file=sys.stderr)
        return 1
    reps = reps or (1 if quick else 5)
    min_time = 0.1 if quick else 0.3

    samples = {m: {} for m in ("flat", "numa")}
    started = time.monotonic()
    for r in range(reps):
        for mode in ("flat", "numa"):
            try:
                rows = run_once(exe, topology, mode, bind, min_time)
            except RuntimeError as e:
                print(f"numa.py: {e}", file=sys.stderr)
                return 1
            for name, ns in rows.items():
                samples[mode].setdefault(name, []).append(ns)
        done = r + 1
        left = (time.monotonic() - started) / done * (reps - done)
        print(f"numa.py: repetition {done}/{reps} done, about {left:.0f} s left", file=sys.stderr)

    # nugo emulates every xml: and synthetic: topology (topology/README.md).
    emulated = topology.startswith(("xml:", "synthetic:"))
    command = "python3 scripts/pipeline/numa.py BUILD OUT" + " ".join(
        [""] + (["--quick"] if quick else []) + [f"--repetitions {reps}", f"--bind {bind}",
                                                 f"--topology '{topology}'"])
    what = ("EMULATED topology: its nodes are folded onto this machine's real CPUs and memory "
            "is not bound, so this measures the scheduler's decisions, not memory speed."
            if emulated else "this machine's own topology.")
    lines = [f"# NUMA mode against flat mode ({'EMULATED topology' if emulated else 'real topology'})",
             "", f"Topology `{topology}`: {what} Both modes with NUGO_BIND={bind}. Same run, "
             f"modes alternating; medians of {reps} repetition(s). Command: `{command}`.", "",
             "| benchmark (2 Ps) | flat | numa | numa / flat |", "|---|---|---|---|"]
    result = {"emulated": emulated, "topology": topology, "bind": bind, "repetitions": reps,
              "command": command, "benchmarks": {}}
    for name in BENCHMARKS:
        if name not in samples["flat"] or name not in samples["numa"]:
            lines.append(f"| {name} | - | - | - |")
            continue
        f = statistics.median(samples["flat"][name])
        n = statistics.median(samples["numa"][name])
        result["benchmarks"][name] = {"flat_ns": f, "numa_ns": n, "ratio": n / f,
                                      "flat_samples": samples["flat"][name],
                                      "numa_samples": samples["numa"][name]}

        def fmt(ns: float) -> str:
            return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns:.1f} ns"
        lines.append(f"| {name} | {fmt(f)} | {fmt(n)} | {n / f:.2f}x |")
    if not result["benchmarks"]:
        print("numa.py: nugo-bench ran none of " + ", ".join(BENCHMARKS), file=sys.stderr)
        return 1

    locality_exe = build / "experiments" / "nugo-locality"
    fib_n = LOCALITY_FIB_N_QUICK if quick else LOCALITY_FIB_N
    if locality_exe.exists():
        try:
            cells = measure_locality(locality_exe, fib_n, reps, bind)
        except RuntimeError as e:
            print(f"numa.py: {e}", file=sys.stderr)
            return 1
        rows = locality_rows(cells, reps)
        lines += locality_markdown(rows, fib_n, reps, bind)
        result["locality"] = {
            "fib_n": fib_n, "repetitions": reps, "bind": bind,
            "targets": {"moved_remote_numa_vs_flat_max": MOVED_REMOTE_NUMA_VS_FLAT_MAX,
                        "runs_home_min": RUNS_HOME_MIN, "enforced": False},
            "rows": rows}
    else:
        # A separate target, which a build of nugo-bench alone does not make: the benchmark
        # comparison above stands without it.
        note = f"Locality section left out: {locality_exe} not built (target nugo-locality)."
        print(f"numa.py: {note}", file=sys.stderr)
        lines += ["", "## Locality", "", note]
        result["locality"] = {"skipped": note}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "numa.md").write_text("\n".join(lines) + "\n")
    explib.write_json(out_dir / "numa.json", result,
                      {"quick": quick, "repetitions": reps, "bind": bind, "benchmarks": BENCHMARKS,
                       "process_timeout_s": PROCESS_TIMEOUT_S},
                      [explib.quote(["scripts/pipeline/numa.py"] + sys.argv[1:])])
    print("\n".join(lines))
    print(f"\nwrote {out_dir / 'numa.md'} and {out_dir / 'numa.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
