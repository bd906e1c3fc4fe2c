"""Placement and the stealing hierarchy separated, by the latency model's penalty (ablation.png, penalty.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import statistics

from pipeline import explib
from pipeline.figures.common import Run, MEMORY, ARM_STYLE, MEASURED_PENALTY, legend_below, tex, plt

# Each arm's marker and line in the penalty figure, so that the arms differ in grayscale too.
ARM_MARK = {"neither": ("s", "--"), "placement": ("^", "-."), "hierarchy": ("D", ":"), "both": ("o", "-"),
            "pinned": ("v", (0, (5, 1, 1, 1, 1, 1)))}

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

    fig = plt.figure(figsize=(7.0, 3.3))
    grid = fig.add_gridspec(2, 2, height_ratios=(1.0, 0.1))
    left, right = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    width = 0.8 / len(arms)
    for i, a in enumerate(arms):
        remote, speed, lo, hi, had_remote, had_speed = [], [], [], [], [], []
        for w in workloads:
            mine = [r for r in rows if r["workload"] == w and r["arm"] == a and float(r["latency_penalty"]) == base]
            fr = [int(r["remote_blocks"]) / int(r["blocks"]) for r in mine if int(r["blocks"] or 0)]
            remote.append(100 * statistics.median(fr) if fr else 0)
            had_remote.append(bool(fr))
            f, s = spr.get((t, n, w, "flat", shown)), spr.get((t, n, w, a, shown))
            ratio = explib.ratio_interval(f, s) if f and s else (0, 0, 0)
            had_speed.append(bool(f and s))
            speed.append(ratio[0])
            lo.append(ratio[0] - ratio[1])
            hi.append(ratio[2] - ratio[0])
        xs = [k + (i - (len(arms) - 1) / 2) * width for k in range(len(workloads))]
        left.bar(xs, remote, width, color=ARM_STYLE[a], label=a)
        right.bar(xs, speed, width, color=ARM_STYLE[a], hatch="///" if over else None, edgecolor="black" if over else None,
                  linewidth=0, label=a)
        right.errorbar(xs, speed, yerr=[lo, hi], fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
        # A bar of height 0 is invisible: a measured zero is labelled 0, a missing value n/a,
        # so that neither reads as the other.
        for x, v, had in zip(xs, remote, had_remote):
            if not had or v == 0:
                left.text(x, 1, "0" if had else "n/a", ha="center", va="bottom", fontsize=7, color=ARM_STYLE[a],
                          rotation=0 if had else 90, fontweight="bold")
        for x, had in zip(xs, had_speed):
            if not had:
                right.text(x, 0.03, "n/a", ha="center", va="bottom", fontsize=7, rotation=90,
                           transform=right.get_xaxis_transform())
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
        ax.set_xticks(range(len(workloads)), [w.replace("_", "_\n") for w in workloads], fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    left.set_ylabel("blocks worked away\nfrom home (%)", fontsize=8)
    left.set_ylim(0, 100)
    left.set_title(f"Where the work ran (counts), penalty {base:g}", fontsize=9)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_ylim(bottom=0)
    right.set_ylabel("flat time / arm time", fontsize=8)
    right.set_title(f"PROJECTION (latency model), penalty {shown:g}", fontsize=9)
    legend_below(fig, grid[1, :], *left.get_legend_handles_labels(), ncol=len(arms))
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
              "measurement; error bars from the ends of the two medians' 95\% bootstrap intervals. A bar labelled 0 "
              "is a measured zero (no block worked away from home); n/a: no run"
              + ("; hatched: more Ps than CPUs, not quoted" if over else "") + f". Results: \\texttt{{{src}}}.")

    # Full width, one panel per kernel, one legend for all below them.
    fig = plt.figure(figsize=(7.0, 2.9))
    grid = fig.add_gridspec(2, len(workloads), height_ratios=(1.0, 0.1))
    axes = [fig.add_subplot(grid[0, i]) for i in range(len(workloads))]
    others = [a for a in arms if a != "flat"]
    # each arm a little to the side of the others at one penalty, so that no bar hides another
    step = (penalties[-1] - penalties[0]) * 0.04 if len(penalties) > 1 else 0.04
    top = 1.0
    for ax, w in zip(axes, workloads):
        for i, a in enumerate(others):
            pts = [(r_, *explib.ratio_interval(spr[(t, n, w, "flat", r_)], spr[(t, n, w, a, r_)])) for r_ in penalties
                   if (t, n, w, "flat", r_) in spr and (t, n, w, a, r_) in spr]
            if not pts:
                continue
            xs = [p[0] + (i - (len(others) - 1) / 2) * step for p in pts]
            ys = [p[1] for p in pts]
            top = max(top, *[p[3] for p in pts])
            marker, line = ARM_MARK.get(a, ("o", "-"))
            ax.errorbar(xs, ys, yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]], color=ARM_STYLE[a],
                        marker=marker, markersize=4, linestyle=line, linewidth=1, elinewidth=0.7, capsize=2,
                        label=a, markerfacecolor="none" if over else ARM_STYLE[a], markeredgecolor=ARM_STYLE[a])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axvline(MEASURED_PENALTY, color="gray", linestyle=":", linewidth=0.8)
        ax.set_title(w, fontsize=9)
        ax.set_xticks(penalties, [f"{r_:g}" for r_ in penalties], fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlabel("penalty", fontsize=8)
    for i, ax in enumerate(axes):  # one scale for every kernel, from 0, every interval inside it
        ax.set_ylim(0, top * 1.05)
        if i:
            ax.tick_params(labelleft=False)
    axes[0].set_ylabel("flat time / arm time", fontsize=8)
    legend_below(fig, grid[1, :], *axes[0].get_legend_handles_labels(), ncol=len(others))
    fig.suptitle(f"Speedup over flat against the remote/local penalty: a PROJECTION (EMULATED {t}, {n} Ps)",
                 fontsize=9)
    p.save(fig, "penalty",
              "Each arm's speedup over the flat arm as the latency model's remote/local penalty grows from "
              f"{penalties[0]:.1f} (uniform memory: the scheduling alone) to {penalties[-1]:.1f}; the dotted line is "
              f"{MEASURED_PENALTY:g}, a remote/local DRAM "
              "latency ratio for 2-socket Cascade Lake from the project's reference notes (an input, not traced to "
              "a primary source). EMULATED topology and memory latency: every point is a "
              "PROJECTION under the model; error bars from the ends of the two medians' 95\% bootstrap intervals; "
              "each arm with its own marker and line, set a little to the side of the others at each penalty. "
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
