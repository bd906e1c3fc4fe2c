"""Placement and the stealing hierarchy separated, by the latency model's penalty (ablation.png, penalty.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import statistics

from pipeline import explib
from pipeline.figures.common import Run, MEMORY, ARM_STYLE, MEASURED_PENALTY, tex, plt

# Every \\num macro this module writes.
MACROS = (
    "AblationDifferShown",
    "AblationPairsShown",
    "AblationPenaltyMax",
    "AblationPenaltyMin",
    "AblationPenaltyShown",
    "AblationProcs",
    "AblationRemoteBoth",
    "AblationRemoteFlat",
    "AblationRemoteHierarchy",
    "AblationRemoteNeither",
    "AblationRemotePinned",
    "AblationRemotePlacement",
    "AblationRepetitions",
    "AblationRuns",
    "AblationSpeedupBoth",
    "AblationSpeedupHierarchy",
    "AblationSpeedupNeither",
    "AblationSpeedupPinned",
    "AblationSpeedupPlacement",
    "AblationTopology",
    "AblationUniformBoth",
    "AblationUniformHierarchy",
    "AblationUniformNeither",
    "AblationUniformPinned",
    "AblationUniformPlacement",
    "FibFlatOverHierarchy",
    "FibFlatOverNeither",
    "FibMovedFlat",
    "FibMovedHierarchy",
    "FibMovedNeither",
)


def draw(p: Run) -> None:
    p.na("AblationTopology", "AblationProcs", "AblationRepetitions", "AblationRuns", "AblationPenaltyMin",
            "AblationPenaltyMax", "AblationPenaltyShown", "AblationDifferShown", "AblationPairsShown",
            *[f"AblationRemote{a.title()}" for a in ARM_STYLE],
            *[f"AblationSpeedup{a.title()}" for a in ARM_STYLE if a != "flat"],
            *[f"AblationUniform{a.title()}" for a in ARM_STYLE if a != "flat"],
            "FibFlatOverNeither", "FibFlatOverHierarchy", "FibMovedFlat", "FibMovedNeither", "FibMovedHierarchy")
    config = ablation_config(p)
    if not config:
        p.missing.append("ablation (scripts/pipeline/ablation.py did not run)")
        return
    t, n = config
    src = p.where("ablation/results.csv")
    rows = [r for r in p.ablation_rows if (r["topology"], r["procs"]) == config]
    spr = ablation_spreads(p)
    arms = [a for a in ARM_STYLE if any(r["arm"] == a for r in rows)]
    workloads = [w for w in MEMORY if any(r["workload"] == w for r in rows)]
    penalties = sorted({float(r["latency_penalty"]) for r in rows if r["latency_penalty"]})
    if not workloads or not penalties or "flat" not in arms:
        p.missing.append("ablation (no memory-bound runs with the flat arm)")
        return
    base = penalties[0]
    shown = min(penalties, key=lambda r: abs(r - MEASURED_PENALTY))
    over = p.oversubscribed(n)
    p.number("AblationTopology", tex(t), src)
    p.number("AblationProcs", n, src)
    p.number("AblationRepetitions", max(r["repetition"] for r in rows), src)
    p.number("AblationRuns", len(p.ablation_rows), src)
    p.number("AblationPenaltyMin", penalties[0], src)
    p.number("AblationPenaltyMax", penalties[-1], src)
    p.number("AblationPenaltyShown", shown, src)
    differ_pairs = [0, 0]  # kernel-arm ratios at the shown penalty whose band excludes one, of all

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    width = 0.8 / len(arms)
    for i, a in enumerate(arms):
        remote, speed, lo, hi = [], [], [], []
        for w in workloads:
            mine = [r for r in rows if r["workload"] == w and r["arm"] == a and float(r["latency_penalty"]) == base]
            fr = [int(r["remote_blocks"]) / int(r["blocks"]) for r in mine if int(r["blocks"] or 0)]
            remote.append(100 * statistics.median(fr) if fr else 0)
            f, s = spr.get((t, n, w, "flat", shown)), spr.get((t, n, w, a, shown))
            ratio = explib.ratio_interval(f, s) if f and s else (0, 0, 0)
            speed.append(ratio[0])
            lo.append(ratio[0] - ratio[1])
            hi.append(ratio[2] - ratio[0])
        xs = [k + (i - (len(arms) - 1) / 2) * width for k in range(len(workloads))]
        left.bar(xs, remote, width, color=ARM_STYLE[a], label=a)
        right.bar(xs, speed, width, color=ARM_STYLE[a], hatch="///" if over else None, edgecolor="black" if over else None,
                  linewidth=0, label=a)
        right.errorbar(xs, speed, yerr=[lo, hi], fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
        # The figure's own numbers: each kernel's median at the lowest penalty, averaged over
        # the kernels (pooling the blocks would let the kernel with the most blocks decide).
        p.number(f"AblationRemote{a.title()}", statistics.mean(remote) if remote else None, src, percent=True)
        if a != "flat":
            pairs = [(spr[(t, n, w, "flat", shown)], spr[(t, n, w, a, shown)]) for w in workloads
                     if (t, n, w, "flat", shown) in spr and (t, n, w, a, shown) in spr]
            differ_pairs[0] += sum(1 for f, x in pairs if f.differs(x))
            differ_pairs[1] += len(pairs)
            for macro, penalty in ((f"AblationSpeedup{a.title()}", shown), (f"AblationUniform{a.title()}", base)):
                ratios = [spr[(t, n, w, "flat", penalty)].median / spr[(t, n, w, a, penalty)].median for w in workloads
                          if (t, n, w, "flat", penalty) in spr and (t, n, w, a, penalty) in spr]
                p.number(macro, statistics.geometric_mean(ratios) if ratios and not over else None, src)
    p.number("AblationDifferShown", differ_pairs[0], src)
    p.number("AblationPairsShown", differ_pairs[1], src)
    for ax in (left, right):
        ax.set_xticks(range(len(workloads)), workloads, fontsize=7)
    left.set_ylabel("blocks worked away from home (%)")
    left.set_ylim(0, 100)
    left.set_title(f"Where the work ran (counts, median run), penalty {base:g}", fontsize=8)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_ylim(bottom=0)
    right.set_ylabel("flat time / arm time")
    right.set_title(f"PROJECTION under the latency model, remote penalty {shown:g}", fontsize=8)
    left.legend(fontsize=6, ncol=2)
    fig.suptitle(f"Ablation: placement and the stealing hierarchy, EMULATED {t}, {n} Ps"
                 + (" (OVERSUBSCRIBED)" if over else ""), fontsize=9)
    p.save(fig, "ablation",
              f"The ablation of NUMA mode on the memory-bound workloads (scripts/pipeline/ablation.py), on the EMULATED "
              f"topology {tex(t)} at {n} Ps, binding held equal. Arms: flat (Go's scheduler), neither (NUMA mode's "
              "per-node queues with Go's stealing, nothing placed), placement (go\_on queues each goroutine on its "
              "data's node; Go's stealing), hierarchy (the stealing hierarchy alone), both, and pinned (NUMA mode "
              "as shipped: go\_on's goroutines always start on their node). Left: the fraction of blocks worked "
              f"on a node other than their data's (median over the repetitions at penalty {base:g}, where the model "
              "charges nothing): a count of what the scheduler did, not a modelled time. Right: flat time over the arm's time under the EMULATED memory "
              f"latency model at a remote/local penalty of {shown:g}, a PROJECTION under the model, not a "
              "measurement; error bars from the ends of the two medians' 95\% bootstrap intervals"
              + ("; hatched: more Ps than CPUs, not quoted" if over else "") + f". Results: \\texttt{{{src}}}.")

    fig, axes = plt.subplots(1, len(workloads), figsize=(2.3 * len(workloads), 3.0))
    axes = axes if len(workloads) > 1 else [axes]
    top = 1.0
    for ax, w in zip(axes, workloads):
        for a in arms:
            if a == "flat":
                continue
            pts = [(r_, *explib.ratio_interval(spr[(t, n, w, "flat", r_)], spr[(t, n, w, a, r_)])) for r_ in penalties
                   if (t, n, w, "flat", r_) in spr and (t, n, w, a, r_) in spr]
            if not pts:
                continue
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            top = max(top, *[p[3] for p in pts])
            ax.errorbar(xs, ys, yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]], color=ARM_STYLE[a],
                        marker="o", markersize=3, linewidth=1, capsize=1.5, label=a,
                        markerfacecolor="none" if over else ARM_STYLE[a])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axvline(MEASURED_PENALTY, color="gray", linestyle=":", linewidth=0.8)
        ax.set_title(w, fontsize=8)
        ax.set_xlabel("remote/local penalty", fontsize=7)
    for ax in axes:  # one scale for every kernel, from 0, every interval inside it
        ax.set_ylim(0, top * 1.05)
    axes[0].set_ylabel("flat time / arm time")
    axes[-1].legend(fontsize=6)
    fig.suptitle(f"Speedup over flat against the model's remote penalty: a PROJECTION (EMULATED {t}, {n} Ps)",
                 fontsize=9)
    p.save(fig, "penalty",
              "Each arm's speedup over the flat arm as the latency model's remote/local penalty grows from 1.0 "
              "(uniform memory: the scheduling alone) to 3.0; the dotted line is 1.74, a remote/local DRAM "
              "latency ratio for 2-socket Cascade Lake from the project's reference notes (an input, not traced to "
              "a primary source). EMULATED topology and memory latency: every point is a "
              "PROJECTION under the model; error bars from the ends of the two medians' 95\% bootstrap intervals. "
              f"Results: \\texttt{{{src}}}.")

    # Fork-join on uniform memory: where NUMA mode's speedup over flat comes from.
    fib = spr.get((t, n, "fib", "flat", 0.0))
    for a, macro in (("neither", "FibFlatOverNeither"), ("hierarchy", "FibFlatOverHierarchy")):
        other = spr.get((t, n, "fib", a, 0.0))
        if fib and other:
            ratio = fib.median / other.median
            p.number(macro, ratio if fib.differs(other) else
                        f"{explib.fmt(ratio)} (the intervals overlap: no difference)", src)
    for a in ("flat", "neither", "hierarchy"):
        moved = [int(r["moved_remote"]) for r in rows if r["workload"] == "fib" and r["arm"] == a]
        p.number(f"FibMoved{a.title()}", int(statistics.median(moved)) if moved else None, src)


def ablation_spreads(p: Run) -> dict[tuple, explib.Spread]:
    """Seconds per (topology, Ps, workload, arm, penalty; 0 for no model)."""
    groups: dict[tuple, list[float]] = {}
    for r in p.ablation_rows:
        key = (r["topology"], r["procs"], r["workload"], r["arm"], float(r["latency_penalty"] or 0))
        groups.setdefault(key, []).append(float(r["seconds"]))
    return {k: explib.spread(v) for k, v in groups.items()}


def ablation_config(p: Run) -> tuple[str, int] | None:
    """The configuration the figures show: the first with no more Ps than CPUs, else the first."""
    configs = sorted({(r["topology"], r["procs"]) for r in p.ablation_rows})
    fitting = [c for c in configs if not p.oversubscribed(c[1])]
    return (fitting or configs or [None])[0]
