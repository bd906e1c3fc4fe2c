#!/usr/bin/env python3
"""NUMA mode's policies (NUGO_NUMA) measured against each other and against flat mode.

usage: scripts/pipeline/numa_policies.py BUILD_DIR OUT_DIR [--quick] [--repetitions N] [--virtual]

For each setting of NUGO_NUMA in SETTINGS (the defaults first, then one policy changed at a
time) runs BUILD/experiments/nugo-locality (fork-join fib and skynet) in NUMA mode on the
two emulated machines of scripts/pipeline/numa.py's locality section (2 nodes x 2 Ps, 4 nodes x 2 Ps),
and flat mode once per repetition as the reference, with NUGO_BIND=none and NUGO_STATS. Writes
OUT_DIR/policies.md and policies.json: per setting, the share of runs on the home node,
goroutines moved across nodes against flat mode, idle time, and the median time against
flat mode. numa/README.md ("Policies") chooses the defaults from this table.

EMULATED: the nodes are folded onto this machine's real CPUs and memory is not bound. The
counters are the scheduler's decisions; the times say what a policy costs in scheduling
(spinning, waking), not what it saves in memory traffic, which only real hardware or the
latency model of the experiments can show.

--virtual: the same settings on machines of realistic size, in VIRTUAL TIME (BUILD_DIR must be
the virtual-time build, -DNUGO_VIRTUAL_TIME=ON): the 2-socket Xeon of 32 CPUs and the 4-socket
Xeon of 96 (sweep.py's v2x16 and v4x24), one P per CPU, NUGO_VIRTUAL=on. The Ps are not folded:
each runs alone in the order of virtual clocks, and the times are virtual, with the cost
model's charges for cache lines moved by node distance (core/src/vtime/README.md). Writes
OUT_DIR/policies-virtual.md and policies-virtual.json.

Exit status: 0 when every run succeeded, 1 when a run failed, 2 on bad usage.
"""
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402
from pipeline import catalogue  # noqa: E402
from pipeline import numa  # noqa: E402  (the locality runner and its topologies)

SETTINGS = [
    "",  # the defaults: remote_delay=0, remote_take=half, ready=waker, adopt=0
    "remote_delay=20us", "remote_delay=200us",
    "remote_take=quarter", "remote_take=1",
    "ready=home", "adopt=1",
]


def usage(msg: str) -> int:
    print(f"numa_policies.py: {msg}\n\n{__doc__}", file=sys.stderr)
    return 2


def main() -> int:
    argv = sys.argv[1:]
    quick = "--quick" in argv
    virtual = "--virtual" in argv
    argv = [a for a in argv if a not in ("--quick", "--virtual")]
    reps = None
    if "--repetitions" in argv:
        i = argv.index("--repetitions")
        try:
            reps = int(argv[i + 1])
        except (IndexError, ValueError):
            return usage("--repetitions needs a whole number")
        if reps < 1:
            return usage("--repetitions: expected at least 1")
        del argv[i:i + 2]
    if len(argv) != 2 or any(a.startswith("-") for a in argv):
        return usage("expected BUILD_DIR and OUT_DIR")
    build, out_dir = Path(argv[0]), Path(argv[1])
    exe = build / "experiments" / "nugo-locality"
    if not exe.exists():
        print(f"numa_policies.py: {exe} not found (build target nugo-locality)", file=sys.stderr)
        return 1
    if virtual and not explib.is_virtual_build(build):
        return usage(f"--virtual: {build} is not a virtual-time build (-DNUGO_VIRTUAL_TIME=ON; "
                     "scripts/test.sh --virtual makes build-virtual)")
    topologies = numa.locality_topologies()
    if virtual:
        topologies = [(catalogue.machine_spec(catalogue.VIRTUAL[name].file), procs)
                      for name, procs in catalogue.POLICIES_VIRTUAL]
    kind = "VIRTUAL" if virtual else "EMULATED"
    stem = "policies-virtual" if virtual else "policies"
    reps = reps or (1 if quick else 3)
    fib_n = numa.LOCALITY_FIB_N_QUICK if quick else numa.LOCALITY_FIB_N
    workloads = {"fib": ["fib", str(fib_n)], "skynet": ["skynet"]}
    configs = [("flat", "")] + [("numa", s) for s in SETTINGS]
    cells: dict = {}
    total = reps * len(topologies) * len(workloads) * len(configs)
    done, started = 0, time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nugo-policies-") as tmp:
        for _ in range(reps):
            for topology, procs in topologies:
                for workload, args in workloads.items():
                    for mode, setting in configs:
                        try:
                            seconds, stats = numa.run_locality_once(
                                exe, args, topology, procs, mode, "none", Path(tmp), setting, virtual)
                        except RuntimeError as e:
                            print(f"numa_policies.py: {e}", file=sys.stderr)
                            return 1
                        cell = cells.setdefault((topology, workload, mode, setting), {
                            "seconds": [], "totals": {}, "emulated": stats["topology"]["emulated"]})
                        cell["seconds"].append(seconds)
                        numa.add_counters(cell["totals"], stats["totals"])
                        done += 1
                        left = (time.monotonic() - started) / done * (total - done)
                        print(f"numa_policies.py: run {done}/{total}, about {left:.0f} s left",
                              file=sys.stderr)
    emulated = all(c["emulated"] for c in cells.values())
    command = "python3 scripts/pipeline/numa_policies.py BUILD OUT" + (" --quick" if quick else "") + \
        f" --repetitions {reps}" + (" --virtual" if virtual else "")
    said = ("VIRTUAL TIME: one P per CPU of each machine, each P's thread alone in the order of "
            "virtual clocks (not folded), times virtual, with the cost model's charges; a projection, "
            "not hardware." if virtual else
            "EMULATED: nodes folded onto this machine's CPUs, memory not bound: scheduler decisions, "
            "not memory speed.")
    lines = [f"# NUMA policies ({kind} topologies)" if emulated else "# NUMA policies (real topology)", "",
             f"`nugo-locality fib {fib_n}` and `skynet`, NUGO_BIND=none, {reps} repetition(s); "
             f"counts are sums over the repetitions, times medians with the ratio's interval from the "
             f"ends of the two medians' 95% bootstrap intervals (overlapping 1: no difference). {said} "
             f"Command: `{command}`.", "",
             "| topology | workload | NUGO_NUMA | runs home | moved remote | vs flat | "
             "steals remote | cross-node wake-ups | idle s | time vs flat |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = []
    for (topology, workload, mode, setting), cell in cells.items():
        if mode == "flat":
            continue
        flat = cells[(topology, workload, "flat", "")]
        t, ft = cell["totals"], flat["totals"]
        row = {"topology": topology, "workload": workload, "numa": setting or "(defaults)",
               "runs_home_fraction": numa.fraction(t["runs_home"], t["runs"]),
               "moved_remote": t["moved_remote"], "flat_moved_remote": ft["moved_remote"],
               "moved_remote_vs_flat": numa.fraction(t["moved_remote"], ft["moved_remote"]),
               "steals_remote": t["steals_remote"], "wakeups_cross_node": t["wakeups_cross_node"],
               "idle_s": t["idle_ns"] / 1e9,
               "seconds_median": statistics.median(cell["seconds"]),
               "flat_seconds_median": statistics.median(flat["seconds"]), "totals": t}
        row["time_vs_flat"] = row["seconds_median"] / row["flat_seconds_median"]
        # the interval of the ratio, from the ends of the two medians' 95% bootstrap intervals
        _, lo, hi = explib.ratio_interval(explib.spread(cell["seconds"]), explib.spread(flat["seconds"]))
        row["time_vs_flat_ci95"] = [lo, hi]
        rows.append(row)
        vs = "-" if row["moved_remote_vs_flat"] is None else f"{row['moved_remote_vs_flat']:.3f}x"
        lines.append(f"| {numa.topology_label(topology)} ({kind}) | {workload} | {row['numa']} | "
                     f"{100 * row['runs_home_fraction']:.1f}% | {row['moved_remote']:,} | {vs} | "
                     f"{row['steals_remote']:,} | {row['wakeups_cross_node']:,} | "
                     f"{row['idle_s']:.3f} | {row['time_vs_flat']:.2f}x ({lo:.2f}-{hi:.2f}) |")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (out_dir / f"{stem}.json").write_text(json.dumps(
        {"emulated": emulated, "clock": "virtual" if virtual else "real", "command": command,
         "repetitions": reps, "fib_n": fib_n, "settings": SETTINGS, "rows": rows}, indent=1))
    print("\n".join(lines))
    print(f"\nwrote {out_dir / f'{stem}.md'} and {out_dir / f'{stem}.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
