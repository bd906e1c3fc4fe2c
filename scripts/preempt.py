#!/usr/bin/env python3
"""Run nugo's sysmon/preemption/syscall benchmarks beside their Go twins.

usage: scripts/preempt.py BUILD_DIR OUT_DIR [--quick]

Runs BUILD/experiments/nugo-preempt-bench and the Go benchmarks of
experiments/baselines/go/preempt_test.go (Go 1.19 on PATH, standard library
only), and writes OUT_DIR/preempt.md and preempt.json.

Targets (issue 4), checked in the same run:
  preempt_latency   p99 wake delay <= 1.2x the configured slice
  preempt_overhead  throughput loss against asyncpreemptoff <= 1% at a 1 ms slice
Everything else is reported, not judged: the preemption latency beside a hog
that holds a std::mutex (lock_hog), and what counting the locks of the thread
costs per uncontended lock + unlock (thread_lock/counted against /direct). Exit status: 0 when all ran (targets
may miss: the table says so), 1 when a benchmark failed to run, 2 on bad usage.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent.parent / "experiments" / "baselines" / "go"


def run_nugo(build: Path, quick: bool) -> dict:
    exe = build / "experiments" / "nugo-preempt-bench"
    if not exe.exists():
        sys.exit(f"preempt.py: {exe} not found (build with NUGO_BUILD_EXPERIMENTS=ON)")
    args = [str(exe), "--benchmark_format=json",
            f"--benchmark_min_time={0.1 if quick else 0.5}"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        sys.exit(1)
    rows = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        name = re.sub(r"/(real_time|iterations:\d+)", "", b["name"])
        rows[name] = b
    return rows


def run_go(quick: bool) -> dict:
    rows = {}
    env = dict(os.environ, GOFLAGS="-mod=mod", GO111MODULE="on")
    runs = [("^(BenchmarkPreemptLatency|BenchmarkPreemptOverhead)$", "1", {}),
            ("^BenchmarkPreemptOverhead$", "1", {"GODEBUG": "asyncpreemptoff=1"}),
            ("^(BenchmarkSyscallGetpid|BenchmarkRawGetpid)$", "1", {}),
            ("^BenchmarkSyscallStorm$", "2", {})]
    for pattern, cpu, extra in runs:
        cmd = ["go", "test", "-run", "^$", "-bench", pattern, "-cpu", cpu,
               "-benchtime", "1x" if "Storm" in pattern or "Latency" in pattern else
               ("0.2s" if quick else "1s")]
        out = subprocess.run(cmd, cwd=GO_DIR, capture_output=True, text=True, env={**env, **extra})
        if out.returncode != 0:
            print(out.stdout + out.stderr, file=sys.stderr)
            sys.exit(1)
        for line in out.stdout.splitlines():
            m = re.match(r"^(Benchmark\w+?)(-\d+)?\s+\d+\s+(.*)$", line)
            if not m:
                continue
            fields = m.group(3).split()
            metrics = {fields[i + 1]: float(fields[i]) for i in range(0, len(fields) - 1, 2)}
            key = m.group(1) + ("/async:off" if extra else "")
            rows[key] = metrics
    return rows


def main() -> int:
    argv = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv[1:]
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, out_dir = Path(argv[0]), Path(argv[1])
    nugo = run_nugo(build, quick)
    go = run_go(quick)
    out_dir.mkdir(parents=True, exist_ok=True)

    lines = ["# sysmon, preemption and system calls: nugo beside Go 1.19", "",
             "One run of `scripts/preempt.py` on this machine; Go's slice is fixed at 10 ms.", "",
             "## Preemption latency (1 P: a call-free hog and a goroutine sleeping 100 us)", "",
             "| slice | nugo p50 | nugo p99 | Go p50 | Go p99 | p99 / slice | target <= 1.2x |",
             "|---|---|---|---|---|---|---|"]
    verdicts = {}
    for s, us in (("10ms", 10000), ("1ms", 1000), ("200us", 200)):
        b = nugo[f"preempt_latency/slice:{s}"]
        ratio = b["p99_us"] / us
        verdicts[f"latency {s}"] = ratio <= 1.2
        g = go.get("BenchmarkPreemptLatency", {}) if s == "10ms" else {}
        gp50 = f"{g['p50_us']:.0f} us" if g else "-"
        gp99 = f"{g['p99_us']:.0f} us" if g else "-"
        lines.append(f"| {s} | {b['p50_us']:.0f} us | {b['p99_us']:.0f} us | {gp50} | {gp99} | "
                     f"{ratio:.2f}x | {'met' if ratio <= 1.2 else 'missed'} |")
    lines += ["", "## Preemption latency beside a hog that holds a std::mutex for 20 us at a time", "",
              "The signal is declined while the lock is held; the unlock yields (core/README.md, "
              "\"Locks of the thread\"). Same 1 P set-up as above.", "",
              "| slice | p50 | p99 | p99 / slice | call-free hog's p99 |", "|---|---|---|---|---|"]
    for s, us in (("10ms", 10000), ("1ms", 1000), ("200us", 200)):
        b = nugo[f"preempt_latency/lock_hog:{s}"]
        lines.append(f"| {s} | {b['p50_us']:.0f} us | {b['p99_us']:.0f} us | {b['p99_us'] / us:.2f}x | "
                     f"{nugo[f'preempt_latency/slice:{s}']['p99_us']:.0f} us |")

    def per_iter(name):  # the bench's real time per 200M-iteration op, in ns per iteration
        b = nugo[name]
        return b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]] / 200e6
    off = per_iter("preempt_overhead/async:off")
    lines += ["", "## Overhead (1 P, a compute loop, ns per iteration against asyncpreemptoff=1)", "",
              "| slice | nugo ns/iter | loss | Go ns/iter | Go loss | target |", "|---|---|---|---|---|---|"]
    go_off = go.get("BenchmarkPreemptOverhead/async:off", {}).get("ns_per_iter")
    for s in ("10ms", "1ms", "200us"):
        v = per_iter(f"preempt_overhead/slice:{s}")
        loss = v / off - 1
        gcell, gloss = "-", "-"
        if s == "10ms" and go_off:
            gv = go["BenchmarkPreemptOverhead"]["ns_per_iter"]
            gcell, gloss = f"{gv:.3f}", f"{(gv / go_off - 1) * 100:+.1f}%"
        target = "-"
        if s == "1ms":
            verdicts["overhead 1ms"] = loss <= 0.01
            target = "<= 1%: " + ("met" if loss <= 0.01 else "missed")
        lines.append(f"| {s} | {v:.3f} | {loss * 100:+.1f}% | {gcell} | {gloss} | {target} |")
    lines.append(f"| off | {off:.3f} | | {go_off or 0:.3f} | | |")

    def ns(name):
        b = nugo[name]
        return b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
    lines += ["", "## System calls", "",
              "| what | nugo | Go |", "|---|---|---|",
              f"| enter + exit around nothing | {ns('syscall_empty'):.1f} ns | - |",
              f"| getpid as a runtime syscall | {ns('syscall_getpid'):.1f} ns | "
              f"{go.get('BenchmarkSyscallGetpid', {}).get('ns/op', float('nan')):.1f} ns |",
              f"| getpid, raw | {ns('raw_getpid'):.1f} ns | "
              f"{go.get('BenchmarkRawGetpid', {}).get('ns/op', float('nan')):.1f} ns |"]
    counted, direct = ns("thread_lock/counted"), ns("thread_lock/direct")
    lines += ["", "## Counting the locks of the thread (uncontended std::mutex lock + unlock)", "",
              "| through nugo's interposers | libc's functions directly | cost of counting |",
              "|---|---|---|",
              f"| {counted:.1f} ns | {direct:.1f} ns | {counted - direct:+.1f} ns |"]
    st, gst = nugo["syscall_storm"], go.get("BenchmarkSyscallStorm", {})
    lines += ["", "## Threads in a storm of 400 one-second sleep syscalls (2 Ps)", "",
              "| | nugo | Go |", "|---|---|---|",
              f"| while they sleep | {st['threads_peak']:.0f} | {gst.get('threads_peak', float('nan')):.0f} |",
              f"| 2 s after | {st['threads_after']:.0f} | {gst.get('threads_after', float('nan')):.0f} |"]
    (out_dir / "preempt.md").write_text("\n".join(lines) + "\n")
    (out_dir / "preempt.json").write_text(json.dumps({"nugo": nugo, "go": go, "targets": verdicts},
                                                     indent=1))
    print("\n".join(lines))
    print(f"\nwrote {out_dir / 'preempt.md'} and {out_dir / 'preempt.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
