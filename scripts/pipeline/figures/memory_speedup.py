"""NUMA mode's speedup on the memory-bound workloads under the latency model (memory-speedup.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import statistics

from pipeline import explib
from pipeline.figures.common import Run, MEMORY, plt

# Every \\num macro this module writes.
MACROS = (
    "CommunicationFlatOverNuma",
    "CommunicationFlatOverNumaCI",
    "CommunicationFlatOverNumaVerdict",
    "ComputeFlatOverNuma",
    "ComputeFlatOverNumaCI",
    "ComputeFlatOverNumaVerdict",
    "MemorySpeedupBasisFour",
    "MemorySpeedupBasisTwo",
    "MemorySpeedupDifferTwo",
    "MemorySpeedupFour",
    "MemorySpeedupMaxFour",
    "MemorySpeedupMaxTwo",
    "MemorySpeedupRowsTwo",
    "MemorySpeedupTwo",
    "MemoryRealFlatOverNuma",
    "MemoryRealFlatOverNumaCI",
    "MemoryRealFlatOverNumaVerdict",
    "PingpongFlatOverNuma",
    "PingpongFlatOverNumaCI",
    "PingpongFlatOverNumaVerdict",
)


def draw(p: Run) -> None:
    p.na("MemorySpeedupTwo", "MemorySpeedupMaxTwo", "MemorySpeedupFour", "MemorySpeedupDifferTwo",
            "MemorySpeedupMaxFour", "MemorySpeedupBasisTwo", "MemorySpeedupBasisFour", "MemorySpeedupRowsTwo")
    multi = lambda r: p.nodes(r["topology"]) > 1  # noqa: E731
    fits = lambda r: not p.oversubscribed(r["procs"])  # noqa: E731
    emulated = {r["topology"] for r in p.rows if r["emulated"]}
    # Flat time over NUMA time, a geometric mean over the multi-node configurations that are
    # not oversubscribed: per kind; the ping-pong beside CPU hogs alone (the one workload where
    # NUMA mode's rule never to steal another node's runnext decides who runs beside the hogs,
    # so the kind's mean must not hide it); and the one hardware answer, the memory-bound
    # workloads on this machine's own topology when it has more than one node (n/a on a
    # one-node machine, where only emulations ran).
    means = (
        ("ComputeFlatOverNuma", lambda r: r["kind"] == "compute", ""),
        ("CommunicationFlatOverNuma", lambda r: r["kind"] == "communication", ""),
        ("PingpongFlatOverNuma", lambda r: r["workload"] == "pingpong_hogs",
         ": flat/numa, pingpong_hogs, multi-node, not oversubscribed"),
        ("MemoryRealFlatOverNuma", lambda r: r["kind"] == "memory" and r["topology"] not in emulated,
         ": geometric mean of flat/numa, memory-bound, real topology"),
    )
    for macro, pick, what in means:
        spr = p.spreads(lambda r: pick(r) and multi(r) and fits(r))
        p.geomean_interval(macro, [explib.ratio_interval(spr[(t, w, n, "flat")], spr[(t, w, n, "numa")])
                                   for (t, w, n, m) in spr if m == "flat" and (t, w, n, "numa") in spr],
                           p.where("results.csv") + what)
    spr = p.spreads(lambda r: r["workload"] in MEMORY and multi(r))
    med = {k: v.median for k, v in spr.items()}
    keys = sorted({(k[0], k[1], k[2]) for k in med if (k[0], k[1], k[2], "flat") in med and (k[0], k[1], k[2], "numa") in med})
    if not keys:
        p.missing.append("memory speedup (no memory-bound runs in both modes on a multi-node topology)")
        return
    topologies = sorted({k[0] for k in keys})
    emulated = any(p.is_emulated(t) for t in topologies)
    fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(keys)), 3.6))
    labels = [f"{w}\n{t} {n}P" for t, w, n in keys]
    speedups = [med[(t, w, n, "flat")] / med[(t, w, n, "numa")] for t, w, n in keys]
    over = [p.oversubscribed(n) for _, _, n in keys]
    ax.bar(range(len(keys)), speedups, color=["tab:red" if s >= 1 else "tab:gray" for s in speedups],
           hatch=None)
    for i, o in enumerate(over):
        if o:
            ax.bar([i], [speedups[i]], color="none", edgecolor="black", hatch="///", linewidth=0)
    intervals = [explib.ratio_interval(spr[(t, w, n, "flat")], spr[(t, w, n, "numa")]) for t, w, n in keys]
    lo, hi = [i[1] for i in intervals], [i[2] for i in intervals]
    ax.errorbar(range(len(keys)), speedups, yerr=[[s - l for s, l in zip(speedups, lo)],
                                                  [h - s for s, h in zip(speedups, hi)]],
                fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    if any(over):  # the legend says what hatching means, when there is any
        ax.bar([0], [0], color="none", edgecolor="black", hatch="///", label="more Ps than CPUs (oversubscribed)")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over, the bars
    ax.set_xticks(range(len(keys)), labels, fontsize=7.5, rotation=90)  # two lines upright: none overlaps its neighbour
    ax.set_ylabel("flat time / NUMA time")
    ax.set_title("Memory-bound workloads: NUMA mode over flat mode"
                 + (" (EMULATED memory latency)" if emulated else ""), fontsize=9)
    model = ("EMULATED MEMORY LATENCY on the emulated topologies: a block of data worked on from a node "
             "other than its home pays a busy-wait of the block's local time (the least any block of its goroutine took) times (distance - 10)/10. "
             if emulated else "")
    p.save(fig, "memory-speedup",
              "Speedup of NUMA mode over flat mode on the memory-bound workloads (median flat time over "
              f"median NUMA time). {model}Hatched bars ran more Ps than this machine has CPUs, and are "
              "left out of the numbers quoted in the text where a topology has runs that are not. Error bars: "
              "from the ends of the two medians' 95\\% bootstrap confidence intervals. "
              f"Results: \\texttt{{{p.where('results.csv')}}}; "
              + p.provenance(topologies, memory=True) + ".")
    for t, name in (("2node", "Two"), ("4node", "Four")):
        # Runs with no more Ps than CPUs; when a topology has none (4 nodes on 2 CPUs), all of
        # its runs, and the basis macro says they were oversubscribed.
        mine = [(w, n) for tt, w, n in keys if tt == t]
        fitting = [(w, n) for w, n in mine if not p.oversubscribed(n)]
        s = [med[(t, w, n, "flat")] / med[(t, w, n, "numa")] for w, n in fitting]
        p.number(f"MemorySpeedup{name}", statistics.median(s) if s else None, p.where("results.csv"))
        p.number(f"MemorySpeedupMax{name}", max(s) if s else None, p.where("results.csv"))
        if name == "Two":
            p.number("MemorySpeedupRowsTwo", len(fitting), p.where("results.csv"))
            p.number("MemorySpeedupDifferTwo", sum(1 for w, n in fitting
                                                      if spr[(t, w, n, "flat")].differs(spr[(t, w, n, "numa")])),
                        p.where("results.csv"))
        p.number(f"MemorySpeedupBasis{name}",
                    "over the runs with no more Ps than CPUs" if fitting else
                    "every run had more Ps than this machine has CPUs, so none is quoted: "
                    "the figure shows them, hatched" if mine else "no runs", "")
