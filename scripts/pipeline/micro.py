#!/usr/bin/env python3
"""Run nugo's scheduler micro-benchmarks beside their Go and Boost.Fiber twins.

    micro.py --build-dir BUILD --out OUT [--quick] [--repetitions R]

Runs BUILD/experiments/nugo-bench, BUILD/experiments/fiber-bench (if built)
and the Go twin in experiments/baselines/go (if `go` is installed), takes the
median of R repetitions of each benchmark, and prints one table that checks
nugo against the project's targets (ratios are nugo/Go at the same number of
Ps unless said otherwise):

  yield_ping         one goroutine switch <= 3x a raw jump_fcontext round trip
  create_and_run     <= 0.3x Go's time
  fanout_100k        <= 0.3x Go's time, and peak RSS <= Go's
  skynet             <= 0.3x Go's time, and peak RSS <= Go's
  chan_sync, chan_prod_cons0                         <= 0.5x Go's time
  chan_prod_cons100  <= 0.6x Go's time (a buffered op should cost little
                     more than a ring buffer under a lock)
  mutex_*/procs:2    <= 1x Go's time
  ping_pong_hog      <= 1x Go's time (procs:1 only)
  timer_wake         p99 wake delay <= 0.5x Go's (procs:2 only). No absolute
                     target (such as p99 <= 2 ms, <= 1 core): starting
                     100,000 goroutines that each set a 10 ms timer costs
                     more than 10 ms of CPU on 2 vCPUs, so no runtime could
                     meet one there; cpu_cores is reported beside Go's
  select_*, mutex_*/procs:1, timer_churn: for information, no target

    micro.py --build-dir BUILD --out OUT --render

re-renders OUT/micro.md and OUT/micro.json from the medians an earlier run saved
there, with the current targets, without running anything.

The same table goes to OUT/micro.md, and every median, ratio and command to
OUT/micro.json. Side-by-side ratios from one run are what count: the
development machines are small and noisy, absolute numbers drift.

Each fan-out, skynet and timer_wake configuration runs in a process of its
own, because its peak RSS is the process's ru_maxrss and must not include
another benchmark's (and a timer_wake round must not share the process with
another benchmark's leftovers). Boost.Fiber's skynet takes about a minute and
10 GiB per procs:1 run, so --quick leaves it out.

The six required benchmarks (raw_switch, yield_ping, create_and_run,
fanout_100k) must be in nugo-bench. The others are optional: a name
nugo-bench does not have shows as "-" with verdict n/a.

Exit status: 0 when every benchmark ran (a missed target is a MISS row, not a
failure), 1 when a benchmark binary or the Go build failed, or nugo-bench
lacks one of the six, 2 on bad arguments.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
GO_TWIN_DIR = REPO_ROOT / "experiments" / "baselines" / "go"

# Benchmark names are a contract with nugo-bench, fiber-bench and the Go twin.
RAW_SWITCH = "raw_switch"
RAW_SWITCH_NUGO = "raw_switch_nugo"  # nugo's own jump; absent with a Boost other than 1.74
YIELD_PING = "yield_ping/procs:1"
PROCS = ["procs:1", "procs:2"]
CREATE_AND_RUN = [f"create_and_run/{p}" for p in PROCS]
FANOUT = [f"fanout_100k/{p}" for p in PROCS]
REQUIRED_NUGO = [RAW_SWITCH, YIELD_PING, *CREATE_AND_RUN, *FANOUT]
# Added with channels, select, mutexes and timers; optional in nugo-bench.
SKYNET = [f"skynet/{p}" for p in PROCS]
CHANNEL_FAMILIES = ["chan_sync", "chan_prod_cons0", "chan_prod_cons100"]
INFO_FAMILIES = ["select_uncontended", "select_contended", "mutex_uncontended",
                 "mutex_contended"]
PING_PONG_HOG = "ping_pong_hog/procs:1"
TIMER_CHURN = [f"timer_churn/{p}" for p in PROCS]
TIMER_WAKE = "timer_wake/procs:2"

# Targets, as the largest ratio (or, for timer_wake, value) that passes.
YIELD_VS_RAW_SWITCH_MAX = 3.0
CREATE_VS_GO_MAX = 0.3
FANOUT_VS_GO_MAX = 0.3
FANOUT_RSS_VS_GO_MAX = 1.0
SKYNET_VS_GO_MAX = 0.3
SKYNET_RSS_VS_GO_MAX = 1.0
CHANNEL_VS_GO_MAX = {"chan_sync": 0.5, "chan_prod_cons0": 0.5, "chan_prod_cons100": 0.6}
MUTEX_VS_GO_MAX_AT_2 = 1.0
PING_PONG_HOG_VS_GO_MAX = 1.0
TIMER_WAKE_P99_VS_GO_MAX = 0.5

# Google Benchmark runs: (regex for --benchmark_filter, isolated). An isolated
# run is one configuration alone in its process, reporting every repetition.
# The others share a process and report aggregates; "(/|$)" also matches the
# "/real_time" that UseRealTime() appends to a name.
SHARED_NEW_FAMILIES = [*CHANNEL_FAMILIES, *INFO_FAMILIES, "ping_pong_hog", "timer_churn"]
NUGO_RUNS = (
    [(r"^(raw_switch|raw_switch_nugo|yield_ping|create_and_run)(/|$)", False)]
    + [(f"^{name}(/|$)", True) for name in FANOUT]
    + [(f"^({'|'.join(SHARED_NEW_FAMILIES)})(/|$)", False)]
    + [(f"^{name}(/|$)", True) for name in [*SKYNET, TIMER_WAKE]]
)
FIBER_RUNS = [(r"^(yield_ping|create_and_run)(/|$)", False)] + [
    (f"^{name}(/|$)", True) for name in FANOUT
]
FIBER_SKYNET_RUNS = [(f"^{name}(/|$)", True) for name in SKYNET]

# Go runs: (regex for -test.bench, value of -test.cpu).
GO_SHARED_NEW = ("BenchmarkChanSync|BenchmarkChanProdCons0|BenchmarkChanProdCons100|"
                 "BenchmarkSelectUncontended|BenchmarkSelectContended|"
                 "BenchmarkMutexUncontended|BenchmarkMutexContended|BenchmarkTimerChurn")
GO_RUNS = [
    ("^(BenchmarkYieldPing|BenchmarkCreateGoroutines)$", "1"),
    ("^BenchmarkCreateGoroutines$", "2"),
    ("^BenchmarkFanOut100k$", "1"),
    ("^BenchmarkFanOut100k$", "2"),
    (f"^({GO_SHARED_NEW}|BenchmarkPingPongHog)$", "1"),
    (f"^({GO_SHARED_NEW})$", "2"),
    ("^BenchmarkSkynet$", "1"),
    ("^BenchmarkSkynet$", "2"),
    ("^BenchmarkTimerWake$", "2"),
]
# The control for Go's garbage collector: create_and_run again with GOGC=off, so that the gap to
# Go's create-and-run can be split into what the collector costs and what it does not. Its
# results are kept as "go_gcoff" beside "go".
GO_GCOFF_RUNS = [("^BenchmarkCreateGoroutines$", "1")]
GO_NAMES = {
    "BenchmarkYieldPing": "yield_ping",
    "BenchmarkCreateGoroutines": "create_and_run",
    "BenchmarkFanOut100k": "fanout_100k",
    "BenchmarkSkynet": "skynet",
    "BenchmarkFib": "fib",
    "BenchmarkChanSync": "chan_sync",
    "BenchmarkChanProdCons0": "chan_prod_cons0",
    "BenchmarkChanProdCons100": "chan_prod_cons100",
    "BenchmarkSelectUncontended": "select_uncontended",
    "BenchmarkSelectContended": "select_contended",
    "BenchmarkMutexUncontended": "mutex_uncontended",
    "BenchmarkMutexContended": "mutex_contended",
    "BenchmarkPingPongHog": "ping_pong_hog",
    "BenchmarkTimerChurn": "timer_churn",
    "BenchmarkTimerWake": "timer_wake",
}

NS_PER_UNIT = explib.NS_PER_UNIT
# Metrics read besides the time: user counters of Google Benchmark, units of
# b.ReportMetric for Go. Peak RSS is the largest value seen; the others are
# medians over repetitions like the time.
RSS_COUNTER = "peak_rss_mib"
MEDIAN_METRICS = ["ns_per_sleep", "cpu_cores", "p50_us", "p99_us"]


class BenchmarkFailure(Exception):
    """A benchmark binary (or the Go build) failed: exit status 1."""


@dataclass
class Settings:
    repetitions: int
    gbench_min_time: str | None  # seconds; None keeps Google Benchmark's default
    go_benchtime: str | None  # None keeps Go's default (1s)
    timeout_s: int  # per process, so that a hung scheduler fails the run


@dataclass
class Measurement:
    """Median real time of one benchmark, its process's peak RSS if it reports
    one, and the medians of the other metrics (MEDIAN_METRICS) it reports."""

    time_ns: float
    peak_rss_mib: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)


def main() -> int:
    args = parse_args()
    build_dir = args.build_dir.resolve()
    nugo_bench = build_dir / "experiments" / "nugo-bench"
    fiber_bench = build_dir / "experiments" / "fiber-bench"
    if not build_dir.is_dir():
        return usage_error(f"--build-dir {args.build_dir}: no such directory")
    if not is_executable(nugo_bench):
        return usage_error(
            f"--build-dir {args.build_dir}: {nugo_bench} not found or not executable "
            "(build the nugo-bench target first)"
        )
    if args.out.exists() and not args.out.is_dir():
        return usage_error(f"--out {args.out}: exists and is not a directory")
    if args.repetitions is not None and args.repetitions < 1:
        return usage_error(f"--repetitions {args.repetitions}: must be at least 1")

    settings = (
        Settings(repetitions=1, gbench_min_time="0.05", go_benchtime="200ms", timeout_s=300)
        if args.quick
        # Each repetition runs 0.2 s (Google Benchmark) or 400 ms (Go), not their defaults of 0.5 s
        # and 1 s: at nanoseconds per operation that is still millions of operations, and it keeps
        # the step to a few minutes of reproduce.sh's budget.
        else Settings(repetitions=5, gbench_min_time="0.2", go_benchtime="400ms", timeout_s=1800)
    )
    if args.repetitions is not None:
        settings.repetitions = args.repetitions

    if args.render:
        return render_saved(args.out)
    runner = Runner(settings)
    notes: list[str] = []
    try:
        nugo = run_gbench_binary(runner, nugo_bench, NUGO_RUNS)
        missing = [n for n in REQUIRED_NUGO if n not in nugo]
        if missing:
            raise BenchmarkFailure(f"{nugo_bench} did not report: {', '.join(missing)}")
        not_yet = [n for n in optional_nugo_names() if n not in nugo]
        if not_yet:
            notes.append(f"Not in nugo-bench (yet), shown as '-': {', '.join(not_yet)}.")

        if is_executable(fiber_bench):
            fiber_runs = FIBER_RUNS
            if args.quick:
                notes.append("Boost.Fiber skynet skipped with --quick (about a minute and "
                             "10 GiB of RSS per procs:1 run).")
            else:
                fiber_runs = FIBER_RUNS + FIBER_SKYNET_RUNS
            fiber = run_gbench_binary(runner, fiber_bench, fiber_runs)
        else:
            fiber = {}
            notes.append(f"Boost.Fiber twin skipped: {fiber_bench} not built.")

        go_binary = build_go_twin(runner, build_dir, notes)
        go = run_go_twin(runner, go_binary) if go_binary else {}
        go_gcoff = (run_go_twin(runner, go_binary, GO_GCOFF_RUNS, os.environ | {"GOGC": "off"})
                    if go_binary else {})
    except BenchmarkFailure as failure:
        print(f"micro.py: benchmark failed: {failure}", file=sys.stderr)
        return 1

    write_results(args.out, settings, runner.commands, nugo, go, fiber, notes, go_gcoff)
    return 0


def render_saved(out: Path) -> int:
    saved_path = out / "micro.json"
    try:
        saved = json.loads(saved_path.read_text())
        settings = Settings(**saved["settings"])
        results = {side: {name: Measurement(**m) for name, m in saved["medians"][side].items()}
                   for side in ("nugo", "go", "fiber")}
    except (OSError, ValueError, KeyError, TypeError) as e:
        return usage_error(f"--render: cannot read the medians in {saved_path}: {e}")
    go_gcoff = {name: Measurement(**m) for name, m in saved["medians"].get("go_gcoff", {}).items()}
    write_results(out, settings, saved.get("commands", []), results["nugo"], results["go"],
                  results["fiber"], saved.get("extra_notes", []), go_gcoff)
    return 0


def write_results(out: Path, settings: Settings, commands: list[str],
                  nugo: dict[str, Measurement], go: dict[str, Measurement],
                  fiber: dict[str, Measurement], notes: list[str],
                  go_gcoff: dict[str, Measurement] | None = None) -> None:
    rows = comparison_rows(nugo, go, fiber)
    footnotes = table_footnotes(settings) + notes
    print(render_text_table(rows))
    print()
    for line in footnotes:
        print(f"* {line}")

    out.mkdir(parents=True, exist_ok=True)
    (out / "micro.md").write_text(render_markdown(rows, footnotes))
    (out / "micro.json").write_text(
        json.dumps(
            {
                "settings": asdict(settings),
                "commands": commands,
                "medians": {
                    "nugo": {k: asdict(v) for k, v in nugo.items()},
                    "go": {k: asdict(v) for k, v in go.items()},
                    "fiber": {k: asdict(v) for k, v in fiber.items()},
                    "go_gcoff": {k: asdict(v) for k, v in (go_gcoff or {}).items()},
                },
                "rows": [asdict(row) | {"verdict": row.verdict()} for row in rows],
                "notes": footnotes,
                "extra_notes": notes,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {out / 'micro.md'} and {out / 'micro.json'}")


def optional_nugo_names() -> list[str]:
    """The benchmarks beyond the six required ones, which nugo-bench may lack."""
    return [*SKYNET, *(f"{family}/{p}" for family in [*CHANNEL_FAMILIES, *INFO_FAMILIES]
                       for p in PROCS),
            PING_PONG_HOG, *TIMER_CHURN, TIMER_WAKE]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run nugo's micro-benchmarks beside their Go and Boost.Fiber twins."
    )
    parser.add_argument("--build-dir", type=Path, required=True,
                        help="CMake build directory holding experiments/nugo-bench")
    parser.add_argument("--out", type=Path, required=True,
                        help="directory for micro.json and micro.md (created if missing)")
    parser.add_argument("--render", action="store_true",
                        help="re-render OUT/micro.md and micro.json from the medians saved "
                             "there, with the current targets; runs nothing")
    parser.add_argument("--quick", action="store_true",
                        help="one short repetition of everything, for CI smoke runs")
    parser.add_argument("--repetitions", type=int,
                        help="repetitions per benchmark (default 5, or 1 with --quick)")
    return parser.parse_args()


def usage_error(message: str) -> int:
    print(f"micro.py: error: {message}", file=sys.stderr)
    return 2


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


class Runner(explib.Runner):
    """explib's Runner (a timeout on every command, the list of what ran), with this run's
    timeout, returning stdout and raising BenchmarkFailure."""

    def __init__(self, settings: Settings):
        super().__init__(timeout_s=settings.timeout_s)
        self.settings = settings

    def run(self, command: list[str], cwd: Path | None = None,
            env: dict[str, str] | None = None) -> str:
        try:
            return super().run(command, cwd=cwd, env=env).stdout
        except explib.Failed as failure:
            raise BenchmarkFailure(str(failure))


def run_gbench_binary(runner: Runner, binary: Path,
                      runs: list[tuple[str, bool]]) -> dict[str, Measurement]:
    results: dict[str, Measurement] = {}
    for name_filter, isolated in runs:
        command = [str(binary), f"--benchmark_filter={name_filter}", "--benchmark_format=json",
                   f"--benchmark_repetitions={runner.settings.repetitions}"]
        # Isolated runs report every repetition: their peak RSS is the largest
        # one seen (ru_maxrss only grows), which no aggregate gives.
        if not isolated:
            command.append("--benchmark_report_aggregates_only=true")
        if runner.settings.gbench_min_time:
            command.append(f"--benchmark_min_time={runner.settings.gbench_min_time}")
        results |= parse_gbench_json(runner.run(command), binary)
    return results


def parse_gbench_json(output: str, binary: Path) -> dict[str, Measurement]:
    """Medians per benchmark from Google Benchmark's --benchmark_format=json.

    Reads benchmarks[].run_name (name without the _median suffix), run_type
    ("iteration" or "aggregate"), aggregate_name, real_time, time_unit,
    error_occurred/error_message and the user counters peak_rss_mib and
    MEDIAN_METRICS. With one repetition there are no aggregates, and the
    single run is the median; a median aggregate holds the medians of the
    counters too.
    """
    if not output.strip():
        return {}  # Google Benchmark prints nothing when the filter matches nothing.
    try:
        report = json.loads(output)
    except json.JSONDecodeError as error:
        raise BenchmarkFailure(f"{binary}: output is not JSON ({error})")

    times: dict[str, list[float]] = {}
    medians: dict[str, float] = {}
    rss: dict[str, list[float]] = {}
    metrics: dict[str, dict[str, list[float]]] = {}
    median_metrics: dict[str, dict[str, float]] = {}
    for entry in report.get("benchmarks", []):
        name = canonical_gbench_name(entry.get("run_name", entry["name"]))
        if entry.get("error_occurred"):
            raise BenchmarkFailure(f"{binary}: {name}: {entry.get('error_message', 'error')}")
        time_ns = entry["real_time"] * NS_PER_UNIT[entry.get("time_unit", "ns")]
        counters = {key: float(entry[key]) for key in MEDIAN_METRICS if key in entry}
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") != "median":
                continue
            medians[name] = time_ns
            median_metrics[name] = counters
        else:
            times.setdefault(name, []).append(time_ns)
            for key, value in counters.items():
                metrics.setdefault(name, {}).setdefault(key, []).append(value)
        if RSS_COUNTER in entry:
            rss.setdefault(name, []).append(float(entry[RSS_COUNTER]))

    return {
        name: Measurement(
            time_ns=medians[name] if name in medians else statistics.median(times[name]),
            peak_rss_mib=max(rss[name]) if name in rss else None,
            metrics=median_metrics[name] if name in median_metrics else {
                key: statistics.median(values)
                for key, values in metrics.get(name, {}).items()
            },
        )
        for name in sorted(medians.keys() | times.keys())
    }


canonical_gbench_name = explib.gbench_name


def build_go_twin(runner: Runner, build_dir: Path, notes: list[str]) -> Path | None:
    go = shutil.which("go")
    if go is None:
        notes.append("Go twin skipped: no `go` on PATH.")
        return None
    test_binary = build_dir / "go-bench.test"
    runner.run([go, "test", "-c", "-o", str(test_binary)], cwd=GO_TWIN_DIR,
               env=explib.go_environment(build_dir))
    return test_binary


def run_go_twin(runner: Runner, test_binary: Path, runs: list[tuple[str, str]] = GO_RUNS,
                env: dict[str, str] | None = None) -> dict[str, Measurement]:
    times: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    others: dict[str, dict[str, list[float]]] = {}
    for bench_regex, cpus in runs:
        command = [str(test_binary), "-test.run", "^$", "-test.bench", bench_regex,
                   "-test.cpu", cpus, "-test.count", str(runner.settings.repetitions)]
        if runner.settings.go_benchtime:
            command += ["-test.benchtime", runner.settings.go_benchtime]
        for name, metrics in parse_go_bench_output(runner.run(command, env=env)):
            times.setdefault(name, []).append(metrics["ns/op"])
            if RSS_COUNTER in metrics:
                rss.setdefault(name, []).append(metrics[RSS_COUNTER])
            for key in MEDIAN_METRICS:
                if key in metrics:
                    others.setdefault(name, {}).setdefault(key, []).append(metrics[key])
    return {
        name: Measurement(time_ns=statistics.median(samples),
                          peak_rss_mib=max(rss[name]) if name in rss else None,
                          metrics={key: statistics.median(values)
                                   for key, values in others.get(name, {}).items()})
        for name, samples in sorted(times.items())
    }


def parse_go_bench_output(output: str) -> list[tuple[str, dict[str, float]]]:
    """The Go twin's results under nugo's benchmark names: ("fanout_100k/procs:2", metrics)."""
    return [(f"{GO_NAMES[name]}/procs:{procs}", metrics)
            for name, procs, metrics in explib.parse_go_bench(output) if name in GO_NAMES]


@dataclass
class Row:
    benchmark: str
    unit: str
    nugo: float | None
    go: float | None
    fiber: float | None
    ratio: float | None  # the ratio the target is about (absolute rows: nugo's value)
    ratio_of: str  # what that ratio divides, e.g. "nugo/Go"; "nugo" for absolute rows
    target: float | None  # largest passing ratio or value; None for information rows
    nugo_vs_fiber: float | None
    absolute: bool = False  # target compares nugo's value itself, in `unit`

    def verdict(self) -> str:
        if self.nugo is None:
            return "n/a"  # not (yet) in nugo-bench
        if self.target is None:
            return "info"
        if self.ratio is None:
            return "n/a"
        return "PASS" if self.ratio <= self.target else "MISS"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def comparison_rows(nugo: dict[str, Measurement], go: dict[str, Measurement],
                    fiber: dict[str, Measurement]) -> list[Row]:
    def time_of(results: dict[str, Measurement], name: str) -> float | None:
        return results[name].time_ns if name in results else None

    def rss_of(results: dict[str, Measurement], name: str) -> float | None:
        return results[name].peak_rss_mib if name in results else None

    def metric_of(results: dict[str, Measurement], name: str, metric: str) -> float | None:
        return results[name].metrics.get(metric) if name in results else None

    def time_row(name: str, unit: str, target: float | None) -> Row:
        return Row(name, unit, time_of(nugo, name), time_of(go, name), time_of(fiber, name),
                   ratio(time_of(nugo, name), time_of(go, name)), "nugo/Go", target,
                   ratio(time_of(nugo, name), time_of(fiber, name)))

    def rss_row(name: str, target: float | None) -> Row:
        return Row(f"{name} peak RSS", "MiB", rss_of(nugo, name), rss_of(go, name),
                   rss_of(fiber, name), ratio(rss_of(nugo, name), rss_of(go, name)),
                   "nugo/Go", target, ratio(rss_of(nugo, name), rss_of(fiber, name)))

    def metric_row(name: str, metric: str, unit: str, target: float | None = None,
                   absolute: bool = False) -> Row:
        mine, theirs = metric_of(nugo, name, metric), metric_of(go, name, metric)
        if absolute:
            return Row(f"{name} {metric}", unit, mine, theirs, None, mine, "nugo", target,
                       None, absolute=True)
        return Row(f"{name} {metric}", unit, mine, theirs, None, ratio(mine, theirs),
                   "nugo/Go", target, None)

    raw_round_trip = time_of(nugo, RAW_SWITCH)
    yield_switch = time_of(nugo, YIELD_PING)
    rows = [
        Row(RAW_SWITCH, "ns/round trip", raw_round_trip, None, None,
            None, "", None, None),
        Row(RAW_SWITCH_NUGO, "ns/round trip", time_of(nugo, RAW_SWITCH_NUGO), None, None,
            ratio(time_of(nugo, RAW_SWITCH_NUGO), raw_round_trip), "nugo's/Boost's", None,
            None),
        Row(YIELD_PING, "ns/switch", yield_switch, time_of(go, YIELD_PING),
            time_of(fiber, YIELD_PING), ratio(yield_switch, raw_round_trip),
            "nugo/raw_switch", YIELD_VS_RAW_SWITCH_MAX,
            ratio(yield_switch, time_of(fiber, YIELD_PING))),
        Row(f"{YIELD_PING} vs one jump", "ns/switch", yield_switch, None, None,
            ratio(yield_switch, raw_round_trip / 2 if raw_round_trip else None),
            "nugo/(raw_switch/2)", None, None),
    ]
    rows += [time_row(name, "ns/goroutine", CREATE_VS_GO_MAX) for name in CREATE_AND_RUN]
    rows += [time_row(name, "ns/fan-out", FANOUT_VS_GO_MAX) for name in FANOUT]
    rows += [rss_row(name, FANOUT_RSS_VS_GO_MAX) for name in FANOUT]
    rows += [time_row(name, "ns/run", SKYNET_VS_GO_MAX) for name in SKYNET]
    rows += [rss_row(name, SKYNET_RSS_VS_GO_MAX) for name in SKYNET]
    rows += [time_row(f"{family}/{p}", "ns/op", CHANNEL_VS_GO_MAX[family])
             for family in CHANNEL_FAMILIES for p in PROCS]
    rows.append(time_row(PING_PONG_HOG, "ns/round trip", PING_PONG_HOG_VS_GO_MAX))
    rows += [time_row(f"{family}/{p}", "ns/op",
                      MUTEX_VS_GO_MAX_AT_2 if family.startswith("mutex") and p == "procs:2"
                      else None)
             for family in INFO_FAMILIES for p in PROCS]
    rows += [metric_row(name, "ns_per_sleep", "ns/sleep") for name in TIMER_CHURN]
    rows += [metric_row(name, "cpu_cores", "cores") for name in TIMER_CHURN]
    rows += [
        metric_row(TIMER_WAKE, "p99_us", "us", TIMER_WAKE_P99_VS_GO_MAX),
        metric_row(TIMER_WAKE, "cpu_cores", "cores"),
        metric_row(TIMER_WAKE, "p50_us", "us"),
        time_row(TIMER_WAKE, "ns/round", None),
    ]
    return rows


def table_footnotes(settings: Settings) -> list[str]:
    return [
        "raw_switch is one Boost.Context jump_fcontext round trip, i.e. two jumps. One "
        "goroutine switch (yield) is also two jumps, goroutine -> scheduler -> next "
        "goroutine, so the target compares a switch with the round trip; the "
        "'vs one jump' row divides by round trip/2 instead, for full honesty.",
        "raw_switch_nugo is the same round trip with nugo's own jump, which the runtime "
        "uses (core/src/base/switch_amd64.S: Boost's frame without the floating-point control "
        "words); the yield target is still against Boost's, the floor it was set on.",
        "Go: the twin in experiments/baselines/go, GOMAXPROCS = procs (-test.cpu). "
        "Fiber: Boost.Fiber, round_robin on one thread for procs:1, work_stealing "
        "on two spinning threads for procs:2.",
        "Peak RSS is the ru_maxrss of a process that ran only that fan-out or skynet "
        "configuration, so it includes each runtime's fixed footprint.",
        "chan_*, select_* and mutex_* mirror Go's benchmarks of those names (ns/op as Go "
        "counts ops); ping_pong_hog is Go's BenchmarkPingPongHog, one round trip per op.",
        "timer_churn: 100,000 goroutines sleeping 1 ms in a loop; ns/sleep is the wall "
        "time of a 1 s steady-state window over the sleeps completed in it, cores the "
        "process's CPU time over that window (metrics ns_per_sleep, cpu_cores).",
        "timer_wake: 100,000 goroutines each sleeping 10 ms once; p50_us/p99_us are "
        "percentiles of wake delay (wake time - deadline), cores the process's CPU time "
        "over the sleep; target p99 <= 0.5x Go's in the same run (the absolute targets, "
        "p99 <= 2 ms and <= 1 core, were retired: starting the 100,000 timers alone costs "
        "more than 10 ms of CPU on 2 vCPUs).",
        "ping_pong_hog runs Go's shape: one round of b.N = all of a run's round trips, "
        "with one hog, so that both measure the steady state of alternating slices.",
        f"Times and metrics are medians of {settings.repetitions} repetition(s) on one "
        "machine in one run; compare ratios, not absolute numbers.",
    ]


TABLE_HEADER = ["benchmark", "unit", "nugo", "Go", "Fiber", "ratio", "ratio of",
                "target", "verdict", "nugo/Fiber"]


def row_cells(row: Row) -> list[str]:
    if row.absolute:
        checked = "-" if row.ratio is None else f"{format_value(row.ratio)} {row.unit}"
        target = f"<= {row.target:g} {row.unit}" if row.target is not None else "-"
    else:
        checked = format_ratio(row.ratio)
        target = f"<= {row.target:g}x" if row.target is not None else "-"
    return [
        row.benchmark, row.unit, format_value(row.nugo), format_value(row.go),
        format_value(row.fiber), checked, row.ratio_of or "-", target, row.verdict(),
        format_ratio(row.nugo_vs_fiber),
    ]


def format_value(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def format_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render_text_table(rows: list[Row]) -> str:
    lines = [TABLE_HEADER] + [row_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(TABLE_HEADER))]
    numeric = {2, 3, 4, 5, 9}  # right-aligned columns
    rendered = []
    for line in lines:
        cells = [cell.rjust(w) if i in numeric else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(line, widths))]
        rendered.append("  ".join(cells).rstrip())
    rendered.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(rendered)


def render_markdown(rows: list[Row], footnotes: list[str]) -> str:
    lines = ["# nugo micro-benchmarks vs Go and Boost.Fiber", "",
             "| " + " | ".join(TABLE_HEADER) + " |",
             "|" + "|".join(["---", "---", "---:", "---:", "---:", "---:", "---", "---", "---",
                             "---:"]) + "|"]
    lines += ["| " + " | ".join(row_cells(row)) + " |" for row in rows]
    lines.append("")
    lines += [f"- {line}" for line in footnotes]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
