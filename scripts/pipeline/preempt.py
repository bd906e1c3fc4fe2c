#!/usr/bin/python3
"""Run nugo's sysmon/preemption/syscall benchmarks beside their Go twins.

usage: scripts/pipeline/preempt.py --out DIR [--build-dir BUILD] [--quick] [--repetitions R]
                          [--workloads-only] [--seed S]

Runs BUILD/experiments/nugo-preempt-bench and the Go benchmarks of
experiments/baselines/go/preempt_test.go (Go 1.19 on PATH, standard library
only, built once into BUILD/go-preempt.test), and writes OUT_DIR/preempt.md
and preempt.json; then preemption's cost on whole programs (below), into
OUT_DIR/workloads.md and workloads.json.

Targets, checked in the same run:
  preempt_latency   p99 wake delay <= 1.2x the configured slice, every slice
  preempt_overhead  median throughput loss against asyncpreemptoff <= 1% at 1 ms
  sysmon cost       other threads' CPU while a goroutine runs without blocking:
                    <= Go's at 10 ms (+0.5% of a core, the noise of one run),
                    <= 5% of a core at 1 ms, <= 1% of a core with
                    asynchronous preemption off (10 ms slice)
Everything else is reported, not judged: the preemption latency beside a hog
that holds a std::mutex (lock_hog) and beside one that lives in libc
(library_hog), what counting the locks of the thread
costs, the system calls and the thread storm.

The overhead configurations (off, 10 ms, 1 ms, 200 us; Go's on and off) run
interleaved, one process each, R rounds (5; 3 with --quick): a loss is taken
within a round, against that round's "off", and the table shows the median
and the range over rounds. Every subprocess has a timeout: a hung runtime is a
failure, not a hung script.

Preemption's cost on whole programs: BUILD/experiments/nugo-workload runs the
sweep's workloads that do not need preemption to progress (all but
pingpong_hogs: twelve; small sizes with --quick) at 2 Ps bound
one to a CPU, with asynchronous preemption off (NUGO_DEBUG=asyncpreemptoff=1)
and at 10 ms, 1 ms and 200 us slices (NUGO_TIMESLICE), R rounds, each round's
configurations in a random order (--seed). A ratio is taken within a round,
against that round's "off"; each workload's median ratio has its 95% bootstrap
interval. --workloads-only runs this part alone. REAL: timed on this machine.

Exit status: 0 when all ran (targets may miss: the table says so), 1 when a
benchmark failed or timed out, 2 on bad usage.
"""
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402

GO_DIR = explib.GO_DIR
SLICES = (("10ms", 10_000), ("1ms", 1_000), ("200us", 200))
OVERHEAD_CONFIGS = ["async:off", "slice:10ms", "slice:1ms", "slice:200us"]
ITERS_PER_OP = 200e6  # compute() iterations per benchmark op (preempt_bench.cpp, preempt_test.go)
TIMEOUT_S = 300
# Preemption's cost on whole programs: the sweep's workloads that do not need preemption to make
# progress (pingpong_hogs does: without it, its hogs starve the ping-pong), each run with
# asynchronous preemption off and at three slices, at 2 Ps bound one to a CPU.
WHOLE_WORKLOADS = ["fib", "skynet", "uts", "nqueens", "mergesort", "triad", "triad_skew", "stencil", "spmv",
                   "histogram", "sieve", "fanin"]
WHOLE_CONFIGS = {"off": {"NUGO_DEBUG": "asyncpreemptoff=1"}, "10ms": {"NUGO_TIMESLICE": "10ms"},
                 "1ms": {"NUGO_TIMESLICE": "1ms"}, "200us": {"NUGO_TIMESLICE": "200us"}}
WHOLE_PROCS = 2


Failed = explib.Failed
RUNNER = explib.Runner(timeout_s=TIMEOUT_S, echo=False)


def run(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> str:
    return RUNNER.run(cmd, env=env, cwd=cwd).stdout


def nugo_bench(exe: Path, pattern: str, min_time: float | None = None) -> dict:
    cmd = [str(exe), "--benchmark_format=json", f"--benchmark_filter={pattern}"]
    if min_time:
        cmd.append(f"--benchmark_min_time={min_time}")
    out = run(cmd)
    if not out.strip():
        raise Failed(f"no benchmark matched: {' '.join(cmd)}")
    return {b["name"]: b for b in explib.parse_gbench(out, str(exe))}


def go_bench(binary: Path, pattern: str, cpu: str, benchtime: str, extra_env: dict) -> dict:
    out = run([str(binary), "-test.run", "^$", "-test.bench", pattern, "-test.cpu", cpu,
               "-test.benchtime", benchtime], env=os.environ | extra_env)
    return {name: metrics for name, _, metrics in explib.parse_go_bench(out)}


def median_range(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def whole_workloads(build: Path, out: Path, rounds: int, quick: bool, seed: int) -> dict:
    """Preemption's cost on whole workloads (WHOLE_WORKLOADS): each workload at each of
    WHOLE_CONFIGS once per round, the configurations of a round in a random (seeded) order, so
    that a drift of the machine falls on all of them alike. A round's ratio is a slice's time
    over the same round's time with asynchronous preemption off; each workload's median ratio
    comes with its 95% bootstrap interval. Writes OUT/workloads.json and OUT/workloads.md."""
    exe = build / "experiments" / "nugo-workload"
    if not exe.exists():
        raise Failed(f"{exe} not found (cmake --build {build} --target nugo-workload)")
    size = "small" if quick else "default"
    rng = random.Random(seed)
    seconds = {w: {c: [] for c in WHOLE_CONFIGS} for w in WHOLE_WORKLOADS}
    base = {k: v for k, v in os.environ.items() if not k.startswith("NUGO_")}
    base |= {"NUGO_PROCS": str(WHOLE_PROCS), "NUGO_BIND": "pu"}
    started, total, done = time.monotonic(), rounds * len(WHOLE_WORKLOADS) * len(WHOLE_CONFIGS), 0
    for r in range(rounds):
        for w in WHOLE_WORKLOADS:
            configs = list(WHOLE_CONFIGS)
            rng.shuffle(configs)
            for c in configs:
                line = run([str(exe), w, "--size", size], env=base | WHOLE_CONFIGS[c]).strip().splitlines()[-1]
                result = json.loads(line)
                if not result.get("ok"):
                    raise Failed(f"{w} ({c}) failed its own check: {result.get('result')}")
                seconds[w][c].append(float(result["seconds"]))
                done += 1
            elapsed = time.monotonic() - started
            print(f"[whole workloads] round {r + 1} of {rounds}, {w}: {done}/{total} runs, about "
                  f"{explib.clock(elapsed / done * (total - done))} left", file=sys.stderr, flush=True)
    slices = [c for c in WHOLE_CONFIGS if c != "off"]
    ratios = {w: {c: [t / off for t, off in zip(seconds[w][c], seconds[w]["off"])] for c in slices}
              for w in WHOLE_WORKLOADS}
    spreads = {w: {c: explib.spread(ratios[w][c]) for c in slices} for w in WHOLE_WORKLOADS}

    def differs(s: explib.Spread) -> bool:  # the interval excludes 1
        return s.n >= 2 and not (s.ci_lo <= 1.0 <= s.ci_hi)
    summary = {w: {c: {"median": s.median, "ci_lo": s.ci_lo, "ci_hi": s.ci_hi, "n": s.n, "differs": differs(s)}
                   for c, s in spreads[w].items()} for w in WHOLE_WORKLOADS}
    command = (f"NUGO_PROCS={WHOLE_PROCS} NUGO_BIND=pu {exe} WORKLOAD --size {size}, with "
               + "; ".join(f"{c}: {' '.join(f'{k}={v}' for k, v in e.items())}" for c, e in WHOLE_CONFIGS.items())
               + f"; {rounds} rounds, configurations in a random order (seed {seed})")
    lines = ["# Preemption's cost on whole workloads (REAL: this machine)", "",
             f"`scripts/pipeline/preempt.py --build-dir {build} --out {out}` ({command}).", "",
             "Time at each slice over the same round's time with asynchronous preemption off: the median of "
             f"{rounds} rounds and its 95% bootstrap interval; \"~\" where the interval holds 1 (no difference).", "",
             "| workload | " + " | ".join(slices) + " | off: median s |", "|---|" + "---|" * (len(slices) + 1)]
    for w in WHOLE_WORKLOADS:
        cells = [("" if differs(s) else "~") + s.with_ci() for s in spreads[w].values()]
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {statistics.median(seconds[w]['off']):.4f} |")
    out.mkdir(parents=True, exist_ok=True)
    (out / "workloads.md").write_text("\n".join(lines) + "\n")
    data = {"settings": {"rounds": rounds, "size": size, "procs": WHOLE_PROCS, "bind": "pu", "seed": seed,
                         "configs": WHOLE_CONFIGS, "clock": "real"},
            "commands": [command], "seconds": seconds, "ratios": ratios, "summary": summary}
    (out / "workloads.json").write_text(json.dumps(data, indent=1))
    print("\n".join(lines))
    return data


def main() -> int:
    parser = explib.parser("preempt.py", __doc__)
    parser.add_argument("--repetitions", type=int)
    parser.add_argument("--workloads-only", action="store_true",
                        help="run only preemption's cost on whole workloads (OUT/workloads.json)")
    parser.add_argument("--seed", type=int, default=1, help="the order of the whole-workload runs")
    args = parser.parse_args()
    args.build, args.out = args.build_dir, args.out
    rounds = args.repetitions or (3 if args.quick else 5)
    if rounds < 1:
        parser.error("--repetitions must be at least 1")
    exe = args.build / "experiments" / "nugo-preempt-bench"
    if not exe.exists():
        print(f"preempt.py: {exe} not found (build with NUGO_BUILD_EXPERIMENTS=ON)", file=sys.stderr)
        return 2
    try:
        if args.workloads_only:
            whole_workloads(args.build, args.out, rounds, args.quick, args.seed)
            return 0
        code = report(args, exe, rounds)
        whole_workloads(args.build, args.out, rounds, args.quick, args.seed)
        return code
    except Failed as e:
        print(f"preempt.py: {e}", file=sys.stderr)
        return 1


def report(args, exe: Path, rounds: int) -> int:
    started = time.monotonic()
    commands = []
    go_binary = None
    if shutil.which("go"):
        go_binary = args.build / "go-preempt.test"
        run(["go", "test", "-c", "-o", str(go_binary.resolve())],
            env=explib.go_environment(args.build),
            cwd=GO_DIR)
        commands.append(f"go test -c -o {go_binary} (in {GO_DIR})")

    def progress(what: str) -> None:
        print(f"[{time.monotonic() - started:5.0f} s] {what}", file=sys.stderr, flush=True)

    # Latency, locks, system calls, the storm: one process, one run each.
    progress("latency and system calls")
    nugo = nugo_bench(exe, "^(preempt_latency|thread_lock|syscall_empty|syscall_getpid|raw_getpid)",
                      0.1 if args.quick else 0.5)
    commands.append(f"{exe} --benchmark_filter='^(preempt_latency|thread_lock|syscall_empty|syscall_getpid|raw_getpid)'")
    go = {}
    if go_binary:
        go |= go_bench(go_binary, "^BenchmarkPreemptLatency$", "1", "1x", {})
        go |= go_bench(go_binary, "^(BenchmarkSyscallGetpid|BenchmarkRawGetpid)$", "1",
                       "0.2s" if args.quick else "1s", {})
        go |= go_bench(go_binary, "^BenchmarkSyscallStorm$", "2", "1x", {})

    # Overhead: every configuration once per round, in turn.
    min_time = 0.2 if args.quick else 0.5
    per_iter = {c: [] for c in OVERHEAD_CONFIGS}
    others = {c: [] for c in OVERHEAD_CONFIGS}
    losses = {c: [] for c in OVERHEAD_CONFIGS[1:]}
    go_per_iter = {"on": [], "off": []}
    go_others = {"on": [], "off": []}
    go_loss = []
    for r in range(rounds):
        progress(f"overhead round {r + 1} of {rounds}")
        for c in OVERHEAD_CONFIGS:
            b = nugo_bench(exe, f"^preempt_overhead/{c}(/|$)", min_time)[f"preempt_overhead/{c}"]
            per_iter[c].append(b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
                               / ITERS_PER_OP)
            others[c].append(b["other_cores"])
        for c in OVERHEAD_CONFIGS[1:]:
            losses[c].append(per_iter[c][-1] / per_iter["async:off"][-1] - 1)
        if go_binary:
            for key, env in (("off", {"GODEBUG": "asyncpreemptoff=1"}), ("on", {})):
                g = go_bench(go_binary, "^BenchmarkPreemptOverhead$", "1",
                             "0.2s" if args.quick else "0.5s", env)["BenchmarkPreemptOverhead"]
                go_per_iter[key].append(g["ns_per_iter"])
                go_others[key].append(g["other_cores"])
            go_loss.append(go_per_iter["on"][-1] / go_per_iter["off"][-1] - 1)
    commands.append(f"{exe} --benchmark_filter='^preempt_overhead/CONFIG(/|$)' "
                    f"--benchmark_min_time={min_time}, configurations interleaved, {rounds} rounds")
    progress("thread storm")
    nugo |= nugo_bench(exe, "^syscall_storm(/|$)")
    floor = None
    floor_exe = args.build / "experiments" / "nugo-floor"
    if floor_exe.exists():
        progress("the machine's floor (nugo-floor)")
        floor = json.loads(run([str(floor_exe)]))
        commands.append(str(floor_exe))

    verdicts = {}
    lines = ["# sysmon, preemption and system calls: nugo beside Go 1.19", "",
             f"`scripts/pipeline/preempt.py --build-dir {args.build} --out {args.out}{' --quick' if args.quick else ''}` "
             "on this machine; Go's slice is fixed at 10 ms.", "",
             "## Preemption latency (1 P: a call-free hog and a goroutine sleeping 100 us)", "",
             "| slice | nugo p50 | nugo p99 | Go p50 | Go p99 | p99 / slice | target <= 1.2x |",
             "|---|---|---|---|---|---|---|"]
    for s, us in SLICES:
        b = nugo[f"preempt_latency/slice:{s}"]
        ratio = b["p99_us"] / us
        verdicts[f"latency {s}"] = ratio <= 1.2
        g = go.get("BenchmarkPreemptLatency", {}) if s == "10ms" else {}
        gp50 = f"{g['p50_us']:.0f} us" if g else "-"
        gp99 = f"{g['p99_us']:.0f} us ({g['p99_us'] / us:.2f}x)" if g else "-"
        lines.append(f"| {s} | {b['p50_us']:.0f} us | {b['p99_us']:.0f} us | {gp50} | {gp99} | "
                     f"{ratio:.2f}x | {'met' if ratio <= 1.2 else 'missed'} |")
    lines += ["", "## Preemption latency beside a hog that holds a std::mutex for 20 us at a time", "",
              "The signal is declined while the lock is held; the unlock yields (core/README.md, "
              "\"Locks of the thread\"). Same 1 P set-up as above.", "",
              "| slice | p50 | p99 | p99 / slice | call-free hog's p99 |", "|---|---|---|---|---|"]
    for s, us in SLICES:
        b = nugo[f"preempt_latency/lock_hog:{s}"]
        lines.append(f"| {s} | {b['p50_us']:.0f} us | {b['p99_us']:.0f} us | {b['p99_us'] / us:.2f}x | "
                     f"{nugo[f'preempt_latency/slice:{s}']['p99_us']:.0f} us |")

    lines += ["", "## Preemption latency beside a hog that lives in a library", "",
              "The hog copies 256 KiB at a time with libc's memcpy; the signal stops it only in "
              "the program's own code between two calls, and sysmon repeats an untaken "
              "preemption at doubling intervals up to half a slice (core/README.md, \"What is "
              "preemptible\"). Same 1 P set-up as above: what the rule costs.", "",
              "| slice | p50 | p99 | p99 / slice | call-free hog's p99 |", "|---|---|---|---|---|"]
    for s, us in SLICES:
        b = nugo.get(f"preempt_latency/library_hog:{s}")
        if b is None:  # results of an older build
            continue
        lines.append(f"| {s} | {b['p50_us']:.0f} us | {b['p99_us']:.0f} us | {b['p99_us'] / us:.2f}x | "
                     f"{nugo[f'preempt_latency/slice:{s}']['p99_us']:.0f} us |")

    def cell(values, fmt):
        m, lo, hi = median_range(values)
        return f"{fmt(m)} ({fmt(lo)} to {fmt(hi)})"

    pct = lambda v: f"{v * 100:+.1f}%"
    ns = lambda v: f"{v:.4f}"
    cores = lambda v: f"{v * 100:.2f}%"
    lines += ["", "## Overhead and sysmon's cost (1 P, a compute loop that never blocks)", "",
              f"Median over {rounds} interleaved rounds, range in parentheses. Loss: ns per "
              "iteration against the same round's asyncpreemptoff. Other threads: the CPU time "
              "of every thread but the loop's (sysmon, mostly) over the wall time, in % of one "
              "core, from /proc/self/task/*/schedstat, the same for Go.", "",
              "| slice | nugo ns/iter | nugo loss | nugo other threads | Go ns/iter | Go loss | "
              "Go other threads | targets |", "|---|---|---|---|---|---|---|---|"]
    go_other_10ms = statistics.median(go_others["on"]) if go_binary else None
    # Without the signal sysmon has nothing to repeat (sysmon.cpp): beside the loop it should
    # cost no more than Go's: at most 1% of a core.
    off = OVERHEAD_CONFIGS[0]
    med_off = statistics.median(others[off])
    verdicts["sysmon off"] = med_off <= 0.01
    lines.append(f"| off (asyncpreemptoff=1, 10ms) | {cell(per_iter[off], ns)} | - | {cell(others[off], cores)} | "
                 f"- | - | - | other <= 1%: {'met' if med_off <= 0.01 else 'missed'} |")
    for c in OVERHEAD_CONFIGS[1:]:
        s = c.split(":")[1]
        gcells = ["-", "-", "-"]
        if s == "10ms" and go_binary:
            gcells = [cell(go_per_iter["on"], ns), cell(go_loss, pct), cell(go_others["on"], cores)]
        target = []
        med_loss = statistics.median(losses[c])
        med_other = statistics.median(others[c])
        if s == "1ms":
            verdicts["overhead 1ms"] = med_loss <= 0.01
            verdicts["sysmon 1ms"] = med_other <= 0.05
            target = [f"loss <= 1%: {'met' if med_loss <= 0.01 else 'missed'}",
                      f"other <= 5%: {'met' if med_other <= 0.05 else 'missed'}"]
        if s == "10ms" and go_other_10ms is not None:
            ok = med_other <= go_other_10ms + 0.005
            verdicts["sysmon 10ms"] = ok
            target = [f"other <= Go's + 0.5%: {'met' if ok else 'missed'}"]
        lines.append(f"| {s} | {cell(per_iter[c], ns)} | {cell(losses[c], pct)} | "
                     f"{cell(others[c], cores)} | {' | '.join(gcells)} | {'; '.join(target) or '-'} |")
    goff = [cell(go_per_iter["off"], ns), "", cell(go_others["off"], cores)] if go_binary else ["-", "", "-"]
    lines.append(f"| off | {cell(per_iter['async:off'], ns)} | | {cell(others['async:off'], cores)} | "
                 f"{' | '.join(goff)} | |")

    if floor:
        per_preemption = {c.split(":")[1]: statistics.median(losses[c]) * us
                          for c, us in zip(OVERHEAD_CONFIGS[1:], (10_000, 1_000, 200))}
        lines += ["", "## The floor: what this machine charges (`nugo-floor`, plain threads)", "",
                  "One signal from another thread (tgkill, empty handler) costs a computing "
                  f"thread {floor['signal_us_at_1000_per_s']:.1f} us at 1,000 a second and "
                  f"{floor['signal_us_at_5000_per_s']:.1f} us at 5,000 a second (median of 5 "
                  "rounds); at a 1 ms slice that alone is "
                  f"{floor['signal_us_at_1000_per_s'] / 10:.2f}% of the loop. A whole "
                  "preemption (signal, XSAVE, the switch through g0, the global queue and back) "
                  "costs the loop, from the medians above: "
                  + ", ".join(f"{v:.1f} us at {k}" for k, v in per_preemption.items())
                  + f". An uncontended xchg costs {floor['xchg_ns']:.2f} ns, a lock cmpxchg "
                  f"{floor['cmpxchg_ns']:.2f} ns."]

    def ns_op(name):
        b = nugo[name]
        return b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
    lines += ["", "## System calls", "",
              "| what | nugo | Go |", "|---|---|---|",
              f"| enter + exit around nothing | {ns_op('syscall_empty'):.1f} ns | - |",
              f"| getpid as a runtime syscall | {ns_op('syscall_getpid'):.1f} ns | "
              f"{go.get('BenchmarkSyscallGetpid', {}).get('ns/op', float('nan')):.1f} ns |",
              f"| getpid, raw | {ns_op('raw_getpid'):.1f} ns | "
              f"{go.get('BenchmarkRawGetpid', {}).get('ns/op', float('nan')):.1f} ns |"]
    counted, direct = ns_op("thread_lock/counted"), ns_op("thread_lock/direct")
    lines += ["", "## Counting the locks of the thread (uncontended std::mutex lock + unlock)", "",
              "| through nugo's interposers | libc's functions directly | cost of counting |",
              "|---|---|---|",
              f"| {counted:.1f} ns | {direct:.1f} ns | {counted - direct:+.1f} ns |"]
    st, gst = nugo["syscall_storm"], go.get("BenchmarkSyscallStorm", {})
    lines += ["", "## Threads in a storm of 400 one-second sleep syscalls (2 Ps)", "",
              "| | nugo | Go |", "|---|---|---|",
              f"| while they sleep | {st['threads_peak']:.0f} | {gst.get('threads_peak', float('nan')):.0f} |",
              f"| 2 s after | {st['threads_after']:.0f} | {gst.get('threads_after', float('nan')):.0f} |"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "preempt.md").write_text("\n".join(lines) + "\n")
    (args.out / "preempt.json").write_text(json.dumps({
        "settings": {"rounds": rounds, "quick": args.quick, "min_time_s": min_time},
        "commands": commands,
        "nugo": nugo, "go": go, "floor": floor,
        "overhead": {"nugo_ns_per_iter": per_iter, "nugo_other_cores": others, "nugo_loss": losses,
                     "go_ns_per_iter": go_per_iter, "go_other_cores": go_others, "go_loss": go_loss},
        "targets": verdicts}, indent=1))
    print("\n".join(lines))
    print(f"\nwrote {args.out / 'preempt.md'} and {args.out / 'preempt.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
