#!/usr/bin/python3
"""The workload sweep of the experiment pipeline: mode x P count x workload x repetition, on this
machine and, when it has one node, on emulated multi-node topologies.

usage: scripts/pipeline/sweep.py --out DIR [--build-dir BUILD] [--virtual-build-dir VBUILD] [--quick | --full]
                        [--only W,...] [--modes flat,numa,go,go_numactl,tbb,omp,fiber] [--procs N,...]
                        [--topology T,...] [--bind B,...] [--repetitions R] [--seed S]

Each run is one process: BUILD/experiments/nugo-workload (or the Go twin, go-workload, built
here) with NUGO_PROCS, NUGO_MODE, NUGO_BIND, NUGO_TOPOLOGY and NUGO_STATS set; the workload
checks its own result.

The peers (experiments/baselines/README.md, "The peers") are more values of the mode factor,
run on `machine` only, each where it was built (scripts/bootstrap.sh --baselines; a missing
one is left out with a message): tbb (BUILD/experiments/tbb-workload, oneTBB), omp
(omp-workload, GCC's OpenMP) and fiber (fiber-workload, Boost.Fiber: skynet and the
communication workloads only). Each is given the P count as its worker count and the same
binding as nugo's rows (pu or none; they cannot bind by node); `runtime_env` on every row says
what each runtime was set to (NUGO_*, GOMAXPROCS, OMP_PROC_BIND and OMP_PLACES, TBB's arenas).
Go per node (go_numactl) is Go as its users run it on a NUMA machine today (golang/go#47831):
one go-workload process per node with CPUs under `numactl --cpunodebind=K --membind=K`, each
with GOMAXPROCS = Ps / nodes and part K of a data-parallel kernel's data (triad, triad_skew,
histogram, spmv: -part K/N; the stencil cannot be split), all set up first and started together
at a barrier; the row's time is the slowest part's. It needs several nodes: on a one-node
machine it is n/a, with the reason, and left out.
sweep.md has a table per workload kind of nugo (flat) against every runtime, as time ratios
with intervals.

A comparison changes one thing. Binding is held equal between the modes: by default every run
binds each P's thread to that P's CPU (NUGO_BIND=pu; flat and NUMA mode give P k the same PU),
and every row records the binding asked for (`bind_asked`) and the one the runtime resolved
(`bind`, from its statistics). --bind sweeps binding as a factor of its own: pu, node, none,
or auto (each mode's own default: node for NUMA mode, none for flat mode, which changes
binding together with the mode, as the pipeline did before). Go cannot bind its threads: its
rows say none. Runs whose Ps (or GOMAXPROCS) outnumber the CPUs this process may use are
marked oversubscribed = 1: their timings say little and are never quoted.

The runs of every configuration and repetition are interleaved in a random order (seeded,
--seed, recorded in sweep.json), so that a drift of the machine's state during the sweep falls
on every configuration alike. Each median comes with its 95% bootstrap confidence interval
(explib.bootstrap_median_ci); a ratio of two medians whose intervals overlap is marked "~":
within the noise, no difference.

Writes DIR/results.csv (one row per run, with the runtime's statistics counters),
DIR/machine.json (what ran where), DIR/sweep.json (settings, commands, medians), DIR/sweep.md
(the summary tables) and DIR/logs/ (each run's output and statistics).

Topologies (--topology, comma-separated):
  machine  this machine, as hwloc sees it (real: timings are hardware results)
  2node    the 2-socket Xeon of topology/machines (24 PUs), emulated
  4node    the 4-socket Xeon (96 PUs), emulated
  24node   the 24-node em64t (384 PUs) at 48 Ps, emulated, for locality counters only: its
           timings are not reported (48 Ps folded onto this machine's CPUs measure nothing)
  xml:PATH or synthetic:DESC  any other, emulated
  virtual  the virtual set, each at one P per PU, in VIRTUAL TIME (core/src/vtime/README.md,
           "Virtual time"): v2x16 (the 2-socket Xeon of 32 PUs), v4x24 (the 4-socket Xeon,
           96 PUs) and v24x16 (the 24-node em64t, 384 PUs). Their runs are the virtual-time
           build's (--virtual-build-dir, default build-virtual; scripts/test.sh --virtual makes
           it) with NUGO_VIRTUAL giving every model constant (catalogue.VIRTUAL_MODEL; the row's
           virtual_setting): every thread runs alone in the order of virtual clocks, so the Ps
           are not oversubscribed, and the timings are virtual time: the CPU time each virtual
           CPU used plus the cost model's charges (cache lines by node distance, the
           memory-latency model's remote blocks). Every row says clock = virtual and carries its
           schedule's fingerprint. nugo modes only, binding none (virtual time binds nothing).
           A size below the profile's: small by default, default with --full (a run at default
           size takes 3 to 30 s of real time on 96 to 384 virtual CPUs).
Every nugo run is seeded with its repetition's number (NUGO_SEED; the row's seed), so that the
modes of one repetition draw from one seed.
Every named machine is a real machine's hwloc XML file in topology/machines/ (scripts/pipeline/catalogue.py
names them); a file that is missing stops the sweep, naming it. The default is `machine`, plus 2node, 4node and 24node when this machine has one
node; the virtual set runs only when asked for (reproduce.sh runs it as a step of its own).

Locality targets (sweep.md, on multi-node machines whose Ps are not folded: real or virtual):
NUMA mode runs at least 95% of goroutine runs on their home node, and moves at most 10% as many
goroutines across nodes as flat mode does, per workload.

On an emulated topology the memory-bound workloads run with the emulated memory latency
model (experiments/workloads/README.md), and every such row says so (latency_model = 1).
The Go twins run on `machine` only: Go cannot be shown a topology.

Profiles: --quick (tiny sizes, 1 repetition: the CI smoke), the default (default sizes, 10
repetitions; 2 for an oversubscribed configuration, whose timings are never quoted; Go and
the C++ peers at the largest P count only), --full (large sizes, every P count 1, 2, 4, ... up to the
PUs, 10 repetitions; for a real multi-socket machine). The virtual set (--topology virtual) takes
8 repetitions in the default profile: its families are a machine's 13 rows. --repetitions overrides.

Exit status: 0 when every run succeeded, 1 when one failed (wrong result, crash, timeout:
the others still run, and the failure is in the CSV and on stderr), 2 on bad input (an unknown
workload, mode or topology, a missing file, a P count out of range), before anything runs.
"""
import csv
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import catalogue  # noqa: E402
from pipeline import explib  # noqa: E402
from pipeline import inference  # noqa: E402

PROG = "sweep.py"
MAX_PROCS = 1024  # nugo::Config::kMaxProcs
NAMED_TOPOLOGIES = catalogue.EMULATED
VIRTUAL_TOPOLOGIES = catalogue.VIRTUAL_MACHINES  # by name; "virtual" is catalogue.VIRTUAL, the sweep's set
LOCALITY_TARGETS = catalogue.LOCALITY_TARGETS
# P counts per profile on an emulated topology of N nodes (Ps beyond this machine's CPUs are
# oversubscribed threads: the decisions are the scheduler's, the timings only indicative).
STATS_COUNTERS = catalogue.STATS_COUNTERS
BINDINGS = ("pu", "node", "none", "auto")
# The C++ peers: mode -> (its twin in BUILD/experiments, its name in tables). They bind pu or none.
PEERS = {"tbb": ("tbb-workload", "oneTBB"), "omp": ("omp-workload", "OpenMP"),
         "fiber": ("fiber-workload", "Boost.Fiber")}
# Go as its users run it on NUMA machines today (golang/go#47831): one process per node under
# numactl --cpunodebind --membind, each with its part of a data-parallel kernel's data.
GO_PER_NODE = "go_numactl"
DIVISIBLE = ("triad", "triad_skew", "histogram", "spmv")  # go-workload -part: parts independent
MODES = ["flat", "numa", "go", GO_PER_NODE, *PEERS]
RUNTIME_NAMES = {"flat": "nugo flat", "numa": "nugo NUMA", "go": "Go", GO_PER_NODE: "Go per node (numactl)"} | \
    {m: name for m, (_, name) in PEERS.items()}
OVERSUBSCRIBED_REPS = 2
REPETITIONS = {"quick": 1, "default": 10, "full": 10}
VIRTUAL_REPETITIONS = 8
VIRTUAL_SIZES = {"quick": "tiny", "default": "small", "full": "default"}  # the virtual set's, by profile
COLUMNS = ["workload", "kind", "size", "topology", "topology_source", "emulated", "machine_kind", "timing_reported",
           "mode", "bind_asked", "bind", "runtime_env", "procs", "oversubscribed", "repetition", "ok", "seconds", "throughput",
           "work", "unit",
           "latency_model", "latency_penalty", "block_ns", "blocks", "remote_blocks",
           "arm", "placement", "numa_policy", "workers", "started_home", "pages_checked", "pages_on_node"] + \
          STATS_COUNTERS + \
          ["moved_remote_by_distance", "steals_remote_by_distance",  # "distance:count ..." (space-separated)
           "idle_ns_by_node",  # "node:ns ..." (the OS's node numbers)
           "procs_used",  # Ps that ran at least one goroutine (a short run may end before all start)
           "node_loads", "node_load_misses", "llc_load_misses", "perf_note",
           # the clock the run's times are on: real, or virtual (the virtual set); and virtual
           # time's cost model: the runtime's charges (steal, queue, migrate, wake) and the
           # program's (the latency model's remote blocks), in virtual ns
           "clock", "charged_runtime_ns", "charged_program_ns",
           # the run's seed (NUGO_SEED: the repetition's number, so that a repetition's modes
           # draw from one seed) and, in virtual time, the settings it ran with (NUGO_VIRTUAL)
           # and its schedule's fingerprint (two runs with equal ones granted the same turns at
           # the same virtual clocks)
           "seed", "virtual_setting", "fingerprint", "error"]
# perf stat's generic events: loads served by some node's memory, the misses of those that went
# to another node, and last-level cache load misses. Where the machine has no PMU they are n/a.
PERF_EVENTS = {"node-loads": "node_loads", "node-load-misses": "node_load_misses",
               "LLC-load-misses": "llc_load_misses"}


def perf_support() -> tuple[list[str] | None, str]:
    """(perf stat's command prefix, "") where the hardware counters can be read, else (None,
    why not): every row says which."""
    perf = shutil.which("perf")
    if not perf:
        return None, "n/a: no perf (apt-get install linux-perf)"
    pmus = Path("/sys/bus/event_source/devices")
    if not any((pmus / d).exists() for d in ("cpu", "cpu_core", "cpu_atom")):
        return None, "n/a: no hardware PMU (no cpu under /sys/bus/event_source/devices: a VM without one)"
    prefix = [perf, "stat", "-x,", "-e", ",".join(PERF_EVENTS)]
    try:
        probe = subprocess.run(prefix + ["--", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"n/a: perf stat failed ({e})"
    if probe.returncode != 0:
        return None, f"n/a: perf stat refused ({explib.tail(probe.stderr, 1)}; kernel.perf_event_paranoid?)"
    return prefix, ""


def read_perf(path: Path) -> dict:
    """perf stat -x, output: the counts of PERF_EVENTS, "n/a" for an event it did not count."""
    got = dict.fromkeys(PERF_EVENTS.values(), "n/a")
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return got
    for line in lines:
        cells = line.split(",")
        if len(cells) >= 3 and cells[2] in PERF_EVENTS and cells[0].strip().isdigit():
            got[PERF_EVENTS[cells[2]]] = int(cells[0])
    return got


class Topo:
    def __init__(self, name: str, spec: str, emulated: bool, described: tuple, procs: list[int] | None,
                 timing: bool, virtual: bool = False):
        self.name, self.spec, self.emulated = name, spec, emulated
        self.pus, self.nodes, self.distance, self.restriction = described
        self.fixed_procs, self.timing, self.virtual = procs, timing, virtual


def describe_topology(build: Path, spec: str) -> tuple[int, int, list[list[int]], str]:
    """(PUs, nodes with CPUs, the distance matrix, how the machine was narrowed to this
    process's CPUs or "") of a topology, from nugo-topo, which loads it as the runtime does
    (and refuses a bad one with a message naming it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUGO_")} | {"NUGO_TOPOLOGY": spec}
    try:
        out = subprocess.run([str(build / "topology" / "nugo-topo"), "--procs", "1"], env=env,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise explib.Failed(f"nugo-topo: {e} (cmake --build {build} --target nugo-topo)")
    pus = re.search(r"(\d+) PUs?,", out.stdout)
    if out.returncode != 0 or not pus:
        raise explib.Failed(out.stderr.strip() or f"nugo-topo failed on {spec!r}")
    nodes = len(re.findall(r"^node \d+(?: \(OS node \d+\))?: .*PUs ", out.stdout, re.M))
    distances, lines = [], out.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("distances ("):
            for row in lines[i + 2:]:
                cells = row.split()
                if not cells or not all(c.isdigit() for c in cells):
                    break
                distances.append([int(c) for c in cells[1:]])
    restricted = re.search(r"^  \(restricted: (.*)\)$", out.stdout, re.M)
    return int(pus.group(1)), nodes, distances, restricted.group(1) if restricted else ""


def named_spec(machine: catalogue.Machine) -> str:
    try:
        return catalogue.machine_spec(machine.file)
    except catalogue.MissingMachine as e:
        raise explib.Failed(f"--topology {machine.name}: {e}") from e


def resolve_topology(build: Path, name: str) -> Topo:
    if name == "machine":
        return Topo("machine", "", False, describe_topology(build, ""), None, True)
    if name in VIRTUAL_TOPOLOGIES:
        spec = named_spec(VIRTUAL_TOPOLOGIES[name])
        described = describe_topology(build, spec)
        return Topo(name, spec, True, described, [min(described[0], MAX_PROCS)], True, virtual=True)
    if name in NAMED_TOPOLOGIES:
        machine = NAMED_TOPOLOGIES[name]
        spec = named_spec(machine)
        procs = list(machine.procs) if machine.procs else None
        timing = machine.timings_reported
    elif name.startswith(("xml:", "synthetic:")):
        if name.startswith("xml:") and not Path(name[4:]).is_file():
            raise explib.Failed(f"--topology {name}: no such file {name[4:]}")
        spec, procs, timing = name, None, True
    else:
        raise explib.Failed(f"--topology: unknown topology '{name}' "
                            f"(machine, {', '.join(NAMED_TOPOLOGIES)}, virtual, {', '.join(VIRTUAL_TOPOLOGIES)}, "
                            "xml:PATH or synthetic:DESC)")
    return Topo(name, spec, True, describe_topology(build, spec), procs, timing)


def proc_counts(topo: Topo, profile: str, real_cpus: int) -> list[int]:
    if topo.fixed_procs:
        return topo.fixed_procs
    limit = min(topo.pus, MAX_PROCS)
    powers = [p for p in (1 << i for i in range(11)) if p <= limit]
    if limit not in powers:
        powers.append(limit)
    if not topo.emulated:
        # the real machine: every power of two up to its PUs with --full, else up to the CPUs
        # this process may use
        return powers if profile == "full" else [p for p in powers if p <= max(real_cpus, 1)]
    # emulated, in every profile: one P per node and two per node, enough to see the scheduler
    # decide (more would only oversubscribe this machine's CPUs further)
    return sorted({p for p in (topo.nodes, 2 * topo.nodes) if p <= limit})


def find_peers(build: Path, modes: list[str]) -> dict[str, tuple[Path, list[str]]]:
    """The peers of `modes` that were built: mode -> (executable, the workloads it offers). A
    missing one is left out with a message, never a failure."""
    found = {}
    for m in modes:
        if m not in PEERS:
            continue
        exe = build / "experiments" / PEERS[m][0]
        if not os.access(exe, os.X_OK):
            print(f"{PROG}: {PEERS[m][1]} ({exe.name}) is not built, so --modes {m} is left out "
                  f"(scripts/bootstrap.sh --baselines, then cmake --build {build} --target {exe.name})",
                  file=sys.stderr)
            continue
        found[m] = (exe, explib.workload_names(exe))
    return found


_host: list[str] = []


def host_kind() -> str:
    """explib.machine_kind of this machine, asked once per process."""
    if not _host:
        _host.append(explib.machine_kind(explib.virtualization()))
    return _host[0]


_placements: dict[tuple[str, int], str] = {}


def nugo_cpus(build: Path, n: int) -> str:
    """The CPUs nugo gives n Ps on this machine (NUGO_BIND=pu), grouped by node in nugo's node
    order, as the peers' --cpus takes them ("0,1/12,13"), from nugo-topo: the peers are then
    bound exactly as nugo is."""
    key = (str(build), n)
    if key not in _placements:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUGO_")}
        try:
            out = subprocess.run([str(build / "topology" / "nugo-topo"), "--procs", str(n)], env=env,
                                 capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise explib.Failed(f"nugo-topo --procs {n}: {e}")
        groups: dict[str, list[str]] = {}
        for node, cpu in re.findall(r"^\s*P\d+ -> node (\d+), PU \d+ \(real CPU (\d+)\)", out.stdout, re.M):
            groups.setdefault(node, []).append(cpu)
        if sum(len(g) for g in groups.values()) != n:
            raise explib.Failed(f"nugo-topo --procs {n} did not place {n} Ps: {out.stderr.strip()}")
        _placements[key] = "/".join(",".join(g) for g in groups.values())
    return _placements[key]


def compact(cpus: list[int]) -> str:
    """Numbers as a kernel CPU list: [0, 1, 2, 5] -> "0-2,5"."""
    ranges: list[list[int]] = []
    for c in sorted(cpus):
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in ranges)


def cpu_nodes() -> dict[int, list[int]]:
    """This machine's NUMA nodes with CPUs this process may use (the OS's numbers, from sysfs),
    each with those CPUs: under taskset, numactl --cpunodebind or a cgroup cpuset, only part of
    the machine."""
    allowed = os.sched_getaffinity(0)
    nodes = {}
    for d in sorted(Path("/sys/devices/system/node").glob("node[0-9]*"), key=lambda d: int(d.name[4:])):
        try:
            cpus = [c for c in explib.cpu_list((d / "cpulist").read_text()) if c in allowed]
        except (OSError, ValueError):
            continue
        if cpus:
            nodes[int(d.name[4:])] = cpus
    return nodes


def go_per_node_support() -> str:
    """"" where Go per node can run here, else why not."""
    nodes = cpu_nodes()
    if len(nodes) < 2:
        return (f"n/a: this process may use CPUs of {len(nodes)} NUMA node; one Go process per node under "
                "numactl needs several (it runs on a multi-socket machine)")
    if not shutil.which("numactl"):
        return "n/a: no numactl (apt-get install numactl)"
    return ""


def go_per_node_run(go_exe: Path, w: str, size: str, n: int, env: dict, timeout_s: float) -> tuple[dict, str]:
    """One run of Go per node: a go-workload process per NUMA node with CPUs, under numactl
    --physcpubind=(node K's CPUs this process may use) --membind=K (as --cpunodebind=K, without
    leaving an affinity mask), each with GOMAXPROCS = n / nodes and its part of the data
    (-part); all set up their data, say ready, and are started together (-barrier), so that
    their kernels overlap. The run's time is the slowest part's, its work the parts' sum, and it
    is right when every part is. Returns (the combined JSON, the processes' stderr)."""
    nodes = cpu_nodes()
    procs: list[subprocess.Popen] = []
    timer = threading.Timer(timeout_s, lambda: [p.kill() for p in procs])
    timer.start()
    try:
        for i, (k, cpus) in enumerate(nodes.items()):
            cmd = ["numactl", f"--physcpubind={compact(cpus)}", f"--membind={k}", str(go_exe), w, "-size", size,
                   "-part", f"{i}/{len(nodes)}", "-barrier"]
            procs.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, env=env | {"GOMAXPROCS": str(n // len(nodes))}))
        # All set up, or none runs: a part that failed before it was ready fails the run, and the
        # others are stopped (closing their stdin would not start them: they exit, status 2).
        if not all(p.stdout.readline().strip() == "ready" for p in procs):
            for p in procs:
                p.kill()
        else:
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
        outs = [p.communicate() for p in procs]
    except OSError as e:  # one did not start, or died between "ready" and "go" (a broken pipe)
        raise explib.Failed(f"the processes per node did not run: {e}")
    finally:
        timer.cancel()
        for p in procs:
            p.kill()
    errors = "".join(e for _, e in outs)
    try:
        parts = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    except (json.JSONDecodeError, IndexError):
        statuses = ", ".join(str(p.returncode) for p in procs)
        raise explib.Failed(f"a process per node gave no result (exit statuses {statuses}; killed after "
                            f"{timeout_s:.0f} s, if -9): {explib.tail(errors, 3)}")
    seconds = max(part["seconds"] for part in parts)
    work = sum(part["work"] for part in parts)
    ok = all(part["ok"] for part in parts) and all(p.returncode == 0 for p in procs)
    return (parts[0] | {"procs": n, "seconds": seconds, "work": work, "ok": ok,
                        "throughput": work / seconds if seconds > 0 else 0,
                        "result": "; ".join(f"node {k}: {part['result']}" for k, part in zip(nodes, parts))}, errors)


def up_to_date(target: Path, inputs: list[Path]) -> bool:
    """target exists and is newer than every input, file or directory (a file deleted or renamed
    changes its directory's time), as make decides. A file restored with an older time (cp -p,
    tar) is not seen: delete the target."""
    try:
        built = target.stat().st_mtime_ns
        return all(p.stat().st_mtime_ns < built for p in inputs)
    except OSError:
        return False


def build_go_twin(build: Path, runner: explib.Runner) -> Path | None:
    go = shutil.which("go")
    if not go:
        print(f"{PROG}: no `go` on PATH: the Go twins are left out (scripts/bootstrap.sh --baselines "
              "installs Go 1.19)", file=sys.stderr)
        return None
    exe = build / "go-workload"
    if up_to_date(exe, [Path(go).resolve(), explib.GO_DIR, *explib.GO_DIR.rglob("*")]):
        return exe  # go build would say so too, after reading the toolchain's every package
    try:
        runner.run([go, "build", "-o", exe, "./workloads"], cwd=explib.GO_DIR,
                   env=explib.go_environment(build), timeout_s=600)
    except explib.Failed as e:
        print(f"{PROG}: the Go twins did not build, so they are left out:\n{e}", file=sys.stderr)
        return None
    os.utime(exe)  # go build leaves a twin it finds up to date untouched; it is up to date now
    return exe


def machine_info(build: Path, topologies: list[Topo], rehearsal: str = "") -> dict:
    def cmd(argv, **kw):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60, **kw)
            return out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            return None

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    cache = {}
    cache_file = build / "CMakeCache.txt"
    if cache_file.exists():
        for line in cache_file.read_text().splitlines():
            m = re.match(r"^(CMAKE_BUILD_TYPE|CMAKE_CXX_COMPILER|CMAKE_CXX_FLAGS|CMAKE_CXX_FLAGS_RELEASE):\w+=(.*)$", line)
            if m:
                cache[m.group(1)] = m.group(2)
    boost = None
    version_hpp = Path("/usr/include/boost/version.hpp")
    if version_hpp.exists():
        m = re.search(r'#define BOOST_LIB_VERSION "([^"]+)"', version_hpp.read_text())
        boost = m.group(1).replace("_", ".") if m else None
    tbb = None
    tbb_h = Path("/usr/include/oneapi/tbb/version.h")
    if tbb_h.exists():
        v = dict(re.findall(r"#define TBB_VERSION_(MAJOR|MINOR)\s+(\d+)", tbb_h.read_text()))
        tbb = f"{v.get('MAJOR')}.{v.get('MINOR')}" if v else None
    revision = cmd(["git", "rev-parse", "HEAD"], cwd=explib.ROOT)
    dirty = cmd(["git", "status", "--porcelain", "--untracked-files=no"], cwd=explib.ROOT)
    compiler = cache.get("CMAKE_CXX_COMPILER", "c++")
    virt = explib.virtualization()
    machine = next((t for t in topologies if t.name == "machine"), None)
    return {
        # Where the rows on topology `machine` ran: hardware or a virtual machine (and which).
        "machine_kind": host_kind(),
        "virtualization": virt,
        # A rehearsal of the pipeline (scripts/dev/numa-check.sh --reproduce): its timings are not
        # results and are never quoted.
        "rehearsal": rehearsal or None,
        "cpu_model": cpu,
        "cpus_online": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpus_allowed": compact(list(os.sched_getaffinity(0))),
        "nodes_allowed": {str(k): compact(v) for k, v in cpu_nodes().items()},
        # How nugo narrowed the machine to the CPUs this process may use ("" for all of it).
        "restriction": machine.restriction if machine else None,
        "kernel": platform.release(),
        "os": cmd(["sh", "-c", ". /etc/os-release && echo \"$PRETTY_NAME\""]),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "hwloc_xml": cmd(["lstopo-no-graphics", "--of", "xml"]) or cmd(["lstopo", "--of", "xml"]),
        "numa_nodes": cmd(["sh", "-c", "ls -d /sys/devices/system/node/node* | wc -l"]),
        "compiler": (cmd([compiler, "--version"]) or compiler).splitlines()[0],
        "build_type": cache.get("CMAKE_BUILD_TYPE"),
        "cxx_flags": " ".join(filter(None, [cache.get("CMAKE_CXX_FLAGS"), cache.get("CMAKE_CXX_FLAGS_RELEASE")])),
        "git_revision": (revision or "unknown") + ("-dirty" if dirty else ""),
        "go_version": cmd(["go", "version"]),
        "boost_version": boost,  # Boost.Fiber's too
        "tbb_version": tbb,
        "openmp": "GCC's libgomp (the compiler above)",
        "topologies": {t.name: {"spec": t.spec or "this machine (hwloc)", "emulated": t.emulated,
                                "pus": t.pus, "nodes_with_cpus": t.nodes, "distance": t.distance,
                                "timing_reported": t.timing,
                                "clock": "virtual" if t.virtual else "real"}
                       for t in topologies},
    }


def parse_list(value: str | None) -> list[str] | None:
    return [v for v in value.split(",") if v] if value else None


def main() -> int:
    p = explib.parser(PROG, __doc__)
    p.add_argument("--full", action="store_true", help="large sizes, every P count (real multi-socket machines)")
    p.add_argument("--only", help="workloads, comma-separated (default: all)")
    p.add_argument("--modes", help=f"{','.join(MODES)} (default: all)")
    p.add_argument("--procs", help="P counts, comma-separated (default: per topology)")
    p.add_argument("--topology", help="topologies, comma-separated (see above)")
    p.add_argument("--virtual-build-dir", type=Path, default=explib.ROOT / "build-virtual",
                   help="the virtual-time build for the virtual set (default build-virtual)")
    p.add_argument("--bind", help="bindings, comma-separated: pu (default), node, none, auto")
    p.add_argument("--repetitions", type=int, help="runs of each configuration (1 quick, 10 otherwise)")
    p.add_argument("--seed", type=int, default=1, help="the seed of the runs' random order (default 1)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments, print the plan, run nothing")
    p.add_argument("--render", action="store_true", help="rewrite OUT/sweep.md from OUT/results.csv; run nothing")
    p.add_argument("--resume", action="store_true",
                   help="keep OUT/results.csv's successful runs and run only the rest of the plan "
                        "(reproduce.sh --resume; the caller checks that the build is the same)")
    p.add_argument("--rehearsal", metavar="WHY", default="",
                   help="label the run a rehearsal (why, e.g. 'a QEMU TCG guest'): its timings are never results")
    args = p.parse_args()
    if args.render:
        return render(args.out)
    if args.quick and args.full:
        return explib.bad_input(PROG, "--quick and --full exclude each other")
    profile = "quick" if args.quick else "full" if args.full else "default"
    size = {"quick": "tiny", "default": "default", "full": "large"}[profile]
    # The virtual set's runs take 3 to 30 s of real time at default sizes on 96 to 384 virtual
    # CPUs: a size smaller, so that its repetitions fit reproduce.sh's budget (every row says its size).
    vsize = VIRTUAL_SIZES[profile]
    # Ten a side, not fewer: the permutation test of medians has a floor where the two samples'
    # middle values leave the medians unmoved, 2 C(2k, k) / C(2n, n) with k = (n - 1) // 2 (0.0031
    # at 8 a side, 0.00076 at 10), and Holm's first step in a family of a topology's 26 rows
    # needs 0.05 / 26 = 0.0019: at 8 a side such a table could call nothing.
    reps = args.repetitions if args.repetitions is not None else REPETITIONS[profile]
    # The virtual set's families are a machine's 13 rows, under the floor's limit of 16 at 8 a
    # side (0.05 / 13 = 0.0038 > 0.0031): 8 repetitions suffice there.
    if args.repetitions is None and profile == "default" and parse_list(args.topology) == ["virtual"]:
        reps = VIRTUAL_REPETITIONS
    if reps < 1:
        return explib.bad_input(PROG, f"--repetitions {reps}: at least 1")
    build = args.build_dir.resolve()
    exe = build / "experiments" / "nugo-workload"
    if not os.access(exe, os.X_OK):
        return explib.bad_input(PROG, f"{exe}: not built (cmake --build {build} --target nugo-workload nugo-topo)")

    # ---- everything checked before anything runs ----
    try:
        known = explib.workload_names(exe)
        workloads = parse_list(args.only) or known
        for w in workloads:
            if w not in known:
                return explib.bad_input(PROG, f"--only: unknown workload '{w}' (known: {', '.join(known)})")
        modes = parse_list(args.modes) or MODES
        for m in modes:
            if m not in MODES:
                return explib.bad_input(PROG, f"--modes: unknown mode '{m}' ({', '.join(MODES)})")
        bindings = parse_list(args.bind) or ["pu"]
        for b in bindings:
            if b not in BINDINGS:
                return explib.bad_input(PROG, f"--bind: unknown binding '{b}' ({', '.join(BINDINGS)})")
        procs = None
        if args.procs:
            try:
                procs = [int(x) for x in parse_list(args.procs)]
            except ValueError:
                return explib.bad_input(PROG, f"--procs {args.procs}: not a list of numbers")
            for n in procs:
                if not 1 <= n <= MAX_PROCS:
                    return explib.bad_input(PROG, f"--procs: {n} is out of range (1 to {MAX_PROCS})")
        machine = resolve_topology(build, "machine")
        names = parse_list(args.topology)
        if names is None:
            names = ["machine"] + (["2node", "4node", "24node"] if machine.nodes == 1 else [])
        names = [v for n in names for v in (catalogue.VIRTUAL if n == "virtual" else [n])]
        topologies = [machine if n == "machine" else resolve_topology(build, n) for n in names]
        vexe = None
        if any(t.virtual for t in topologies):
            vbuild = args.virtual_build_dir.resolve()
            vexe = vbuild / "experiments" / "nugo-workload"
            if not os.access(vexe, os.X_OK) or not explib.is_virtual_build(vbuild):
                return explib.bad_input(PROG, f"--topology virtual needs the virtual-time build: {vexe} is not "
                                        "built with -DNUGO_VIRTUAL_TIME=ON (scripts/test.sh --virtual, or "
                                        "--virtual-build-dir)")
        peers = find_peers(build, modes)
    except explib.Failed as e:
        return explib.bad_input(PROG, str(e))
    except OSError as e:
        return explib.bad_input(PROG, f"{exe}: {e}")
    real_cpus = len(os.sched_getaffinity(0))

    # ---- the plan ----
    configs = []  # (topology, mode, procs, binding)
    per_node_na = go_per_node_support() if GO_PER_NODE in modes else ""
    if per_node_na:
        print(f"{PROG}: {RUNTIME_NAMES[GO_PER_NODE]}: {per_node_na}", file=sys.stderr)
    for t in topologies:
        counts = procs or proc_counts(t, profile, real_cpus)
        for n in counts:
            if n > t.pus and not (t.name == "machine" and n <= MAX_PROCS):
                return explib.bad_input(PROG, f"--procs: {n} Ps is more than the {t.pus} PUs of topology {t.name}")
        for n in counts:
            for m in modes:
                if m in ("go", GO_PER_NODE, *PEERS) and t.emulated:
                    continue  # Go and the peers cannot be shown a topology (nor virtual time)
                if m in (*PEERS, "go") and profile == "default" and not procs and n != counts[-1]:
                    continue  # Go and the C++ peers are compared at the largest P count (PeerProcs); --full runs each

                if m == GO_PER_NODE and (per_node_na or n % len(cpu_nodes()) != 0):
                    continue  # said above; or Ps that do not split evenly over the nodes
                if m in PEERS and m not in peers:
                    continue  # not built: said above
                if m == "numa" and t.nodes == 1 and "flat" in modes:
                    continue  # NUMA mode with one domain is flat mode: the same run again
                # Go binds nothing (numactl binds Go per node to its node); the peers bind pu or
                # none; virtual time binds nothing (its threads share one real CPU)
                for b in ["none"] if m == "go" or t.virtual else ["node"] if m == GO_PER_NODE else \
                        [b for b in bindings if m not in PEERS or b in ("pu", "none")]:
                    configs.append((t, m, n, b))
    if not configs:
        return explib.bad_input(PROG, "nothing to run: no mode of --modes applies to any topology")
    # A topology whose timings are not reported needs one repetition only; an oversubscribed
    # configuration (more Ps than CPUs: its timings are never quoted, its counters are what it
    # is for) OVERSUBSCRIBED_REPS in the default profile, so that the profile fits its budget.
    def wanted(t: Topo, n: int) -> int:
        if not t.timing:
            return 1
        if n > real_cpus and not t.virtual and profile == "default" and args.repetitions is None:
            return min(reps, OVERSUBSCRIBED_REPS)
        return reps
    def offers(m: str, w: str) -> bool:  # the peers have twins of some workloads only
        return (m not in peers or w in peers[m][1]) and (m != GO_PER_NODE or w in DIVISIBLE)
    runs = [(rep, t, w, m, n, b) for rep in range(1, reps + 1) for t, m, n, b in configs for w in workloads
            if rep <= wanted(t, n) and offers(m, w)]
    random.Random(args.seed).shuffle(runs)

    if args.dry_run:
        print(f"{PROG}: would run {len(runs)} runs: {len(workloads)} workloads x {len(configs)} configurations x "
              f"{reps} repetitions, {size} sizes ({vsize} on the virtual set), on "
              f"{', '.join(t.name for t in topologies)}")
        return 0
    out = args.out.resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runner = explib.Runner(timeout_s=120 if args.quick else 600, echo=False)
    go_modes = ("go", GO_PER_NODE)
    go_exe = build_go_twin(build, runner) if any(c[1] in go_modes for c in configs) else None
    if go_exe is None and any(c[1] in go_modes for c in configs):
        configs = [c for c in configs if c[1] not in go_modes]
        runs = [r for r in runs if r[3] not in go_modes]
        if not runs:
            print(f"{PROG}: nothing left to run without Go", file=sys.stderr)
            return 1
    machine_json = machine_info(build, topologies, args.rehearsal)
    (out / "machine.json").write_text(json.dumps(machine_json, indent=2) + "\n")
    perf = perf_support()
    if perf[1]:
        print(f"{PROG}: hardware counters {perf[1]}", file=sys.stderr)

    print(f"{PROG}: {len(runs)} runs: {len(workloads)} workloads x {len(configs)} configurations "
          f"(topology, mode, Ps) x {reps} repetitions, {size} sizes ({vsize} on the virtual set); "
          f"results in {out}", file=sys.stderr)
    rows, failures = [], 0
    done = finished_runs(out / "results.csv", {run_key(*r) for r in runs}) if args.resume else {}
    if args.resume:
        print(f"{PROG}: resuming: {len(done)} of {len(runs)} runs finished before, {len(runs) - len(done)} to run",
              file=sys.stderr)
    progress = explib.Progress(len(runs) - len(done))
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(done.values())  # as read: strings, rows typed again below
        for rep, t, w, m, n, b in runs:
            run_id = run_key(rep, t, w, m, n, b)
            if run_id in done:
                continue
            row = one_run(build, vexe if t.virtual else exe, go_exe, runner, logs, run_id, t, w, m, n, b, rep,
                          vsize if t.virtual else size, real_cpus,
                          perf=perf, peer=peers.get(m, (None,))[0])
            failures += not record(PROG, run_id, row, writer, f, rows)
            shown = f"{float(row['seconds']):.3f} s" if row["seconds"] != "" and t.timing else "locality only"
            progress.finished(f"{w:13} {t.name:7} {m:4} {b:4} {n:3} Ps  rep {rep}: "
                              + (shown if row["ok"] == 1 else "FAILED"))

    if done:
        rows = explib.read_results(out / "results.csv")
    summary = summarize(rows, machine_json)
    (out / "sweep.md").write_text(summary["markdown"])
    print("\n" + summary["text"])
    explib.write_json(out / "sweep.json", {"medians": summary["medians"], "failures": failures},
                      {"profile": profile, "size": size, "virtual_size": vsize, "repetitions": reps,
                       "workloads": workloads,
                       "modes": modes, "bindings": bindings, "seed": args.seed,
                       "rehearsal": args.rehearsal or None,
                       "peers": {m: {"executable": str(e), "workloads": ws} for m, (e, ws) in peers.items()},
                       "go_per_node": per_node_na or f"numactl, one process per node of {list(cpu_nodes())}",
                       "order": "random (seeded)", "cpus_usable": real_cpus,
                       "topologies": [t.name for t in topologies],
                       # the virtual set's rows ran this build's binary, not BUILD's
                       "virtual_build": str(vexe) if vexe else None,
                       "configurations": [[t.name, m, n, b] for t, m, n, b in configs]},
                      runner.commands[:1] + [f"{exe} WORKLOAD --size {size} (NUGO_* per run: results.csv)"]
                      + ([f"{vexe} WORKLOAD --size {vsize} (the virtual set: NUGO_VIRTUAL="
                          f"{catalogue.virtual_setting()})"] if vexe else []))
    if failures:
        print(f"{PROG}: {failures} of {len(runs)} runs failed (logs in {logs})", file=sys.stderr)
        return 1
    return 0


def run_key(rep, t, w, m, n, b) -> str:
    """A run's name in the plan, its logs and --resume."""
    return f"{getattr(t, 'name', t)}-{m}-{b}-p{n}-{w}-r{rep}"


def finished_runs(path: Path, planned: set[str]) -> dict[str, dict]:
    """The successful runs of an interrupted sweep's results.csv that its plan still has, by run
    key: a failed run (perhaps the one the interruption killed) runs again, and a last row cut
    short by the interruption is dropped."""
    if not path.exists():
        return {}
    done = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if None in row.values() or None in row or row.get("ok") != "1":
                continue  # cut short, or failed
            key = run_key(row["repetition"], row["topology"], row["workload"], row["mode"], row["procs"],
                          row["bind_asked"])
            if key in planned:
                done[key] = row
    return done


def render(out: Path) -> int:
    """sweep.md again from an earlier run's results.csv (after a change to the summary)."""
    try:
        rows = explib.read_results(out / "results.csv")
    except OSError as e:
        return explib.bad_input(PROG, f"--render: {e}")
    try:
        machine = json.loads((out / "machine.json").read_text())
    except (OSError, json.JSONDecodeError):
        machine = {}
    summary = summarize(rows, machine)
    (out / "sweep.md").write_text(summary["markdown"])
    print(summary["text"])
    return 0


def record(prog: str, run_id: str, row: dict, writer: csv.DictWriter, f, rows: list) -> bool:
    """Writes a run's row to results.csv at once (a crash later keeps what ran), keeps it in rows,
    and says a failure on stderr; whether the run succeeded."""
    if row["ok"] != 1:
        print(f"{prog}: FAILED {run_id}: {row['error']}", file=sys.stderr)
    writer.writerow(row)
    f.flush()
    rows.append(row)
    return row["ok"] == 1


class Arm:
    """What a run's runtime and program do: the mode, the placement of the memory-bound
    workloads' goroutines (--placement: go_on or go) and NUMA mode's policy (NUGO_NUMA)."""

    def __init__(self, name: str, mode: str, placement: str = "go_on", numa: str = ""):
        self.name, self.mode, self.placement, self.numa = name, mode, placement, numa


def one_run(build, exe, go_exe, runner, logs, run_id, t, w, m, n, b, rep, size, real_cpus,
            arm: Arm | None = None, penalty: float | None = None, perf: tuple | None = None,
            peer: Path | None = None, model: dict | None = None) -> dict:
    """One run of workload w, as a results.csv row. arm: placement and NUMA policy (default: the
    mode's own, go_on); penalty: the latency model's remote/local ratio (default: the distance
    matrix's); perf: perf_support()'s answer, or None for no hardware counters; peer: the twin
    of a peer's mode (PEERS); model: virtual time's constants where they differ from
    catalogue.VIRTUAL_MODEL (sensitivity.py). nugo's runs are seeded with the repetition's
    number (NUGO_SEED)."""
    arm = arm or Arm(m, m)
    row = dict.fromkeys(COLUMNS, "")
    virtual = t.virtual
    row |= {"workload": w, "size": size, "topology": t.name, "topology_source": t.spec or "this machine (hwloc)",
            "emulated": int(t.emulated), "clock": "virtual" if virtual else "real",
            "timing_reported": int(t.timing), "mode": m, "procs": n,
            # in virtual time every virtual CPU runs alone: nothing is folded onto another
            "oversubscribed": int(n > real_cpus and not virtual), "repetition": rep, "ok": 0, "latency_model": 0,
            "bind_asked": b, "bind": "none" if m == "go" else "", "arm": arm.name, "machine_kind": host_kind()}
    stats_file = logs / f"{run_id}.stats.json"
    if m == GO_PER_NODE:
        if go_exe is None:
            row["error"] = "no Go"
            return row
        env = explib.go_environment(build)
        nodes = cpu_nodes()
        row["runtime_env"] = (f"numactl --physcpubind=CPUS --membind=K per node K of {list(nodes)}, "
                              f"GOMAXPROCS={n // len(nodes)} each")
        try:
            result, errors = go_per_node_run(go_exe, w, size, n, env, runner.timeout_s)
        except explib.Failed as e:
            row["error"] = str(e).splitlines()[0]
            return row
        (logs / f"{run_id}.out").write_text(json.dumps(result) + "\n")
        (logs / f"{run_id}.err").write_text(errors)
        row |= {"kind": result["kind"], "seconds": result["seconds"], "throughput": result["throughput"],
                "work": result["work"], "unit": result["unit"], "bind": "node"}
        if not result["ok"]:
            row["error"] = result["result"]
            return row
        row["ok"] = 1
        return row
    if m == "go":
        if go_exe is None:
            row["error"] = "no Go"
            return row
        cmd = [go_exe, w, "-size", size]
        env = explib.go_environment(build) | {"GOMAXPROCS": str(n)}
        row["runtime_env"] = f"GOMAXPROCS={n}"
    elif m in PEERS:
        if peer is None:
            row["error"] = f"{PEERS[m][1]} not built"
            return row
        cmd = [peer, w, "--size", size, "--procs", str(n), "--bind", b]
        if b == "pu":  # on the CPUs nugo's Ps run on, grouped by node as nugo places them
            try:
                cmd += ["--cpus", nugo_cpus(build, n)]
            except explib.Failed as e:
                row["error"] = str(e)
                return row
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NUGO_", "OMP_", "GOMP_"))}
    else:
        cmd = [exe, w, "--size", size, "--placement", arm.placement]
        if penalty is not None:
            cmd += ["--latency-penalty", str(penalty)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUGO_")}
        env |= {"NUGO_PROCS": str(n), "NUGO_MODE": m, "NUGO_STATS": str(stats_file), "NUGO_SEED": str(rep)}
        if arm.numa:
            env["NUGO_NUMA"] = arm.numa
        if b != "auto":
            env["NUGO_BIND"] = b
        if t.spec:
            env["NUGO_TOPOLOGY"] = t.spec
        if virtual:
            env["NUGO_VIRTUAL"] = row["virtual_setting"] = catalogue.virtual_setting(model)
        row["runtime_env"] = " ".join(f"{k}={v}" for k, v in sorted(env.items())
                                      if k.startswith("NUGO_") and k != "NUGO_STATS")
    perf_file = logs / f"{run_id}.perf"
    if perf and perf[0]:
        cmd = perf[0] + ["-o", perf_file, "--"] + cmd
    try:
        done = runner.run(cmd, env=env, check=False)
    except explib.Failed as e:
        row["error"] = str(e).splitlines()[0]
        return row
    (logs / f"{run_id}.out").write_text(done.stdout)
    (logs / f"{run_id}.err").write_text(done.stderr)
    if perf and perf[0]:
        row |= read_perf(perf_file)
    elif perf:
        row |= dict.fromkeys(PERF_EVENTS.values(), "n/a") | {"perf_note": perf[1]}
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        row["error"] = f"exit {done.returncode}, no JSON: {explib.tail(done.stderr, 3)}"
        return row
    row |= {"kind": result["kind"], "seconds": result["seconds"], "throughput": result["throughput"],
            "work": result["work"], "unit": result["unit"],
            "latency_model": int(result.get("latency_model", False)),
            "block_ns": result.get("block_ns", ""), "blocks": result.get("blocks", ""),
            "remote_blocks": result.get("remote_blocks", "")}
    if result["kind"] == "memory" and m in ("flat", "numa"):
        none_blank = lambda v: "" if v is None else v  # noqa: E731
        row |= {"placement": result["placement"], "workers": result["workers"],
                "started_home": result["started_home"],
                "latency_penalty": none_blank(result["latency_penalty"]),
                "pages_checked": none_blank(result["pages_checked"]),
                "pages_on_node": none_blank(result["pages_on_node"])}
    if m in PEERS:
        row |= {"bind": result["bind"], "runtime_env": result["runtime_env"]}
        # Asked pu, bound pu; asked none, bound none or (oneTBB's node arenas) to the nodes.
        if result["mode"] != m or result["procs"] != n or (result["bind"] == "pu") != (b == "pu"):
            row["error"] = f"ran {result['mode']} at {result['procs']} workers bound {result['bind']}, not {m} at {n} bound {b}"
            return row
    elif m != "go":
        if result["mode"] != m or result["procs"] != n:
            row["error"] = f"ran {result['mode']} at {result['procs']} Ps, not {m} at {n}"
            return row
        try:
            stats = json.loads(stats_file.read_text())
            totals = stats["totals"]
            row["bind"] = stats["bind"]  # what the runtime resolved, not what was asked
            row["seed"] = stats["seed"]
            row["numa_policy"] = stats["numa_policy"]
            if b != "auto" and stats["bind"] != b:
                row["error"] = f"asked NUGO_BIND={b}, the runtime bound {stats['bind']}"
                return row
            row |= {k: totals[k] for k in STATS_COUNTERS}
            for key in ("moved_remote_by_distance", "steals_remote_by_distance"):
                row[key] = " ".join(f"{d}:{c}" for d, c in sorted(totals[key].items(), key=lambda x: int(x[0])))
            row["idle_ns_by_node"] = " ".join(f"{nd['node']}:{nd['idle_ns']}" for nd in stats["nodes"])
            row["procs_used"] = sum(1 for pp in stats["ps"] if pp["runs"] > 0)
            clock = stats.get("clock", {"kind": "real"})
            if (clock["kind"] == "virtual") != virtual:
                row["error"] = f"ran on the {clock['kind']} clock, not the {row['clock']} one"
                return row
            if virtual:
                row["fingerprint"] = clock["fingerprint"]
                charged = clock["charged_ns"]
                row["charged_runtime_ns"] = sum(charged[k] for k in ("steal", "queue", "migrate", "wake"))
                row["charged_program_ns"] = charged["program"]
        except (OSError, json.JSONDecodeError, KeyError) as e:
            row["error"] = f"statistics missing or malformed in {stats_file}: {e}"
            return row
    if done.returncode != 0 or not result["ok"]:
        row["error"] = f"exit {done.returncode}: {result.get('result', '')}"
        return row
    row["ok"] = 1
    return row


PEERS_NOTE = (
    "Each runtime's median seconds (95% bootstrap confidence interval) and nugo's time over it, "
    "flat/X, with the bootstrap 95% interval of the ratio: above 1, X is faster; '*': a difference "
    "that stands after Holm's correction within the table (pipeline/inference.py), '~': none "
    "shown. nugo's rows are flat mode "
    "(on one node NUMA mode is the same run). The C++ peers are bound as nugo is (bind); Go binds "
    "nothing. A runtime without a twin of a workload shows '-'. Oversubscribed P counts are left "
    "out. Twins and their departures: experiments/baselines/README.md, \"The peers\".")


def median_spread(m: dict | None) -> explib.Spread | None:
    """A median of summarize()'s list (sweep.json's "medians") as a Spread, or None."""
    return m and explib.Spread(m["seconds_median"], m["seconds_min"], m["seconds_max"], m["n"], *m["seconds_ci95"])


def peers_tables(rows: list[dict], by_key: dict, groups: dict) -> list[tuple[str, list[str], list[list]]]:
    """Per workload kind: nugo (flat) against every other runtime that ran on `machine`, at each
    P count that is not oversubscribed, as times and time ratios with intervals (the ratio's own,
    Holm-corrected within the kind's table: pipeline/inference.py). groups: summarize()'s
    seconds by key."""
    others = [m for m in ("go", GO_PER_NODE, *PEERS) if any(k[3] == m for k in by_key)]
    if not any(m in PEERS for m in others):
        return []
    kinds: dict[str, set] = {}
    for r in rows:
        if r["ok"] == 1 and r["topology"] == "machine" and r["mode"] == "flat" and not r["oversubscribed"]:
            kinds.setdefault(r["kind"], set()).add((r["workload"], r["procs"], r["bind_asked"]))

    def spread(key):
        return median_spread(by_key.get(key))

    tables = []
    for kind in ("compute", "memory", "communication"):
        def key(w, n, b, m):
            return ("machine", w, n, m, {"go": "none", GO_PER_NODE: "node"}.get(m, b))
        family = {(w, n, b, m): inference.compare(groups[key(w, n, b, "flat")], groups[key(w, n, b, m)])
                  for w, n, b in kinds.get(kind, ()) for m in others
                  if key(w, n, b, "flat") in groups and key(w, n, b, m) in groups}
        inference.judge(family)
        body = []
        for w, n, b in sorted(kinds.get(kind, ())):
            flat = spread(("machine", w, n, "flat", b))
            cells = [x.with_ci() if (x := spread(key(w, n, b, m))) else "-" for m in others]
            ratios = [inference.cell(family.get((w, n, b, m))) for m in others]
            body.append([w, n, b, flat.with_ci() if flat else "-", *cells, *ratios])
        if body:
            headers = ["workload", "Ps", "bind", "nugo flat s", *(f"{RUNTIME_NAMES[m]} s" for m in others),
                       *(f"flat/{RUNTIME_NAMES[m]}" for m in others)]
            tables.append((f"{kind} workloads", headers, body))
    return tables


def provenance(machine: dict) -> str:
    """What a reader must know before any number of the run: where `machine` ran (hardware or a
    virtual machine), whether the process had all of it, and whether the run is a rehearsal."""
    if not machine:
        return ""
    lines = [f"Ran on {machine.get('machine_kind', 'an unknown machine')}: {machine.get('cpu_model', '?')}, "
             f"{machine.get('cpus_usable', '?')} of {machine.get('cpus_online', '?')} CPUs usable "
             f"({machine.get('cpus_allowed', '?')}), NUMA nodes with usable CPUs "
             f"{', '.join(machine.get('nodes_allowed') or {}) or '?'}."]
    if machine.get("restriction"):
        lines.append(f"The process had part of the machine: nugo used {machine['restriction']}.")
    if machine.get("machine_kind", "").startswith("a QEMU guest"):
        lines.append("Software emulation: the timings describe QEMU, not the runtimes.")
    if machine.get("rehearsal"):
        lines.append(f"REHEARSAL ({machine['rehearsal']}): this run checks the pipeline; "
                     "none of its timings is a result, and none is quoted.")
    return " ".join(lines)


def summarize(rows: list[dict], machine: dict | None = None) -> dict:
    """Medians with their 95% confidence intervals per topology, workload, P count and binding,
    beside each other by mode; and the locality counters per topology and mode. machine:
    machine.json, whose provenance heads the tables."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if r["ok"] == 1 and r["timing_reported"] == 1:
            key = (r["topology"], r["workload"], r["procs"], r["mode"], r["bind_asked"])
            groups.setdefault(key, []).append(float(r["seconds"]))
    flags = {(r["topology"], r["workload"]): (r["emulated"], r["latency_model"]) for r in rows if r["ok"] == 1}
    over = {(r["topology"], r["procs"]): r["oversubscribed"] for r in rows if r["mode"] != "go"}
    medians = [{"topology": k[0], "workload": k[1], "procs": k[2], "mode": k[3], "bind": k[4],
                "emulated": bool(flags[k[:2]][0]), "latency_model": bool(flags[k[:2]][1]),
                "oversubscribed": bool(over.get((k[0], k[2]), 0)),
                "seconds_median": s.median, "seconds_min": s.lo, "seconds_max": s.hi,
                "seconds_ci95": [s.ci_lo, s.ci_hi], "n": s.n}
               for k, v in sorted(groups.items()) if (s := explib.spread(v))]
    by_key = {(m["topology"], m["workload"], m["procs"], m["mode"], m["bind"]): m for m in medians}
    emulated = {r["topology"]: r["emulated"] for r in rows}
    clocks = {r["topology"]: r.get("clock") or "real" for r in rows}

    def label(t: str) -> str:
        return t + (" (virtual)" if clocks[t] == "virtual" else " (emulated)" if emulated[t] else "")
    timing_rows = []
    compared = sorted({(k[0], k[1], k[2], k[4]) for k in by_key if k[3] in ("flat", "numa")}) or \
        sorted({(k[0], k[1], k[2], "none") for k in by_key})
    # flat against NUMA mode and against Go, each ratio with its interval and a permutation test,
    # Holm-corrected within a topology's rows (pipeline/inference.py).
    tests: dict[tuple, inference.Comparison] = {}
    for other in ("numa", "go"):
        for topo in sorted({k[0] for k in compared}):
            family = {}
            for t, w, n, b in compared:
                a = groups.get((t, w, n, "flat", b))
                x = groups.get((t, w, n, other, "none" if other == "go" else b))
                if t == topo and a and x:
                    family[(t, w, n, b, other)] = inference.compare(a, x)
            tests |= inference.judge(family)
    for t, w, n, b in compared:
        cells = {}
        for mode in ("flat", "numa", "go"):
            cells[mode] = median_spread(by_key.get((t, w, n, mode, "none" if mode == "go" else b)))
        oversub = bool(over.get((t, n), 0))
        timing_rows.append([label(t), w, n, b, *(c.with_ci() if c else "-" for c in cells.values()),
                            inference.cell(tests.get((t, w, n, b, "numa")), oversub),
                            inference.cell(tests.get((t, w, n, b, "go")), oversub)])
    headers = ["topology", "workload", "Ps", "bind", "flat s", "numa s", "Go s", "flat/numa", "flat/Go"]

    # By P count: with one P per node every steal is necessarily remote, so summing P counts
    # would mix two different questions.
    loc: dict[tuple, dict] = {}
    for r in rows:
        if r["ok"] == 1 and r["mode"] in ("flat", "numa") and r["runs"] != "":
            acc = loc.setdefault((r["topology"], r["procs"], r["mode"], r["bind_asked"]),
                                 dict.fromkeys(STATS_COUNTERS + ["blocks", "remote_blocks"], 0))
            for k in acc:
                acc[k] += int(r[k] or 0)
    loc_rows = []
    for (t, n, m, b), a in sorted(loc.items()):
        steals = a["steals_same_node"] + a["steals_remote"]
        loc_rows.append([label(t), n, m, b,
                         explib.fmt(a["runs_home"] / a["runs"] if a["runs"] else None),
                         explib.fmt(a["steals_remote"] / steals if steals else None),
                         a["moved_remote"], explib.fmt(a["remote_blocks"] / a["blocks"] if a["blocks"] else None)])
    loc_headers = ["topology", "Ps", "mode", "bind", "runs at home", "steals remote", "moved across nodes", "remote blocks"]
    note = ("Seconds: median (95% bootstrap confidence interval) over the repetitions, run in a "
            "random interleaved order, kernel time only. flat/numa > 1: NUMA mode faster, with the "
            "bootstrap 95% interval of the ratio; '*': a difference that stands after Holm's correction "
            "within the topology's rows (pipeline/inference.py), '~': none shown. Binding (bind) is the same in both "
            "modes of a row; Go binds nothing. Oversubscribed: more Ps than CPUs, not to be quoted. "
            "Emulated topologies measure the scheduler's decisions; their memory-bound rows ran "
            "with the emulated memory latency model (latency_model = 1 in results.csv), not on "
            "real remote memory. Virtual topologies ran in virtual time (clock = virtual in "
            "results.csv): their seconds are virtual seconds on a virtual machine of that many CPUs, "
            "run one thread at a time on this one, with the cost model's charges; they are not "
            "oversubscribed.")
    targets = locality_targets(rows, label)
    peer_tables = peers_tables(rows, by_key, groups)
    text = (explib.table(timing_rows, headers) + "\n\n" + explib.table(loc_rows, loc_headers) + "\n\n" + note + "\n"
            + (f"\nlocality targets\n\n{explib.table(targets[1], targets[0])}\n{targets[2]}\n" if targets else "")
            + "".join(f"\n{title}\n\n{explib.table(t_rows, t_headers)}\n" for title, t_headers, t_rows in peer_tables))
    said = provenance(machine or {})
    if said:
        text = said + "\n\n" + text
    kind = (machine or {}).get("machine_kind")
    md = ("# Workload sweep\n\n" + (said + "\n\n" if said else "") + explib.table(timing_rows, headers, markdown=True) + "\n\n## Locality (every workload and repetition summed, by P count)\n\n"
          + explib.table(loc_rows, loc_headers, markdown=True) + "\n\n" + note + "\n")
    if targets:
        md += ("\n## Locality targets\n\n" + explib.table(targets[1], targets[0], markdown=True) + "\n\n"
               + targets[2] + "\n")
    if peer_tables:
        md += (f"\n## nugo against the peers (this machine{': ' + kind if kind else ''})\n\n" + PEERS_NOTE + "\n"
               + "".join(f"\n### {title}\n\n{explib.table(t_rows, t_headers, markdown=True)}\n"
                         for title, t_headers, t_rows in peer_tables))
    return {"medians": medians, "text": text, "markdown": md,
            "targets": [dict(zip(targets[0], r)) for r in targets[1]] if targets else []}


def locality_targets(rows: list[dict], label) -> tuple[list[str], list[list], str] | None:
    """The locality targets judged per topology, P count and workload, on multi-node machines
    whose Ps are not folded onto fewer CPUs (real ones, and virtual ones): NUMA mode's share of
    runs at home, and its goroutines moved across nodes per run against flat mode's (means over
    each mode's successful runs). A row without flat mode's runs is shown, not judged. None when
    no such row exists."""
    acc: dict[tuple, dict] = {}
    nodes_seen: dict[tuple, set] = {}  # the nodes with Ps, per topology and P count
    for r in rows:
        if r["ok"] != 1 or r["mode"] not in ("flat", "numa") or r["runs"] == "" or int(r["oversubscribed"] or 0):
            continue
        if int(r["emulated"] or 0) and (r.get("clock") or "real") != "virtual":
            continue  # folded onto this machine's CPUs: the decisions are distorted
        for pair in (r["idle_ns_by_node"] or "").split():
            nodes_seen.setdefault((r["topology"], r["procs"]), set()).add(pair.split(":")[0])
        a = acc.setdefault((r["topology"], r["procs"], r["workload"], r["mode"]),
                           dict.fromkeys(("n", "runs", "runs_home", "moved_remote"), 0))
        a["n"] += 1
        a["runs"] += int(r["runs"] or 0)
        a["runs_home"] += int(r["runs_home"] or 0)
        # go_on's placement of a new goroutine on its data's node is not a migration
        # (exact with go_on=pinned, the default: each such placement is one move when its node
        # takes it; numa/README.md, "Statistics")
        a["moved_remote"] += max(0, int(r["moved_remote"] or 0) - int(r.get("placed_remote") or 0))
    body, judged, met = [], 0, 0
    for (t, n, w, m), a in sorted(acc.items()):
        if m != "numa" or len(nodes_seen.get((t, n), ())) < 2:
            continue
        flat = acc.get((t, n, w, "flat"))
        home = a["runs_home"] / a["runs"] if a["runs"] else None
        home_ok = home is not None and home >= LOCALITY_TARGETS["runs_home"]
        moved, flat_moved = a["moved_remote"] / a["n"], flat["moved_remote"] / flat["n"] if flat else None
        if flat is None:
            body.append([label(t), n, w, explib.fmt(home), "met" if home_ok else "NOT met",
                         explib.fmt(moved), "-", "-", "n/a (no flat run)"])
            continue
        ratio = moved / flat_moved if flat_moved else None
        moved_ok = moved == 0 or (ratio is not None and ratio <= LOCALITY_TARGETS["moved_remote_vs_flat"])
        judged += 1
        met += home_ok and moved_ok
        body.append([label(t), n, w, explib.fmt(home), "met" if home_ok else "NOT met",
                     explib.fmt(moved), explib.fmt(flat_moved),
                     explib.fmt(ratio) if ratio is not None else "-", "met" if moved_ok else "NOT met"])
    if not body:
        return None
    headers = ["topology", "Ps", "workload", "NUMA runs at home", ">= 95%", "NUMA moved across nodes per run",
               "flat moved per run", "NUMA/flat", "<= 10%"]
    note = (f"Both targets met in {met} of {judged} rows with both modes. Moved across nodes: moved_remote "
            "less placed_remote (go_on's placement of a new goroutine on its data's node, before its first "
            "run, is not a migration), the mean per run of each mode. Judged only where the Ps are not "
            "folded onto fewer CPUs (real multi-node machines, virtual ones).")
    return headers, body, note


if __name__ == "__main__":
    sys.exit(main())
