"""What the experiment scripts share: one command-line shape, subprocesses with a timeout, one
offline Go environment, one parser each for Go's and Google Benchmark's output, medians with
their spread, tables, progress with time left, and results that record how they were made.

Used by micro.py, preempt.py, net.py, sweep.py and plot.py. Standard library only, except
table(), which uses Debian's python3-tabulate: run the scripts with /usr/bin/python3
(PYTHON below), which has Debian's packages, not with whatever python3 is first on PATH.
"""
import argparse
import csv
import json
import os
import platform
import random
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "experiments" / "baselines" / "go"
PYTHON = "/usr/bin/python3"  # Debian's, with python3-matplotlib and python3-tabulate
DEFAULT_TIMEOUT_S = 300


class Failed(Exception):
    """A command failed, timed out, or printed what could not be parsed."""


# ---- the command line ----

def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The shape every experiment script shares: --build-dir, --out, --quick. argparse exits
    with status 2 on a bad command line, as the scripts do for any bad input."""
    p = argparse.ArgumentParser(prog=prog, description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=Path, default=ROOT / "build-release",
                   help="the Release build to run (default: build-release)")
    p.add_argument("--out", type=Path, required=True, help="directory for the results")
    p.add_argument("--quick", action="store_true", help="a short smoke run (CI)")
    return p


def bad_input(prog: str, message: str) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return 2


# ---- subprocesses ----

def quote(cmd: list[str]) -> str:
    return " ".join(shlex.quote(str(part)) for part in cmd)


def tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@dataclass
class Runner:
    """Runs commands, each with a timeout, and keeps the list of what it ran (for the JSON)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    echo: bool = True
    commands: list[str] = field(default_factory=list)

    def run(self, cmd: list, *, env: dict | None = None, cwd: Path | None = None,
            timeout_s: float | None = None, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(c) for c in cmd]
        extra = {k: v for k, v in (env or {}).items() if os.environ.get(k) != v and k.startswith(("NUGO_", "GO"))}
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items()))
        shown = f"{shown} {quote(cmd)}".strip()
        self.commands.append(f"(cd {cwd} && {shown})" if cwd else shown)
        if self.echo:
            print(f"+ {shown}", file=sys.stderr, flush=True)
        limit = timeout_s or self.timeout_s
        try:
            done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise Failed(f"{shown}: no result after {limit:.0f} s (killed)")
        except OSError as e:
            raise Failed(f"{shown}: {e}")
        if check and done.returncode != 0:
            raise Failed(f"{shown}: exit status {done.returncode}\n{tail(done.stdout + done.stderr)}")
        return done


def go_environment(build_dir: Path) -> dict[str, str]:
    """The one offline Go environment: everything Go writes stays under the build directory,
    and no step may reach for the network (the module proxy is unreachable here)."""
    return os.environ | {
        "GOCACHE": str(Path(build_dir).resolve() / "go-cache"),
        "GOPATH": str(Path(build_dir).resolve() / "gopath"),
        "GOFLAGS": "-mod=mod",
        "GO111MODULE": "on",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
    }


# ---- parsers ----

# "BenchmarkFanOut100k-2   	      19	  61390114 ns/op	        63.16 peak_rss_mib"
# Go appends -N to the name when GOMAXPROCS is N != 1.
GO_RESULT_LINE = re.compile(r"^(Benchmark\w+)(?:-(\d+))?\s+\d+\s+(.*)$")
GO_METRIC = re.compile(r"([-+0-9.eE]+)\s+(\S+)")


def parse_go_bench(output: str) -> list[tuple[str, int, dict[str, float]]]:
    """Go's `go test -bench` lines: (benchmark name, GOMAXPROCS, {unit: value})."""
    results = []
    for line in output.splitlines():
        m = GO_RESULT_LINE.match(line.strip())
        if m:
            metrics = {unit: float(value) for value, unit in GO_METRIC.findall(m.group(3))}
            results.append((m.group(1), int(m.group(2) or 1), metrics))
    return results


NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# Name components that Google Benchmark appends to a registered name.
GBENCH_DECORATIONS = re.compile(
    r"^(real_time|process_time|manual_time|(min_time|min_warmup_time|iterations|repeats|threads):.*)$")


def gbench_name(name: str) -> str:
    """"fanout_100k/procs:1/real_time" -> "fanout_100k/procs:1"."""
    return "/".join(part for part in name.split("/") if not GBENCH_DECORATIONS.match(part))


def parse_gbench(output: str, what: str) -> list[dict]:
    """Google Benchmark's --benchmark_format=json: its benchmark entries, each with "name"
    made canonical, "run_type" ("iteration" or "aggregate") and "time_ns" (real time)."""
    if not output.strip():
        return []  # Google Benchmark prints nothing when the filter matches nothing
    try:
        report = json.loads(output)
    except json.JSONDecodeError as e:
        raise Failed(f"{what}: output is not JSON ({e})")
    entries = []
    for b in report.get("benchmarks", []):
        if b.get("error_occurred"):
            raise Failed(f"{what}: {b['name']}: {b.get('error_message', 'error')}")
        entries.append(b | {"name": gbench_name(b.get("run_name", b["name"])),
                            "run_type": b.get("run_type", "iteration"),
                            "time_ns": b["real_time"] * NS_PER_UNIT[b.get("time_unit", "ns")]})
    return entries


# ---- numbers ----

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0x6E75676F  # fixed: the same values give the same interval, run after run


def bootstrap_median_ci(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap confidence interval of the median: the median of each of
    BOOTSTRAP_RESAMPLES resamples (with replacement, seeded), and the (1 - level)/2 and
    (1 + level)/2 quantiles of those medians. With one value it is that value: no interval."""
    if len(values) < 2:
        return values[0], values[0]
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(BOOTSTRAP_RESAMPLES))
    lo = medians[int((1 - level) / 2 * (BOOTSTRAP_RESAMPLES - 1))]
    hi = medians[int(round((1 + level) / 2 * (BOOTSTRAP_RESAMPLES - 1)))]
    return lo, hi


@dataclass
class Spread:
    """A median with the range it came from, how many values, and its 95% bootstrap
    confidence interval (ci_lo, ci_hi; equal to the median when n = 1)."""
    median: float
    lo: float
    hi: float
    n: int
    ci_lo: float | None = None
    ci_hi: float | None = None

    def __str__(self) -> str:
        return fmt(self.median) if self.n == 1 else f"{fmt(self.median)} [{fmt(self.lo)}, {fmt(self.hi)}]"

    def with_ci(self) -> str:
        """"median (95% CI lo-hi)", or the median alone when there is no interval (n < 2)."""
        if self.n < 2 or self.ci_lo is None:
            return fmt(self.median)
        return f"{fmt(self.median)} ({fmt(self.ci_lo)}-{fmt(self.ci_hi)})"

    def differs(self, other: "Spread") -> bool:
        """Whether the two medians differ: their intervals do not overlap (both need n >= 2)."""
        if self.n < 2 or other.n < 2 or self.ci_lo is None or other.ci_lo is None:
            return False
        return self.ci_hi < other.ci_lo or other.ci_hi < self.ci_lo


def spread(values: list[float]) -> Spread | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    ci_lo, ci_hi = bootstrap_median_ci(values)
    return Spread(statistics.median(values), min(values), max(values), len(values), ci_lo, ci_hi)


def ratio_interval(num: Spread, den: Spread) -> tuple[float, float, float]:
    """num/den with a conservative interval: from the ends of the two 95% intervals."""
    return num.median / den.median, num.ci_lo / den.ci_hi, num.ci_hi / den.ci_lo


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10 ** digits or magnitude < 1e-3:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def table(rows: list[list], headers: list[str], markdown: bool = False) -> str:
    """A table, by python3-tabulate: GitHub Markdown, or plain for a terminal."""
    from tabulate import tabulate  # Debian's python3-tabulate (bootstrap.sh installs it)
    return tabulate([[("-" if c is None else str(c)) for c in r] for r in rows], headers=headers,
                    tablefmt="github" if markdown else "simple", disable_numparse=True)


# ---- progress ----

class Progress:
    """'[i/n] what ... elapsed 1m02s, about 3m10s left', the estimate from the mean time per
    finished step."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.start, self.stream = total, 0, time.monotonic(), stream

    def finished(self, what: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        left = elapsed / self.done * (self.total - self.done)
        print(f"[{self.done}/{self.total}] {what}  (elapsed {clock(elapsed)}, about {clock(left)} left)",
              file=self.stream, flush=True)


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


# ---- results ----

RESULTS_INT_COLUMNS = ("procs", "emulated", "timing_reported", "latency_model", "ok", "repetition",
                       "oversubscribed")


def cpu_list(text: str) -> list[int]:
    """A kernel CPU list ("0-3,8") as numbers."""
    cpus = []
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def workload_names(exe: Path) -> list[str]:
    """The workloads a twin offers, from the list its usage message gives (nugo-workload and
    the peers' twins print "workloads: a b c" when run without one); Failed if it gives none."""
    try:
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"{exe}: {e}")
    m = re.search(r"^workloads:(.*)$", out.stderr, re.M)
    if not m:
        raise Failed(f"{exe.name} did not list its workloads: {out.stderr.strip()}")
    return m.group(1).split()


def virtualization() -> dict:
    """Whether this machine is a virtual one, and of which kind, when it can tell:
    {"vm": "none" | "kvm" | "qemu" (QEMU without KVM: TCG, software emulation) | ..., "container":
    "none" | "docker" | ..., "how": what said so}. A guest's timings describe the hypervisor's
    scheduling as much as the program; under TCG they describe nothing at all."""
    def detect(flag: str) -> str | None:
        try:
            out = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() or None  # "none" (exit status 1) or the technology
    vm, container = detect("--vm"), detect("--container")
    if vm is not None:
        return {"vm": vm, "container": container or "unknown", "how": "systemd-detect-virt"}
    # Without systemd-detect-virt: the CPU's hypervisor flag and the firmware's vendor.
    try:
        flagged = " hypervisor " in " " + next(
            (line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "") + " "
    except OSError:
        flagged = False
    try:
        vendor = Path("/sys/class/dmi/id/sys_vendor").read_text().strip()
    except OSError:
        vendor = ""
    vm = ("qemu-accelerator-unknown" if vendor == "QEMU" else "unknown-hypervisor") if flagged else "none"
    return {"vm": vm, "container": "unknown", "how": "the hypervisor CPU flag and /sys/class/dmi/id/sys_vendor"}


def machine_kind(virt: dict | None) -> str:
    """Where a run on `machine` ran, in words: "hardware", "a virtual machine (kvm)", or, for
    QEMU without KVM, "a QEMU guest under software emulation (TCG)"."""
    vm = (virt or {}).get("vm", "unknown")
    if vm == "none":
        return "hardware"
    if vm == "qemu":
        return "a QEMU guest under software emulation (TCG)"
    return f"a virtual machine ({vm})" if vm != "unknown" else "an unknown machine (hardware or virtual)"


def is_virtual_build(build: Path) -> bool:
    """Whether build is configured with -DNUGO_VIRTUAL_TIME=ON (core/src/vtime/README.md)."""
    cache = build / "CMakeCache.txt"
    return cache.is_file() and "NUGO_VIRTUAL_TIME:BOOL=ON" in cache.read_text()


def read_results(path: Path) -> list[dict]:
    """sweep.py's results.csv, its flag and count columns as ints (sweep.py and plot.py)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in RESULTS_INT_COLUMNS:
            r[k] = int(r.get(k) or 0)  # a column an older run did not have reads as 0
        r.setdefault("bind", "")
        r.setdefault("bind_asked", r["bind"])
    return rows

def read_json_object(path: Path) -> dict | None:
    """A results file holding one JSON object; None when there is no such file, and ValueError
    naming the file when it cannot be read or holds something else."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not readable JSON ({e})") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def write_json(path: Path, data: dict, settings: dict, commands: list[str]) -> None:
    """Writes data with the settings and commands that produced it, and when and where."""
    record = {"settings": settings, "commands": commands,
              "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host": platform.node()} | data
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")


def tex(text) -> str:
    """Free text (a topology name, a CPU model, a claim's sentence) made safe for TeX."""
    out = str(text)
    for a, b in (("\\", "/"), ("{", "("), ("}", ")"), ("_", "\\_"), ("&", "\\&"), ("%", "\\%"),
                 ("#", "\\#"), ("$", "\\$"), ("~", "\\textasciitilde{}"), ("^", "\\textasciicircum{}")):
        out = out.replace(a, b)
    return out
