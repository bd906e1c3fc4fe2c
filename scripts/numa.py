#!/usr/bin/env python3
"""NUMA mode against flat mode on an emulated multi-node machine, in the same run.

usage: scripts/numa.py BUILD_DIR OUT_DIR [--quick] [--topology SPEC] [--repetitions N]
                       [--bind node|pu|none]

Runs BUILD/experiments/nugo-bench with NUGO_TOPOLOGY=SPEC (default: the 2-node Xeon of
../shared/topologies, or a synthetic 2-node machine when shared/ is absent) and
NUGO_MODE=flat and =numa alternately, N repetitions each (default 5; 1 with --quick),
and writes OUT_DIR/numa.md and numa.json with the medians and the ratio numa/flat.
Both modes run with the same NUGO_BIND (default none), so that the ratio is the
scheduling policy's alone, not thread pinning's.

EMULATED: the topology's nodes are folded onto this machine's real CPUs and memory is
not bound to them. These numbers measure the scheduler's decisions (where goroutines run,
what is stolen from where), not memory speed, and say so in every table they produce.

Exit status: 0 when every run succeeded, 1 when a benchmark run failed, 2 on bad usage.
"""
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ["create_and_run/procs:2", "chan_sync/procs:2", "chan_prod_cons0/procs:2",
              "fanout_100k/procs:2", "skynet/procs:2"]


def usage(msg: str) -> int:
    print(f"numa.py: {msg}\n\n{__doc__}", file=sys.stderr)
    return 2


def default_topology() -> str:
    xml = ROOT.parent / "shared" / "topologies" / "xeon-2socket-2node-24pu.xml"
    return f"xml:{xml}" if xml.exists() else "synthetic:pack:2 numa:1 core:6 pu:2"


def run_once(exe: Path, topology: str, mode: str, bind: str, min_time: float) -> dict:
    env = dict(os.environ, NUGO_TOPOLOGY=topology, NUGO_MODE=mode, NUGO_BIND=bind)
    pattern = "^(" + "|".join(BENCHMARKS) + ")(/real_time)?$"
    args = [str(exe), "--benchmark_format=json", f"--benchmark_filter={pattern}",
            f"--benchmark_min_time={min_time}"]
    try:
        out = subprocess.run(args, capture_output=True, text=True, env=env)
    except OSError as e:
        raise RuntimeError(f"cannot run {exe}: {e}")
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
    command = "python3 scripts/numa.py BUILD OUT" + " ".join(
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
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "numa.md").write_text("\n".join(lines) + "\n")
    (out_dir / "numa.json").write_text(json.dumps(result, indent=1))
    print("\n".join(lines))
    print(f"\nwrote {out_dir / 'numa.md'} and {out_dir / 'numa.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
