#!/usr/bin/env python3
"""The execution tracer: what it costs, and the README's timeline of a fork-join run.

usage: scripts/pipeline/tracer.py BUILD_DIR OUT_DIR [--quick] [--before OLD_BUILD_DIR]

1. Cost of tracing on: BUILD/experiments/nugo-bench runs yield_ping (procs:1) and skynet
   (procs:1, procs:2) beside their *_traced twins, the same loops with nugo::trace recording
   (records stream to a temporary file; writing the JSON afterwards is not timed). Writes the
   medians and the traced/untraced ratios against the targets (at most 2x on yield_ping, at
   most 1.15x on skynet) to OUT_DIR/overhead.md and overhead.json.
2. Cost of tracing compiled in but off, with --before: the untraced benchmarks (yield_ping,
   chan_sync, skynet) of OLD_BUILD_DIR's nugo-bench (a build of the commit before the tracer)
   and of this build, alternating, in the same run; ratios in the same files.
   Beside them, if `go` is on PATH: Go 1.19's own tracer on the twins of these benchmarks
   (experiments/baselines/go, `-test.trace`), the same ratio for Go.
3. The timeline: nugo-locality's fork-join fib(20) on the emulated 2-node machine (4 Ps), flat
   and NUMA mode, traced (NUGO_TRACE), checked by scripts/check/trace_check.py against NUGO_STATS,
   and drawn by scripts/tools/timeline.py (Debian's /usr/bin/python3 with python3-matplotlib) into
   OUT_DIR/timeline-fork-join.png. EMULATED: scheduler decisions on an emulated topology,
   folded onto this machine's CPUs.

--quick: one repetition, short benchmark times (a smoke test). Exit status: 0, 1 when a run
failed, 2 on bad usage.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402
from pipeline import micro  # noqa: E402  (the Go twin's names and its output)
from pipeline import numa  # noqa: E402  (the emulated topologies and the process runner)

ROOT = Path(__file__).resolve().parents[2]
ON_PAIRS = [("yield_ping/procs:1", 2.0), ("skynet/procs:1", 1.15), ("skynet/procs:2", 1.15)]
OFF_NAMES = ["yield_ping/procs:1", "chan_sync/procs:1", "chan_sync/procs:2", "skynet/procs:2"]
PYTHON_WITH_MATPLOTLIB = "/usr/bin/python3"


def usage(msg):
    print(f"tracer.py: {msg}\n{__doc__.splitlines()[2]}", file=sys.stderr)
    return 2


class Progress:
    def __init__(self, steps):
        self.steps, self.done, self.t0 = steps, 0, time.monotonic()

    def step(self, what):
        elapsed = time.monotonic() - self.t0
        left = elapsed / self.done * (self.steps - self.done) if self.done else None
        eta = f", about {left:.0f} s left" if left is not None else ""
        print(f"[{self.done + 1}/{self.steps}] {what} ({elapsed:.0f} s so far{eta})", flush=True)
        self.done += 1


def fmt_spread(t):
    """An explib.Spread of times in ns as "median (min to max)"."""
    return f"{fmt_ns(t.median)} ({fmt_ns(t.lo)} to {fmt_ns(t.hi)})"


def ratio_range(num, den):
    """num/den at the medians, and the widest it could be over the two ranges (min to max,
    where explib.ratio_interval pairs the ends of the 95% intervals)."""
    return num.median / den.median, num.lo / den.hi, num.hi / den.lo


def bench(exe, names, reps, min_time):
    """An explib.Spread of real time (ns) per unit of work for each benchmark name, from one
    nugo-bench process per name."""
    out = {}
    for name in names:
        base, _, procs = name.partition("/")
        flt = f"^{base}/{procs}(/|$)"
        args = [str(exe), f"--benchmark_filter={flt}", "--benchmark_format=json",
                f"--benchmark_repetitions={reps}", f"--benchmark_min_time={min_time}"]
        r = numa.run_process(args, dict(os.environ))
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
        runs = [b for b in json.loads(r.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
        if not runs:
            raise RuntimeError(f"{' '.join(args)} ran no benchmark")
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
        out[name] = explib.spread([b["real_time"] * scale[b["time_unit"]] for b in runs])
    return out


GO_NAMES = {"yield_ping/procs:1": ("BenchmarkYieldPing", "1"),
            "skynet/procs:1": ("BenchmarkSkynet", "1"), "skynet/procs:2": ("BenchmarkSkynet", "2")}


def go_traced_ratios(build, reps, quick):
    """name -> (untraced ns, traced ns) of the Go twin, or {} without go."""
    go = shutil.which("go")
    if not go:
        return {}
    binary = build / "go-bench.test"
    env = explib.go_environment(build)
    r = subprocess.run([go, "test", "-c", "-o", str(binary)], cwd=micro.GO_TWIN_DIR, env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"go test -c failed: {r.stderr[-2000:]}")
    out = {}
    trace_file = build / "go-twin.trace"
    for name, (bench, cpu) in GO_NAMES.items():
        times = []
        for extra in ([], [f"-test.trace={trace_file}"]):
            cmd = [str(binary), "-test.run", "^$", "-test.bench", f"^{bench}$", "-test.cpu", cpu,
                   "-test.count", str(reps), *(["-test.benchtime", "1x"] if quick else []), *extra]
            r = numa.run_process(cmd, env)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
            samples = [m["ns/op"] for _, m in micro.parse_go_bench_output(r.stdout)]
            if not samples:
                raise RuntimeError(f"{' '.join(cmd)} printed no result")
            times.append(statistics.median(samples))
        out[name] = tuple(times)
    trace_file.unlink(missing_ok=True)
    return out


def traced(name):
    base, _, procs = name.partition("/")
    return f"{base}_traced/{procs}"


def fmt_ns(ns):
    return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns:.1f} ns"


def timeline(build, out, progress):
    topology = numa.default_topology()
    exe = build / "experiments" / "nugo-locality"
    traces = []
    for mode in ("flat", "numa"):
        progress.step(f"fork-join fib(20) traced, {mode} mode, {numa.topology_label(topology)}")
        trace, stats = out / f"fork-join-{mode}.json", out / f"fork-join-{mode}-stats.json"
        env = dict(os.environ, NUGO_TOPOLOGY=topology, NUGO_PROCS="4", NUGO_MODE=mode,
                   NUGO_BIND="none", NUGO_TRACE=str(trace), NUGO_STATS=str(stats))
        r = numa.run_process([str(exe), "fib", "20"], env)
        if r.returncode != 0:
            raise RuntimeError(f"nugo-locality fib 20 ({mode}) failed: {r.stderr[-2000:]}")
        check = subprocess.run([sys.executable, str(ROOT / "scripts" / "check" / "trace_check.py"), str(trace),
                                "--stats", str(stats)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"trace_check.py {trace}: {check.stderr.strip()}")
        print("   ", check.stdout.strip())
        traces.append(trace)
    progress.step("drawing the timeline")
    png = out / "timeline-fork-join.png"
    r = subprocess.run([PYTHON_WITH_MATPLOTLIB, str(ROOT / "scripts" / "tools" / "timeline.py"),
                        *map(str, traces), "-o", str(png)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"timeline.py failed: {r.stderr.strip()}")
    return png


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    before = None
    if "--before" in args:
        i = args.index("--before")
        if i + 1 >= len(args):
            return usage("--before needs a build directory")
        before = Path(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        return usage("expected BUILD_DIR and OUT_DIR")
    shown_build = args[0]
    build, out = Path(args[0]).resolve(), Path(args[1])
    exe = build / "experiments" / "nugo-bench"
    if not exe.exists():
        return usage(f"{exe} is not built")
    old_exe = before / "experiments" / "nugo-bench" if before else None
    if old_exe and not old_exe.exists():
        return usage(f"--before: {old_exe} is not built")
    out.mkdir(parents=True, exist_ok=True)
    reps, min_time = (1, 0.05) if quick else (5, 0.2)  # 0.2 s a repetition: millions of operations
    progress = Progress(len(ON_PAIRS) + (2 if old_exe else 0) + 4)
    try:
        on = {}
        for name, _ in ON_PAIRS:
            progress.step(f"{name} and {traced(name)}, {reps} repetitions")
            on.update(bench(exe, [name, traced(name)], reps, min_time))
        progress.step("Go 1.19's tracer on the Go twins (if go is installed)")
        go = go_traced_ratios(build, reps, quick)
        off = {}
        if old_exe:
            for label, binary in (("before", old_exe), ("after", exe)):
                progress.step(f"untraced benchmarks, {label} the tracer ({binary})")
                off[label] = bench(binary, OFF_NAMES, reps, min_time)
        png = timeline(build, out, progress)
    except RuntimeError as e:
        print(f"tracer.py: {e}", file=sys.stderr)
        return 1

    lines = ["# What the execution tracer costs", "",
             f"Command: `python3 scripts/pipeline/tracer.py {shown_build} {out}{' --quick' if quick else ''}"
             f"{f' --before {before}' if before else ''}`; medians of {reps} repetitions with their "
             "range (min to max), real time per unit of work, measured on this machine (not "
             "emulated). A ratio's range pairs the extremes of the two ranges.", "",
             "## Tracing on (the *_traced twin against the same benchmark untraced)", "",
             "| benchmark | untraced | traced | traced / untraced | target | verdict | Go 1.19 traced / untraced |",
             "|---|---:|---:|---:|---:|---|---:|"]
    rows = []
    for name, target in ON_PAIRS:
        untraced, traced_ = on[name], on[traced(name)]
        ratio, ratio_lo, ratio_hi = ratio_range(traced_, untraced)
        go_ratio = go[name][1] / go[name][0] if name in go else None
        rows.append({"benchmark": name, "untraced_ns": untraced.median,
                     "untraced_range_ns": [untraced.lo, untraced.hi], "traced_ns": traced_.median,
                     "traced_range_ns": [traced_.lo, traced_.hi], "ratio": ratio,
                     "ratio_range": [ratio_lo, ratio_hi], "target": target,
                     "go_untraced_ns": go.get(name, (None,))[0],
                     "go_traced_ns": go.get(name, (None, None))[1], "go_ratio": go_ratio})
        go_cell = (f"{go_ratio:.2f}x ({fmt_ns(go[name][0])} -> {fmt_ns(go[name][1])})"
                   if go_ratio else "not run (no go)")
        verdict = "meets" if ratio_hi <= target else "MISSES" if ratio_lo > target else "inside the noise"
        lines.append(f"| `{name}` | {fmt_spread(untraced)} | {fmt_spread(traced_)} | {ratio:.2f}x ({ratio_lo:.2f} to "
                     f"{ratio_hi:.2f}) | {target:.2f}x | {verdict} | {go_cell} |")
    off_rows = []
    if off:
        lines += ["", "## Tracing compiled in but off (this build against the one before the tracer)",
                  "", "| benchmark | before | after | after / before |", "|---|---:|---:|---:|"]
        for name in OFF_NAMES:
            b, a = off["before"][name], off["after"][name]
            ratio, ratio_lo, ratio_hi = ratio_range(a, b)
            off_rows.append({"benchmark": name, "before_ns": b.median, "before_range_ns": [b.lo, b.hi],
                             "after_ns": a.median, "after_range_ns": [a.lo, a.hi], "ratio": ratio,
                             "ratio_range": [ratio_lo, ratio_hi]})
            lines.append(f"| `{name}` | {fmt_spread(b)} | {fmt_spread(a)} | {ratio:.3f}x ({ratio_lo:.3f} to {ratio_hi:.3f}) |")
    lines += ["", f"Timeline (EMULATED 2-node topology, scheduler decisions only): `{png}`."]
    (out / "overhead.md").write_text("\n".join(lines) + "\n")
    explib.write_json(out / "overhead.json", {"tracing_on": rows, "tracing_off": off_rows, "timeline": str(png)},
                      {"quick": quick, "repetitions": reps}, [explib.quote(["scripts/pipeline/tracer.py"] + sys.argv[1:])])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
