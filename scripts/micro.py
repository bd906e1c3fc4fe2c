#!/usr/bin/env python3
"""Run nugo's scheduler micro-benchmarks beside their Go and Boost.Fiber twins.

    micro.py --build-dir BUILD --out OUT [--quick] [--repetitions R]

Runs BUILD/experiments/nugo-bench, BUILD/experiments/fiber-bench (if built)
and the Go twin in experiments/baselines/go (if `go` is installed), takes the
median of R repetitions of each benchmark, and prints one table that checks
nugo against the project's targets:

  yield_ping      one goroutine switch <= 3x a raw jump_fcontext round trip
  create_and_run  <= 0.3x Go's time at the same number of Ps
  fanout_100k     <= 0.3x Go's time, and peak RSS <= Go's

The same table goes to OUT/micro.md, and every median, ratio and command to
OUT/micro.json. Side-by-side ratios from one run are what count: the
development machines are small and noisy, absolute numbers drift.

Each fan-out configuration runs in a process of its own, because its peak RSS
is the process's ru_maxrss and must not include another benchmark's.

Exit status: 0 when every benchmark ran (a missed target is a MISS row, not a
failure), 1 when a benchmark binary or the Go build failed, 2 on bad
arguments.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
GO_TWIN_DIR = REPO_ROOT / "experiments" / "baselines" / "go"

# Benchmark names are a contract with nugo-bench, fiber-bench and the Go twin.
RAW_SWITCH = "raw_switch"
YIELD_PING = "yield_ping/procs:1"
CREATE_AND_RUN = ["create_and_run/procs:1", "create_and_run/procs:2"]
FANOUT = ["fanout_100k/procs:1", "fanout_100k/procs:2"]

# Targets, as the largest ratio that passes.
YIELD_VS_RAW_SWITCH_MAX = 3.0
CREATE_VS_GO_MAX = 0.3
FANOUT_VS_GO_MAX = 0.3
FANOUT_RSS_VS_GO_MAX = 1.0

# Google Benchmark runs: (regex for --benchmark_filter, is it a fan-out).
# The non-fan-out benchmarks share one process; "(/|$)" also matches the
# "/real_time" that UseRealTime() appends to a name.
NUGO_RUNS = [(r"^(raw_switch|yield_ping|create_and_run)(/|$)", False)] + [
    (f"^{name}(/|$)", True) for name in FANOUT
]
FIBER_RUNS = [(r"^(yield_ping|create_and_run)(/|$)", False)] + [
    (f"^{name}(/|$)", True) for name in FANOUT
]

# Go runs: (regex for -test.bench, value of -test.cpu).
GO_RUNS = [
    ("^(BenchmarkYieldPing|BenchmarkCreateGoroutines)$", "1"),
    ("^BenchmarkCreateGoroutines$", "2"),
    ("^BenchmarkFanOut100k$", "1"),
    ("^BenchmarkFanOut100k$", "2"),
]
GO_NAMES = {
    "BenchmarkYieldPing": "yield_ping",
    "BenchmarkCreateGoroutines": "create_and_run",
    "BenchmarkFanOut100k": "fanout_100k",
}

# Name components that Google Benchmark appends to a registered name.
GBENCH_NAME_DECORATIONS = re.compile(
    r"^(real_time|manual_time|(min_time|min_warmup_time|iterations|repeats|threads):.*)$"
)
NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
RSS_COUNTER = "peak_rss_mib"


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
    """Median real time of one benchmark and, for fan-outs, its process's peak RSS."""

    time_ns: float
    peak_rss_mib: float | None = None


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
        else Settings(repetitions=5, gbench_min_time=None, go_benchtime=None, timeout_s=1800)
    )
    if args.repetitions is not None:
        settings.repetitions = args.repetitions

    runner = Runner(settings)
    notes: list[str] = []
    try:
        nugo = run_gbench_binary(runner, nugo_bench, NUGO_RUNS)
        missing = [n for n in [RAW_SWITCH, YIELD_PING, *CREATE_AND_RUN, *FANOUT] if n not in nugo]
        if missing:
            raise BenchmarkFailure(f"{nugo_bench} did not report: {', '.join(missing)}")

        if is_executable(fiber_bench):
            fiber = run_gbench_binary(runner, fiber_bench, FIBER_RUNS)
        else:
            fiber = {}
            notes.append(f"Boost.Fiber twin skipped: {fiber_bench} not built.")

        go_binary = build_go_twin(runner, build_dir, notes)
        go = run_go_twin(runner, go_binary) if go_binary else {}
    except BenchmarkFailure as failure:
        print(f"micro.py: benchmark failed: {failure}", file=sys.stderr)
        return 1

    rows = comparison_rows(nugo, go, fiber)
    footnotes = table_footnotes(settings) + notes
    print(render_text_table(rows))
    print()
    for line in footnotes:
        print(f"* {line}")

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "micro.md").write_text(render_markdown(rows, footnotes))
    (args.out / "micro.json").write_text(
        json.dumps(
            {
                "settings": asdict(settings),
                "commands": runner.commands,
                "medians": {
                    "nugo": {k: asdict(v) for k, v in nugo.items()},
                    "go": {k: asdict(v) for k, v in go.items()},
                    "fiber": {k: asdict(v) for k, v in fiber.items()},
                },
                "rows": [asdict(row) | {"verdict": row.verdict()} for row in rows],
                "notes": footnotes,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {args.out / 'micro.md'} and {args.out / 'micro.json'}")
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run nugo's micro-benchmarks beside their Go and Boost.Fiber twins."
    )
    parser.add_argument("--build-dir", type=Path, required=True,
                        help="CMake build directory holding experiments/nugo-bench")
    parser.add_argument("--out", type=Path, required=True,
                        help="directory for micro.json and micro.md (created if missing)")
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


class Runner:
    """Runs commands with the run's timeout and keeps the list of what it ran."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.commands: list[str] = []

    def run(self, command: list[str], cwd: Path | None = None,
            env: dict[str, str] | None = None) -> str:
        shown = " ".join(shell_quote(part) for part in command)
        self.commands.append(f"(cd {cwd} && {shown})" if cwd else shown)
        print(f"+ {shown}", file=sys.stderr, flush=True)
        try:
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=self.settings.timeout_s)
        except subprocess.TimeoutExpired:
            raise BenchmarkFailure(f"{shown}: no result after {self.settings.timeout_s} s")
        if done.returncode != 0:
            raise BenchmarkFailure(
                f"{shown}: exit status {done.returncode}\n{tail(done.stdout + done.stderr)}"
            )
        return done.stdout


def shell_quote(part: str) -> str:
    return part if re.fullmatch(r"[\w./:=,+-]+", part) else "'" + part.replace("'", "'\\''") + "'"


def tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_gbench_binary(runner: Runner, binary: Path,
                      runs: list[tuple[str, bool]]) -> dict[str, Measurement]:
    results: dict[str, Measurement] = {}
    for name_filter, is_fanout in runs:
        command = [str(binary), f"--benchmark_filter={name_filter}", "--benchmark_format=json",
                   f"--benchmark_repetitions={runner.settings.repetitions}"]
        # Fan-outs report every repetition: their peak RSS is the largest one
        # seen (ru_maxrss only grows), which no aggregate gives.
        if not is_fanout:
            command.append("--benchmark_report_aggregates_only=true")
        if runner.settings.gbench_min_time:
            command.append(f"--benchmark_min_time={runner.settings.gbench_min_time}")
        results |= parse_gbench_json(runner.run(command), binary)
    return results


def parse_gbench_json(output: str, binary: Path) -> dict[str, Measurement]:
    """Medians per benchmark from Google Benchmark's --benchmark_format=json.

    Reads benchmarks[].run_name (name without the _median suffix), run_type
    ("iteration" or "aggregate"), aggregate_name, real_time, time_unit,
    error_occurred/error_message and the user counter peak_rss_mib. With one
    repetition there are no aggregates, and the single run is the median.
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
    for entry in report.get("benchmarks", []):
        name = canonical_gbench_name(entry.get("run_name", entry["name"]))
        if entry.get("error_occurred"):
            raise BenchmarkFailure(f"{binary}: {name}: {entry.get('error_message', 'error')}")
        time_ns = entry["real_time"] * NS_PER_UNIT[entry.get("time_unit", "ns")]
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") != "median":
                continue
            medians[name] = time_ns
        else:
            times.setdefault(name, []).append(time_ns)
        if RSS_COUNTER in entry:
            rss.setdefault(name, []).append(float(entry[RSS_COUNTER]))

    return {
        name: Measurement(
            time_ns=medians[name] if name in medians else statistics.median(times[name]),
            peak_rss_mib=max(rss[name]) if name in rss else None,
        )
        for name in sorted(medians.keys() | times.keys())
    }


def canonical_gbench_name(name: str) -> str:
    """"fanout_100k/procs:1/real_time" -> "fanout_100k/procs:1"."""
    parts = [part for part in name.split("/") if not GBENCH_NAME_DECORATIONS.match(part)]
    return "/".join(parts)


def go_environment(build_dir: Path) -> dict[str, str]:
    # Everything Go writes stays under the build directory, and no step may
    # reach for the network (the module proxy is unreachable here).
    return os.environ | {
        "GOCACHE": str(build_dir / "go-cache"),
        "GOPATH": str(build_dir / "gopath"),
        "GOFLAGS": "-mod=mod",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
    }


def build_go_twin(runner: Runner, build_dir: Path, notes: list[str]) -> Path | None:
    go = shutil.which("go")
    if go is None:
        notes.append("Go twin skipped: no `go` on PATH.")
        return None
    test_binary = build_dir / "go-bench.test"
    runner.run([go, "test", "-c", "-o", str(test_binary)], cwd=GO_TWIN_DIR,
               env=go_environment(build_dir))
    return test_binary


def run_go_twin(runner: Runner, test_binary: Path) -> dict[str, Measurement]:
    times: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    for bench_regex, cpus in GO_RUNS:
        command = [str(test_binary), "-test.run", "^$", "-test.bench", bench_regex,
                   "-test.cpu", cpus, "-test.count", str(runner.settings.repetitions)]
        if runner.settings.go_benchtime:
            command += ["-test.benchtime", runner.settings.go_benchtime]
        for name, metrics in parse_go_bench_output(runner.run(command)):
            times.setdefault(name, []).append(metrics["ns/op"])
            if RSS_COUNTER in metrics:
                rss.setdefault(name, []).append(metrics[RSS_COUNTER])
    return {
        name: Measurement(time_ns=statistics.median(samples),
                          peak_rss_mib=max(rss[name]) if name in rss else None)
        for name, samples in sorted(times.items())
    }


# "BenchmarkFanOut100k-2   	      19	  61390114 ns/op	        63.16 peak_rss_mib"
# Go appends -N to the name when GOMAXPROCS is N != 1.
GO_RESULT_LINE = re.compile(r"^(Benchmark\w+)(?:-(\d+))?\s+\d+\s+(.*)$")
GO_METRIC = re.compile(r"([-+0-9.eE]+)\s+(\S+)")


def parse_go_bench_output(output: str) -> list[tuple[str, dict[str, float]]]:
    results = []
    for line in output.splitlines():
        match = GO_RESULT_LINE.match(line.strip())
        if not match or match.group(1) not in GO_NAMES:
            continue
        procs = match.group(2) or "1"
        metrics = {unit: float(value) for value, unit in GO_METRIC.findall(match.group(3))}
        results.append((f"{GO_NAMES[match.group(1)]}/procs:{procs}", metrics))
    return results


@dataclass
class Row:
    benchmark: str
    unit: str
    nugo: float | None
    go: float | None
    fiber: float | None
    ratio: float | None  # the ratio the target is about
    ratio_of: str  # what that ratio divides, e.g. "nugo/Go"
    target: float | None  # largest passing ratio; None for information rows
    nugo_vs_fiber: float | None

    def verdict(self) -> str:
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

    raw_round_trip = time_of(nugo, RAW_SWITCH)
    yield_switch = time_of(nugo, YIELD_PING)
    rows = [
        Row(RAW_SWITCH, "ns/round trip", raw_round_trip, None, None,
            None, "", None, None),
        Row(YIELD_PING, "ns/switch", yield_switch, time_of(go, YIELD_PING),
            time_of(fiber, YIELD_PING), ratio(yield_switch, raw_round_trip),
            "nugo/raw_switch", YIELD_VS_RAW_SWITCH_MAX,
            ratio(yield_switch, time_of(fiber, YIELD_PING))),
        Row(f"{YIELD_PING} vs one jump", "ns/switch", yield_switch, None, None,
            ratio(yield_switch, raw_round_trip / 2 if raw_round_trip else None),
            "nugo/(raw_switch/2)", None, None),
    ]
    for name in CREATE_AND_RUN:
        rows.append(Row(name, "ns/goroutine", time_of(nugo, name), time_of(go, name),
                        time_of(fiber, name), ratio(time_of(nugo, name), time_of(go, name)),
                        "nugo/Go", CREATE_VS_GO_MAX,
                        ratio(time_of(nugo, name), time_of(fiber, name))))
    for name in FANOUT:
        rows.append(Row(name, "ns/fan-out", time_of(nugo, name), time_of(go, name),
                        time_of(fiber, name), ratio(time_of(nugo, name), time_of(go, name)),
                        "nugo/Go", FANOUT_VS_GO_MAX,
                        ratio(time_of(nugo, name), time_of(fiber, name))))
    for name in FANOUT:
        rows.append(Row(f"{name} peak RSS", "MiB", rss_of(nugo, name), rss_of(go, name),
                        rss_of(fiber, name), ratio(rss_of(nugo, name), rss_of(go, name)),
                        "nugo/Go", FANOUT_RSS_VS_GO_MAX,
                        ratio(rss_of(nugo, name), rss_of(fiber, name))))
    return rows


def table_footnotes(settings: Settings) -> list[str]:
    return [
        "raw_switch is one Boost.Context jump_fcontext round trip, i.e. two jumps. One "
        "goroutine switch (yield) is also two jumps, goroutine -> scheduler -> next "
        "goroutine, so the target compares a switch with the round trip; the "
        "'vs one jump' row divides by round trip/2 instead, for full honesty.",
        "Go: the twin in experiments/baselines/go, GOMAXPROCS = procs (-test.cpu). "
        "Fiber: Boost.Fiber, round_robin on one thread for procs:1, work_stealing "
        "on two spinning threads for procs:2.",
        "Peak RSS is the ru_maxrss of a process that ran only that fan-out "
        "configuration, so it includes each runtime's fixed footprint.",
        f"Times are medians of {settings.repetitions} repetition(s) on one machine in "
        "one run; compare ratios, not absolute numbers.",
    ]


TABLE_HEADER = ["benchmark", "unit", "nugo", "Go", "Fiber", "ratio", "ratio of",
                "target", "verdict", "nugo/Fiber"]


def row_cells(row: Row) -> list[str]:
    return [
        row.benchmark, row.unit, format_value(row.nugo), format_value(row.go),
        format_value(row.fiber), format_ratio(row.ratio), row.ratio_of or "-",
        f"<= {row.target:g}x" if row.target is not None else "-", row.verdict(),
        format_ratio(row.nugo_vs_fiber),
    ]


def format_value(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


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
