"""Virtual time against real time, and speedups to 256 virtual CPUs (virtual-speedup.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import PurePath

from pipeline.figures.common import Run, plt, tex

# Every \\num macro this module writes.
MACROS = (
    "ValidationDeterminism",
    "ValidationFibTop",
    "ValidationInside",
    "ValidationLawsBroken",
    "ValidationWorkSpanBroken",
    "ValidationOutside",
    "ValidationRatioMax",
    "ValidationRatioMin",
    "ValidationRows",
    "ValidationSkynetTop",
    "ValidationTopCpus",
    "ValidationUtsTop",
)


def draw(p: Run) -> None:
    """Virtual time's validation (DIR/virtual-validation/virtual.json, scripts/pipeline/virtual.py): its
    agreement with real time at 1 and 2 Ps, fork-join on many virtual CPUs, determinism."""
    macros = ("ValidationRatioMin", "ValidationRatioMax", "ValidationRows", "ValidationInside", "ValidationOutside",
              "ValidationTopCpus", "ValidationFibTop", "ValidationSkynetTop", "ValidationUtsTop",
              "ValidationLawsBroken", "ValidationWorkSpanBroken", "ValidationDeterminism")
    p.na(*macros)
    path = p.dir / "virtual-validation" / "virtual.json"
    if not path.exists():
        p.missing.append("virtual-speedup (no virtual-validation/virtual.json: scripts/pipeline/virtual.py did not run)")
        return
    d, src = json.loads(path.read_text()), p.where("virtual-validation/virtual.json")
    first = lambda cell: float(str(cell).split()[0])  # noqa: E731  "1.03 (0.79-1.59)" -> 1.03
    ratios = [first(row[4]) for row in d["agreement"]]
    p.number("ValidationRatioMin", min(ratios) if ratios else None, src)
    p.number("ValidationRatioMax", max(ratios) if ratios else None, src)
    p.number("ValidationRows", len(ratios), src)
    # scripts/pipeline/virtual.py's verdicts: the ratio's interval inside the bar, outside it, or across it.
    p.number("ValidationInside", sum(1 for row in d["agreement"] if row[5].startswith("within")), src)
    p.number("ValidationOutside", sum(1 for row in d["agreement"] if row[5].startswith("outside")), src)
    top = max((row[1] for row in d["scaling"]), default=None)
    p.number("ValidationTopCpus", top, src)
    for w, macro in (("fib", "ValidationFibTop"), ("skynet", "ValidationSkynetTop"), ("uts", "ValidationUtsTop")):
        row = next((r for r in d["scaling"] if r[0] == w and r[1] == top), None)
        p.number(macro, first(row[3]) if row else None, src)
    # Every bound broken (the work and span laws, the greedy envelope, the steal bound), and
    # the two laws alone: a law holds for any execution, the envelope and the steal bound are
    # fits to this machine's runs.
    broken = d.get("broken", [])
    p.number("ValidationLawsBroken", len(broken), src)
    p.number("ValidationWorkSpanBroken", sum(1 for b in broken if ": work law:" in b or ": span law:" in b), src)
    det = next((r for r in d.get("determinism", []) if r[0] == "seconds"), None)
    p.number("ValidationDeterminism", tex(det[4]) if det else None, src)
    if not d.get("scaling"):
        p.missing.append("virtual-speedup (virtual-validation/virtual.json has no scaling part)")
        return
    fig, bars, spans = speedup_figure(d)
    span_text = ("the span law's bound T\\textsubscript{1}/T\\textsubscript{$\\infty$} dashed, one line per "
                 "workload (its work in goroutines over its depth in goroutines; scripts/pipeline/virtual.py's "
                 "span law)" if spans else
                 "the span law's bound not drawn: this virtual.json has no scaling runs to count the work from")
    p.save(fig, "virtual-speedup", (
        "VIRTUAL TIME, not hardware: fork-join speedup over one virtual CPU on virtual machines of the "
        f"shape of {tex(machine_name(d))}, 1 to "
        f"{top} CPUs, flat mode, with the work law's bound (speedup at most P) dotted and {span_text}; "
        f"each point is the median of {d['settings'].get('repetitions')} runs in a seeded random order"
        + (", its bar the speedup's interval from the ends of the two medians' 95\\% intervals" if bars else
           " (this virtual.json records no interval: no error bars)")
        + ". Drawn from the results by \\texttt{scripts/pipeline/figures/virtual\\_validation.py}. "
        f"Results: \\texttt{{{src}}}."))


def machine_name(d: dict) -> str:
    """The machine the scaling part's virtual CPUs had the shape of: its description's file name."""
    spec = str(d.get("settings", {}).get("topology", ""))
    return PurePath(spec.split(":", 1)[-1]).stem or "an unrecorded machine"


def speedup_figure(d: dict):
    """The speedups of virtual.json's scaling part (scripts/pipeline/virtual.py draws the same
    figure into its own directory): the figure, whether it has error bars, and the span bounds
    drawn ({workload: T_1/T_inf})."""
    from pipeline import virtual  # its depth(): the span law's T_inf, as it judges it
    curves: dict[str, list[tuple]] = {}
    for row in d["scaling"]:
        # "1.65 (1.39-2.12)": the speedup and its interval; older files have the speedup alone
        m = re.match(r"\s*([\d.]+)(?:\s*\(([\d.]+)-([\d.]+)\))?", str(row[3]))
        if m:
            curves.setdefault(row[0], []).append((int(row[1]), float(m[1]), m[2] and float(m[2]), m[3] and float(m[3])))
    size = d.get("settings", {}).get("size", "default")
    spans = {}
    for w in curves:
        work = [r["work"] for r in d.get("runs", []) if r.get("part") == "scaling" and r["workload"] == w
                and r["procs"] == 1 and r.get("work")]
        try:
            depth = virtual.depth(w, size)
        except KeyError:
            depth = None
        if work and depth:
            # T_1/T_inf, with T_inf = depth * T_1 / goroutines (virtual.py's span law)
            spans[w] = statistics.median(work) / depth
    cpus = sorted({c for pts in curves.values() for c, *_ in pts})
    top = max([cpus[-1]] + [hi or r for pts in curves.values() for _, r, _, hi in pts])
    # Span bounds far above the speedups get an axis of their own above a break, so that
    # they do not squash the curves into the bottom of one tall axis.
    far = {w: v for w, v in spans.items() if v > 4 * top}
    fig = plt.figure(figsize=(3.5, 4.3))
    grid = fig.add_gridspec(2, 1, height_ratios=(0.8, 4) if far else (0.01, 4))
    ax = fig.add_subplot(grid[1])
    high = fig.add_subplot(grid[0], sharex=ax) if far else None
    bars = False
    for i, (w, pts) in enumerate(curves.items()):
        color = f"C{i}"
        have = all(lo is not None for _, _, lo, _ in pts)
        bars = bars or have
        ax.errorbar([c for c, *_ in pts], [r for _, r, _, _ in pts],
                    yerr=[[r - lo for _, r, lo, _ in pts], [hi - r for _, r, _, hi in pts]] if have else None,
                    color=color, marker="os^D"[i % 4], markersize=4, linewidth=1.2, elinewidth=1, capsize=3, label=w)
        if w in spans:
            (high if w in far else ax).axhline(spans[w], color=color, linestyle="--", linewidth=1.2,
                                               label=f"{w} span law: speedup \u2264 T$_1$/T$_\\infty$ = {spans[w]:,.0f}")
    ax.plot(cpus, cpus, linestyle=":", color="gray", linewidth=1.2, label="work law: speedup \u2264 P")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(cpus, [str(c) for c in cpus], fontsize=8)
    ax.set_yticks(cpus, [str(c) for c in cpus], fontsize=8)
    ax.set_ylim(0.7, top * 1.4)
    ax.set_xlabel("virtual CPUs (P)", fontsize=9)
    ax.set_ylabel("speedup over 1 virtual CPU", fontsize=9)
    title = f"VIRTUAL time: 1 to {cpus[-1]} virtual CPUs\nof {machine_name(d)}"
    if high:
        high.set_yscale("log", base=2)
        high.set_ylim(min(far.values()) / 3, max(far.values()) * 3)
        high.set_yticks(sorted(far.values()), [f"{v:,.0f}" for v in sorted(far.values())], fontsize=8)
        high.minorticks_off()
        high.tick_params(axis="x", bottom=False, labelbottom=False)
        high.spines["bottom"].set_visible(False)
        ax.spines["top"].set_visible(False)
        # the break between the two axes: the span lines' axis is not to the curves' scale
        for a, y in ((high, 0), (ax, 1)):
            a.plot([0, 0.03], [y - 0.02, y + 0.02] if a is ax else [y - 0.1, y + 0.1], transform=a.transAxes,
                   color="black", linewidth=0.8, clip_on=False)
        high.set_title(title, fontsize=9)
    else:
        ax.set_title(title, fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if high:
        more = high.get_legend_handles_labels()
        handles, labels = more[0] + handles, more[1] + labels
    # below the axes: the curves fill the axes' corners (an axes' legend, which tight_layout makes room for)
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.45, -0.17), fontsize=7.5, frameon=False)
    return fig, bars, spans
