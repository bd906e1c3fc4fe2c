"""The sweep's own numbers: runs, failures, repetitions, the machine, locality by node count.

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations


from pipeline.figures.common import Run, PUBLISHED_REMOTE_LATENCY, tex

# Every \\num macro this module writes.
MACROS = (
    "GitRevision",
    "LatencyRemoteBlocksFlat",
    "LatencyRemoteFactorTwoNode",
    "MachineCompiler",
    "MachineCpu",
    "MachineCpus",
    "MachineKernel",
    "MachineKind",
    "MachineNodes",
    "PublishedRemoteLatencyHigh",
    "PublishedRemoteLatencyLow",
    "ResultsDir",
    "SweepFailed",
    "SweepRepetitions",
    "SweepRuns",
    "SweepSize",
    "SweepWorkloads",
    "TopologySource",
)


def draw(p: Run) -> None:
    p.na("SweepRuns", "SweepFailed", "SweepWorkloads", "SweepRepetitions", "SweepSize", "MachineCpu",
            "MachineCpus", "MachineKind", "MachineKernel", "MachineCompiler", "GitRevision", "MachineNodes", "ResultsDir",
            "LatencyRemoteFactorTwoNode", "PublishedRemoteLatencyLow", "PublishedRemoteLatencyHigh",
            "LatencyRemoteBlocksFlat")
    src = p.where("results.csv")
    p.number("SweepRuns", len(p.rows), src)
    p.number("SweepFailed", sum(1 for r in p.rows if r["ok"] != 1), src)
    p.number("SweepWorkloads", len({r["workload"] for r in p.rows}), src)
    p.number("SweepRepetitions", max((r["repetition"] for r in p.rows), default=0), src)
    p.number("SweepSize", tex(p.rows[0]["size"]) if p.rows else None, src)
    m = {k: (v if v is not None else "n/a") for k, v in p.machine.items()}
    p.number("MachineCpu", tex(str(m.get("cpu_model", "n/a")).replace("(R)", "").replace("(TM)", "")), "machine.json")
    p.number("MachineCpus", p.cpus or None, "machine.json")
    p.number("MachineKind", tex(m.get("machine_kind", "n/a")), "machine.json")
    p.number("MachineKernel", tex(m.get("kernel", "n/a")), "machine.json")
    p.number("MachineCompiler", tex(m.get("compiler", "n/a")), "machine.json")
    revision = str(m.get("git_revision", "n/a"))
    p.number("GitRevision", tex(revision[:12] + ("-dirty" if revision.endswith("-dirty") else "")), "machine.json")
    p.number("MachineNodes", p.nodes("machine") if "machine" in p.topologies else None, "machine.json")
    p.number("ResultsDir", p.where("."), "")
    emulated = sorted(t for t, v in p.topologies.items() if v.get("emulated"))
    p.number("TopologySource", p.topology_source(emulated) if emulated else None, "machine.json")
    p.number("LatencyRemoteFactorTwoNode", distance_factor(p, "2node"), "machine.json")
    p.number("PublishedRemoteLatencyLow", PUBLISHED_REMOTE_LATENCY[0], "shared/reference/numa-and-peers.md")
    p.number("PublishedRemoteLatencyHigh", PUBLISHED_REMOTE_LATENCY[1], "shared/reference/numa-and-peers.md")
    modelled = [r for r in p.rows if r["latency_model"] and r["blocks"]]
    blocks = sum(int(r["blocks"]) for r in modelled if r["mode"] == "flat")
    remote = sum(int(r["remote_blocks"]) for r in modelled if r["mode"] == "flat")
    p.number("LatencyRemoteBlocksFlat", 100 * remote / blocks if blocks else None, src, percent=True)


def distance_factor(p: Run, topology: str):
    """Remote/local cost the model charges on a topology: its largest distance / 10, from the
    distance matrix the sweep recorded in machine.json."""
    matrix = p.topologies.get(topology, {}).get("distance") or []
    values = [d for row in matrix for d in row]
    return max(values) / 10 if values else None
