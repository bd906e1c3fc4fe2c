"""The pipeline's constants, each defined once: the machines it emulates and runs in virtual
time, the runtime's statistics counters and the locality targets. Every runner and tool
imports them from here (sweep.py, numa.py, numa_policies.py, virtual.py, plot.py, stats.py).

Machines are the real machines' hwloc XML files in topology/machines/ (its README gives their
provenance and distances). There is no synthetic stand-in: a file that is missing is an error
that names it (machine_spec), never a substitute shape.
"""
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MACHINES_DIR = ROOT / "topology" / "machines"


@dataclass(frozen=True)
class Machine:
    """A named machine of the pipeline."""
    name: str
    file: str                          # in topology/machines/
    procs: tuple[int, ...] | None = None  # fixed P counts; None: the profile's
    timings_reported: bool = True      # False: run for its locality counters only
    virtual: bool = False              # run in virtual time, one P per PU


# The sweep's emulated machines (sweep.py --topology 2node,4node,24node).
EMULATED = {
    "2node": Machine("2node", "xeon-2socket-2node-24pu.xml"),
    "4node": Machine("4node", "xeon-4socket-4node-96pu.xml"),
    # 48 Ps folded onto this machine's CPUs measure nothing: counters only.
    "24node": Machine("24node", "em64t-24node-384pu.xml", (48,), timings_reported=False),
}
# The virtual set (sweep.py --topology virtual), each at one P per PU in virtual time.
VIRTUAL = {
    "v2x16": Machine("v2x16", "xeon-2socket-2node-32pu.xml", virtual=True),
    "v4x24": Machine("v4x24", "xeon-4socket-4node-96pu.xml", virtual=True),
    "v24x16": Machine("v24x16", "em64t-24node-384pu.xml", virtual=True),
}
# The hierarchy's trial (hierarchy.py): the ablation's arms in virtual time at one P per PU, on
# machines whose nodes have many Ps each, two of them with more than one remote tier: the
# Cluster-on-Die Xeon (4 nodes of 7, remote 21 and 31) and the em64t (24 nodes of 16, remote
# 50, 65 and 79). HIERARCHY_DEFAULT is the default profile's; --full runs them all.
HIERARCHY = {
    "v4x7": Machine("v4x7", "xeon-2socket-cod-4node-28pu.xml", virtual=True),
    **VIRTUAL,
}
HIERARCHY_DEFAULT = ("v4x7", "v4x24", "v24x16")
# Every machine the pipeline may run in virtual time, by name.
VIRTUAL_MACHINES = VIRTUAL | HIERARCHY
# The locality runs of numa.py: two Ps per node, so that a node's Ps can rob each other before
# anyone robs across nodes: (machine file, NUGO_PROCS).
LOCALITY = [("xeon-2socket-2node-24pu.xml", 4), ("xeon-4socket-4node-96pu.xml", 8)]
# numa_policies.py --virtual: the policies on the virtual set's 2- and 4-socket machines.
POLICIES_VIRTUAL = [("v2x16", 32), ("v4x24", 96)]
# virtual.py's large machine: the 24-node em64t, flat mode.
VALIDATION_BIG = "em64t-24node-384pu.xml"

# The latency model's remote/local penalty as measured: remote against local DRAM latency on a
# 2-socket Cascade Lake (Intel MLC; ../shared/reference/numa-and-peers.md). The ablation's and
# the hierarchy's trial's measured level, and the line the ablation's figures draw.
MEASURED_PENALTY = 1.74

# Virtual time's model constants as every virtual run of the pipeline gives them (NUGO_VIRTUAL;
# core/src/vtime/README.md), in ns: none is left to measurement, so that no run depends on
# what a measurement happened to find. wake is the median one-way futex hand-off measured on
# the development VM (6-8 us), quantum and the line prices the runtime's defaults.
VIRTUAL_MODEL = {"quantum": 50_000, "wake": 7_000, "line": 48, "remote_line": 122}
# The sensitivity step's constants (sensitivity.py): each of the model's, and the memory-bound
# workloads' latency penalty (the extra cost of a remote block, penalty - 1, scaled), halved
# and doubled. The signal's cost is not among them: the model has no such constant, a signal
# costs the CPU time it really takes on this machine.
SENSITIVITY_CONSTANTS = ("quantum", "wake", "line", "remote_line", "penalty")
SENSITIVITY_FACTORS = (0.5, 2.0)


def virtual_setting(model: dict | None = None) -> str:
    """NUGO_VIRTUAL's value for a run with the model's constants (VIRTUAL_MODEL by default)."""
    m = VIRTUAL_MODEL | (model or {})
    return ",".join(f"{k}={int(m[k])}ns" for k in ("quantum", "wake", "line", "remote_line"))


class MissingMachine(Exception):
    """A machine file the pipeline needs is not in topology/machines/."""


def machine_path(file: str) -> Path:
    path = MACHINES_DIR / file
    if not path.is_file():
        raise MissingMachine(f"the machine file {path} is missing (topology/machines/README.md); "
                             "a clone of the repository has it: nothing is substituted for it")
    return path


def machine_spec(file: str) -> str:
    """NUGO_TOPOLOGY for one of topology/machines/'s files."""
    return f"xml:{machine_path(file)}"


# The counters of the runtime's statistics (NUGO_STATS; nugo/stats.hpp), in the order of
# kCounterKeys (core/src/obs/stats.hpp): integers in "totals", in every entry of "nodes" (with
# "node", the OS node number) and of "ps". tests/catalogue_test.py checks the two lists agree.
STATS_COUNTERS = ["created", "runs", "runs_home", "runs_away", "steals_same_node", "steals_remote",
                  "moved_same_node", "moved_remote", "globrunq_own", "globrunq_remote",
                  "wakeups_cross_node", "preemptions", "idle_ns", "placed", "placed_remote"]

# NUMA mode's locality targets, judged where the Ps are not folded (real or virtual machines):
# at least this share of goroutine runs on their home node, and at most this many goroutines
# moved across nodes per one that flat mode moves.
LOCALITY_TARGETS = {"runs_home": 0.95, "moved_remote_vs_flat": 0.10}


# ---- How long a run takes: reproduce.sh's estimate (scripts/pipeline/manifest.py estimate) ----
# Each step's seconds in a reference run of each profile on this project's 2-CPU VM, and the
# seconds of the calibration (CALIBRATION: workload, size, best of three, flat mode at 1 P) on
# it; a machine's estimate scales them by its own calibration, and the sweep's by its plan's
# runs (REFERENCE_SWEEP_RUNS). quick: the run/run.json of reproduce.sh --quick at 7462521.
# default: the default run at 5e03ec3 (run.json: sweep of 1,068 runs, ablation, preempt, numa,
# plot, claims, paper, report as measured); micro, net, trace and virtual are that run's times
# scaled to the shorter benchmark times and the smaller default plans that followed it (micro,
# net and the tracer at 0.4 to 0.6 of their benchmark time; the hierarchy's 1,320 runs of
# 2,520 and the sensitivity's eight repetitions of ten); preempt, in both, with the four
# whole-program workloads added after them at their flat 2-P sweep times.
CALIBRATION = ("fib", "default", 0.13)
STEP_SECONDS = {
    "quick": {"sweep": 3, "ablation": 1, "micro": 30, "preempt": 85, "net": 45, "numa": 10, "trace": 19,
              "virtual": 12, "plot": 7, "claims": 1, "paper": 7, "report": 2},
    "default": {"sweep": 941, "ablation": 142, "micro": 190, "preempt": 215, "net": 130, "numa": 68, "trace": 70,
                "virtual": 900, "plot": 11, "claims": 1, "paper": 5, "report": 1},
}
REFERENCE_SWEEP_RUNS = {"quick": 228, "default": 1068}
VIRTUAL_STEPS = ("virtual",)
