#!/usr/bin/env python3
"""Before/after: every nugo-bench benchmark from two builds, interleaved, in one table.

usage: scripts/pipeline/ab.py BEFORE_BUILD AFTER_BUILD OUT_DIR [--repetitions R] [--min-time S]
                     [--filter REGEX] [--preempt]

Runs BEFORE_BUILD/experiments/nugo-bench and AFTER_BUILD/experiments/nugo-bench in turn,
R rounds (default 3), each run a process of its own with --benchmark_min_time=S (default
0.3), so that drift on a noisy machine hits both sides alike. With --preempt it does the
same for nugo-preempt-bench's latency benchmarks. Writes OUT_DIR/ab.md (median, range over
rounds, after/before ratio per benchmark and metric) and OUT_DIR/ab.json (every sample, the
commands, the settings). A ratio below 1 is an improvement for times and latencies.

For example, to compare a change against the commit before it (Release builds of both):
  scripts/pipeline/ab.py /tmp/before/build build-release results/ab

Exit status: 0 when both sides ran, 1 when a run failed or timed out, 2 on bad usage.
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT_S = 1800
# Counters worth comparing, besides real time (the rest are descriptive).
METRICS = ("p50_us", "p99_us", "cpu_cores", "ns_per_sleep", "peak_rss_mib", "other_cores")


def run_bench(exe: Path, flt: str | None, min_time: float) -> dict[str, dict[str, float]]:
    cmd = [str(exe), "--benchmark_format=json", f"--benchmark_min_time={min_time}"]
    if flt:
        cmd.append(f"--benchmark_filter={flt}")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"ab.py: timed out after {TIMEOUT_S} s: {' '.join(cmd)}")
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit(f"ab.py: {' '.join(cmd)} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    rows = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("error_occurred"):
            sys.exit(f"ab.py: {b['name']} failed in {exe}: {b.get('error_message')}")
        name = re.sub(r"/(real_time|iterations:\d+)", "", b["name"])
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        rows[name] = {"ns": b["real_time"] * scale} | {m: b[m] for m in METRICS if m in b}
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.3)
    parser.add_argument("--filter")
    parser.add_argument("--preempt", action="store_true")
    args = parser.parse_args()
    if args.repetitions < 1 or args.min_time <= 0:
        parser.error("--repetitions must be >= 1 and --min-time > 0")
    binaries = [("nugo-bench", args.filter)]
    if args.preempt:
        binaries.append(("nugo-preempt-bench", "^preempt_latency"))
    for side in (args.before, args.after):
        for exe, _ in binaries:
            if not (side / "experiments" / exe).exists():
                print(f"ab.py: {side / 'experiments' / exe} not found", file=sys.stderr)
                return 2

    samples: dict[str, dict[str, dict[str, list[float]]]] = {"before": {}, "after": {}}
    started = time.monotonic()
    total = args.repetitions * 2 * len(binaries)
    done = 0
    for r in range(args.repetitions):
        for side, build in (("before", args.before), ("after", args.after)):
            for exe, flt in binaries:
                elapsed = time.monotonic() - started
                left = f", about {elapsed / done * (total - done):.0f} s left" if done else ""
                print(f"[{elapsed:5.0f} s] round {r + 1}/{args.repetitions}: {side} {exe}{left}",
                      file=sys.stderr, flush=True)
                for name, values in run_bench(build / "experiments" / exe, flt, args.min_time).items():
                    for key, v in values.items():
                        samples[side].setdefault(name, {}).setdefault(key, []).append(v)
                done += 1

    lines = ["# Before / after", "",
             f"`scripts/pipeline/ab.py {args.before} {args.after} {args.out}` — {args.repetitions} "
             f"interleaved rounds, --benchmark_min_time={args.min_time}; median (min to max). "
             "Ratio: after / before (below 1 is better for times and latencies).", "",
             "| benchmark | metric | before | after | after / before |", "|---|---|---|---|---|"]

    def fmt(vs):
        return f"{statistics.median(vs):.4g} ({min(vs):.4g} to {max(vs):.4g})"
    for name in samples["after"]:
        for key in samples["after"][name]:
            a = samples["after"][name][key]
            b = samples["before"].get(name, {}).get(key)
            unit = "ns" if key == "ns" else key
            if not b:
                lines.append(f"| {name} | {unit} | - | {fmt(a)} | - |")
                continue
            ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else float("nan")
            lines.append(f"| {name} | {unit} | {fmt(b)} | {fmt(a)} | {ratio:.2f}x |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ab.md").write_text("\n".join(lines) + "\n")
    (args.out / "ab.json").write_text(json.dumps({
        "settings": {"before": str(args.before), "after": str(args.after),
                     "repetitions": args.repetitions, "min_time_s": args.min_time,
                     "filter": args.filter, "preempt": args.preempt},
        "samples": samples}, indent=1))
    print("\n".join(lines))
    print(f"\nwrote {args.out / 'ab.md'} and {args.out / 'ab.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
