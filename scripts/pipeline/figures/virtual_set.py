"""NUMA against flat mode on virtual machines of real shapes, in virtual time (virtual.png, \\tableVirtual).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json
import statistics

from pipeline import explib
from pipeline import inference
from pipeline import sweep
from pipeline.figures import sensitivity
from pipeline.figures.common import Run, MEMORY, SIM, tex, plt

# Every \\num macro this module writes.
MACROS = (
    "VirtualRunMsMax",
    "VirtualRunMsMin",
    "VirtualMaxCpus",
    "VirtualRemoteBlocksFlatFour",
    "VirtualRemoteBlocksFlatTwentyFour",
    "VirtualRemoteBlocksFlatTwo",
    "VirtualRemoteBlocksNumaFour",
    "VirtualRemoteBlocksNumaTwentyFour",
    "VirtualRemoteBlocksNumaTwo",
    "VirtualRepetitions",
    "VirtualRowsMemory",
    "VirtualRowsMemoryFaster",
    "VirtualRowsMemorySlower",
    "VirtualRowsOther",
    "VirtualRowsOtherDiffer",
    "VirtualRowsOtherFaster",
    "VirtualRuns",
    "VirtualRunsHomeFlatFour",
    "VirtualRunsHomeFlatTwentyFour",
    "VirtualRunsHomeFlatTwo",
    "VirtualRunsHomeNumaFour",
    "VirtualRunsHomeNumaTwentyFour",
    "VirtualRunsHomeNumaTwo",
    "VirtualSpeedupMemory",
    "VirtualSpeedupMemoryFasterMax",
    "VirtualSpeedupMemoryFasterMin",
    "VirtualSpeedupMemoryMax",
    "VirtualSpeedupOther",
    "VirtualStealsRemoteFlatFour",
    "VirtualStealsRemoteFlatTwentyFour",
    "VirtualStealsRemoteFlatTwo",
    "VirtualStealsRemoteNumaFour",
    "VirtualStealsRemoteNumaTwentyFour",
    "VirtualStealsRemoteNumaTwo",
    "VirtualTargetsMet",
    "VirtualTargetsMetMemory",
    "VirtualTargetsMetOther",
    "VirtualTargetsRows",
    "VirtualTargetsRowsMemory",
    "VirtualTargetsRowsOther",
    "VirtualTopologySource",
)


def draw(p: Run) -> None:
    """NUMA mode against flat mode on the virtual set (DIR/virtual/: scripts/pipeline/sweep.py
    --topology virtual), in virtual time, and the locality targets judged there."""
    p.na("VirtualRunMsMin", "VirtualRunMsMax", "VirtualSpeedupMemory", "VirtualSpeedupMemoryMax", "VirtualSpeedupOther", "VirtualTargetsMet",
            "VirtualTargetsRows", "VirtualRuns", "VirtualRowsMemory", "VirtualRowsMemoryFaster",
            "VirtualRowsOther", "VirtualRowsOtherDiffer", "VirtualRepetitions", "VirtualMaxCpus",
            "VirtualRowsOtherFaster", "VirtualRowsMemorySlower", "VirtualSpeedupMemoryFasterMin",
            "VirtualSpeedupMemoryFasterMax",
            "VirtualTargetsMetMemory", "VirtualTargetsRowsMemory", "VirtualTopologySource", "VirtualTargetsMetOther", "VirtualTargetsRowsOther",
            *(f"Virtual{what}{m}{n}" for what in ("StealsRemote", "RunsHome", "RemoteBlocks") for m in ("Flat", "Numa")
              for n in ("Two", "Four", "TwentyFour")))
    p.tables["Virtual"] = "\\emph{The virtual set did not run.}"
    path = p.dir / "virtual" / "results.csv"
    if not path.exists():
        p.missing.append("virtual (no virtual/results.csv: the virtual set did not run)")
        return
    every = explib.read_results(path)
    rows = [r for r in every if r["ok"] == 1 and r.get("clock") == "virtual"]
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["topology"], r["workload"], r["procs"], r["mode"]), []).append(float(r["seconds"]))
    spr = {k: explib.spread(v) for k, v in groups.items()}
    # How long the runs are, in virtual milliseconds: the least and the greatest median of a
    # configuration (the start of a run, Ms waking one another, weighs more in a short one).
    medians_ms = [1000 * statistics.median(v) for v in groups.values()]
    p.number("VirtualRunMsMin", min(medians_ms) if medians_ms else None, p.where("virtual/results.csv"))
    p.number("VirtualRunMsMax", max(medians_ms) if medians_ms else None, p.where("virtual/results.csv"))
    keys = sorted({k[:3] for k in spr if (*k[:3], "flat") in spr and (*k[:3], "numa") in spr},
                  key=lambda k: (k[2], k[0], k[1] not in MEMORY, k[1]))
    if not keys:
        p.missing.append("virtual (no workload ran in both modes)")
        return
    src = p.where("virtual/results.csv")
    # Each row: flat's median time over NUMA's, the bootstrap interval of that ratio and a
    # permutation test of it (pipeline/inference.py), corrected by Holm's method within its
    # machine's rows, as sweep.md corrects within a topology's. A family must stay small enough
    # for the test's floor (inference.py: 0.0031 at eight repetitions a side): Holm's first step
    # in a family of every machine's compute and communication rows (0.05/24) lies below it, and
    # such a family could call nothing.
    tests = {k: inference.compare(groups[(*k, "flat")], groups[(*k, "numa")]) for k in keys}
    for machine in sorted({k[0] for k in keys}):
        inference.judge({k: tests[k] for k in keys if k[0] == machine})
    ratio = {k: (tests[k].ratio, tests[k].lo, tests[k].hi) for k in keys}
    fig, ax = plt.subplots(figsize=(max(8, 0.32 * len(keys)), 3.8))
    vals = [ratio[k][0] for k in keys]
    ax.bar(range(len(keys)), vals, color=["tab:red" if k[1] in MEMORY else "tab:blue" for k in keys])
    ax.errorbar(range(len(keys)), vals, yerr=[[v - ratio[k][1] for v, k in zip(vals, keys)],
                                              [ratio[k][2] - v for v, k in zip(vals, keys)]],
                fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(keys)), [f"{w} {t}" for t, w, n in keys], fontsize=7.5, rotation=60, ha="right",
                  rotation_mode="anchor")
    ax.set_ylabel("flat time / NUMA time (virtual)")
    ax.bar([0], [0], color="tab:red", label="memory-bound (latency model charged)")
    ax.bar([0], [0], color="tab:blue", label="compute and communication")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over, the bars
    ax.set_title("VIRTUAL TIME: NUMA mode over flat mode on virtual machines of "
                 + ", ".join(f"{t} ({n} CPUs)" for n, t in sorted({(n, t) for t, _, n in keys})), fontsize=9)
    reps = max(len(v) for v in groups.values())
    vmachine = json.loads((p.dir / "virtual" / "machine.json").read_text()) \
        if (p.dir / "virtual" / "machine.json").exists() else {}
    vsource = p.topology_source(sorted({t for t, _, _ in keys}), vmachine)
    p.number("VirtualTopologySource", vsource, src)
    p.save(fig, "virtual",
              "VIRTUAL TIME, not hardware: NUMA mode over flat mode (median flat time over median NUMA time, "
              f"up to {reps} runs each) on virtual machines of the shapes of real ones (v2x16: the 2-socket Xeon, "
              f"32 CPUs; v4x24: the 4-socket Xeon, 96; v24x16: the 24-node em64t, 384; in this run {vsource}), one P per CPU. The runtime's "
              "unchanged scheduler ran one thread at a time in the order of virtual clocks; each clock is the CPU "
              "time its thread used plus the cost model's charges: a cache line by node distance (48 ns in a node, "
              "122 ns at the nearest remote distance) for steals, queue takes, wake-ups and goroutines changing P, "
              "and, for the memory-bound workloads, the emulated memory latency model's remote blocks. "
              "Projections of the model, not measurements of a machine. Error bars: the ratio's 95\\% bootstrap "
              "interval; a difference is called by a permutation test of the ratio, Holm-corrected within each "
              f"machine's rows. Results: \\texttt{{{src}}}.")
    mem = [ratio[k][0] for k in keys if k[1] in MEMORY]
    other = [ratio[k][0] for k in keys if k[1] not in MEMORY]
    differs = {k: tests[k].differs for k in keys}
    p.number("VirtualRowsMemory", sum(1 for k in keys if k[1] in MEMORY), src)
    p.number("VirtualRowsMemoryFaster", sum(1 for k in keys if k[1] in MEMORY and differs[k]
                                               and ratio[k][0] > 1), src)
    p.number("VirtualRowsOther", sum(1 for k in keys if k[1] not in MEMORY), src)
    p.number("VirtualRowsOtherDiffer", sum(1 for k in keys if k[1] not in MEMORY and differs[k]), src)
    p.number("VirtualRowsOtherFaster", sum(1 for k in keys if k[1] not in MEMORY and differs[k] and ratio[k][0] > 1), src)
    p.number("VirtualRowsMemorySlower", sum(1 for k in keys if k[1] in MEMORY and differs[k] and ratio[k][0] < 1), src)
    faster = [ratio[k][0] for k in keys if k[1] in MEMORY and differs[k] and ratio[k][0] > 1]
    p.number("VirtualSpeedupMemoryFasterMin", min(faster) if faster else None, src)
    p.number("VirtualSpeedupMemoryFasterMax", max(faster) if faster else None, src)
    p.number("VirtualRepetitions", reps, src)
    p.number("VirtualMaxCpus", max(k[2] for k in keys), src)
    machines = sorted({(n, t) for t, _, n in keys})
    workloads = sorted({k[1] for k in keys}, key=lambda w: (w not in MEMORY, w))
    # Each verdict against virtual time's constants (sensitivity.py), where that step judged the
    # same configuration at the same size: s survives every variation, d depends on a constant.
    sens = sensitivity.verdicts(p) or {}
    sizes = {r["size"] for r in rows}
    tested = {k: v for k, v in sens.items() if v["size"] in sizes}
    body = []
    for w in workloads:
        cells = []
        for n, t in machines:
            k = (t, w, n)
            if k not in ratio:
                cells.append("--")
                continue
            r, lo, hi = ratio[k]
            v = tested.get((t, w))
            mark = "" if v is None else "$^{s}$" if v["survives"] else "$^{d}$"
            cells.append(f"{'' if differs[k] else SIM}{explib.fmt(r)}{mark} "
                         f"\\scriptsize({explib.fmt(lo)}--{explib.fmt(hi)})")
        body.append(tex(w) + " & " + " & ".join(cells) + " \\\\")
    p.tables["Virtual"] = (
        "\\begin{tabular}{l" + "r" * len(machines) + "}\\toprule\n"
        "workload & " + " & ".join(f"{tex(t)} ({n} CPUs)" for n, t in machines) + " \\\\\n\\midrule\n"
        + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}")
    p.number("VirtualSpeedupMemory", statistics.median(mem) if mem else None, src)
    p.number("VirtualSpeedupMemoryMax", max(mem) if mem else None, src)
    p.number("VirtualSpeedupOther", statistics.median(other) if other else None, src)
    p.number("VirtualRuns", len(rows), src)
    targets = sweep.summarize(every)["targets"]
    met = lambda t: t[">= 95%"] == "met" and t["<= 10%"] == "met"  # noqa: E731
    p.number("VirtualTargetsMet", sum(1 for t in targets if met(t)), src)
    p.number("VirtualTargetsRows", len(targets), src)
    for name, pick in (("Memory", lambda t: t["workload"] in MEMORY), ("Other", lambda t: t["workload"] not in MEMORY)):
        p.number(f"VirtualTargetsMet{name}", sum(1 for t in targets if pick(t) and met(t)), src)
        p.number(f"VirtualTargetsRows{name}", sum(1 for t in targets if pick(t)), src)
    # Locality counters where no P is folded: every workload and repetition summed, per
    # virtual machine and mode.
    for t, name in (("v2x16", "Two"), ("v4x24", "Four"), ("v24x16", "TwentyFour")):
        for mode in ("flat", "numa"):
            mine = [r for r in rows if r["topology"] == t and r["mode"] == mode]
            steals = sum(int(r["steals_same_node"] or 0) + int(r["steals_remote"] or 0) for r in mine)
            runs = sum(int(r["runs"] or 0) for r in mine)
            blocks = sum(int(r["blocks"] or 0) for r in mine if r["workload"] in MEMORY)
            m = mode.title()
            p.number(f"VirtualStealsRemote{m}{name}",
                        100 * sum(int(r["steals_remote"] or 0) for r in mine) / steals if steals else None,
                        src, percent=True)
            p.number(f"VirtualRunsHome{m}{name}",
                        100 * sum(int(r["runs_home"] or 0) for r in mine) / runs if runs else None, src, percent=True)
            p.number(f"VirtualRemoteBlocks{m}{name}",
                        100 * sum(int(r["remote_blocks"] or 0) for r in mine if r["workload"] in MEMORY) / blocks
                        if blocks else None, src, percent=True)
