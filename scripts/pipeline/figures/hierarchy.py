"""The stealing hierarchy on trial, in virtual time (hierarchy.png, \\tableHierarchy).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json
import statistics
import textwrap

import matplotlib.lines
import matplotlib.ticker

from pipeline import explib
from pipeline.figures.common import Run, legend_below, tex, plt
from pipeline.hierarchy import LEVELS

# Every \\num macro this module writes: the settings, and for each question of the trial
# (hierarchy.py's findings) its comparisons, how many stand faster and slower, and the
# geometric mean of its ratios.
QUESTIONS = {"node_first": "NodeFirst", "distance_order": "DistanceOrder", "distance_control": "DistanceControl",
             "placement": "Placement", "shipped": "Shipped"}
MACROS = (
    "HierarchyRunMsMax",
    "HierarchyRunMsMin",
    "HierarchyDistanceControlComparisons",
    "HierarchyDistanceControlFaster",
    "HierarchyDistanceControlGeomean",
    "HierarchyDistanceControlSlower",
    "HierarchyDistanceOrderComparisons",
    "HierarchyDistanceOrderFaster",
    "HierarchyDistanceOrderGeomean",
    "HierarchyDistanceOrderSlower",
    "HierarchyMachines",
    "HierarchyNodeFirstComparisons",
    "HierarchyNodeFirstFaster",
    "HierarchyNodeFirstGeomean",
    "HierarchyNodeFirstSlower",
    "HierarchyPlacementComparisons",
    "HierarchyPlacementFaster",
    "HierarchyPlacementGeomean",
    "HierarchyPlacementSlower",
    "HierarchyRepetitions",
    "HierarchyShippedComparisons",
    "HierarchyShippedFaster",
    "HierarchyShippedGeomean",
    "HierarchyShippedSlower",
    "HierarchySize",
)
# The contrasts drawn, in hierarchy.py's words, and their markers.
DRAWN = {"node first": "o", "distance order": "s", "placement, pinned": "^", "NUMA mode as shipped": "D"}


def draw(p: Run) -> None:
    """DIR/hierarchy/hierarchy.json (scripts/pipeline/hierarchy.py)."""
    p.na(*MACROS)
    p.tables["Hierarchy"] = "\\emph{The hierarchy's trial did not run.}"
    path = p.dir / "hierarchy" / "hierarchy.json"
    if not path.exists():
        p.missing.append("hierarchy (no hierarchy/hierarchy.json: scripts/pipeline/hierarchy.py did not run)")
        return
    d, src = json.loads(path.read_text()), p.where("hierarchy/hierarchy.json")
    settings, comparisons = d["settings"], d["comparisons"]
    machines = list(settings["machines"])
    p.number("HierarchyMachines", tex(", ".join(machines)), src)
    p.number("HierarchyRepetitions", settings["repetitions"], src)
    p.number("HierarchySize", tex(settings["size"]), src)
    # How long the runs are, in virtual milliseconds: the least and the greatest median of an
    # arm's runs of one workload on one machine at one level.
    runs = p.dir / "hierarchy" / "results.csv"
    if runs.exists():
        times: dict[tuple, list[float]] = {}
        for r in explib.read_results(runs):
            if r["ok"] == 1:
                key = (r["topology"], r["workload"], r.get("arm"), r.get("numa_policy"), r.get("latency_model"),
                       r.get("virtual_setting"))
                times.setdefault(key, []).append(1000 * float(r["seconds"]))
        medians = [statistics.median(v) for v in times.values()]
        if medians:
            p.number("HierarchyRunMsMin", min(medians), p.where("hierarchy/results.csv"))
            p.number("HierarchyRunMsMax", max(medians), p.where("hierarchy/results.csv"))
    for f in d["findings"]:
        name = "Hierarchy" + QUESTIONS[f["question"]]
        p.number(name + "Comparisons", f["comparisons"], src)
        p.number(name + "Faster", f["faster"], src)
        p.number(name + "Slower", f["slower"], src)
        p.number(name + "Geomean", f["geomean_ratio"], src)
    body = []
    for f in d["findings"]:
        lo, hi = f["ratio_range"]
        body.append(f"{tex(f['question'].replace('_', ' '))} & {f['comparisons']} & {f['faster']} & {f['slower']} & "
                    f"{f['geomean_ratio']:.3f} & {lo:.3f}--{hi:.3f} \\\\")
    p.tables["Hierarchy"] = (
        "\\begin{tabular}{lrrrrr}\\toprule\n"
        "question & comparisons & faster & slower & geo.\\ mean & range \\\\\n\\midrule\n"
        + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}")
    # One panel per machine: each drawn contrast's ratio with its interval, per workload, a
    # colour per level; a filled marker where the difference stands after Holm.
    # One row per machine, full width (the rows' workloads side by side would need 8 pt labels
    # a third as wide), the legend in a row of its own below: none over a point.
    fig = plt.figure(figsize=(7.0, 1.9 * len(machines) + 1.2))
    grid = fig.add_gridspec(len(machines) + 1, 1, height_ratios=[1.0] * len(machines) + [0.12])
    axes = []
    for row, m in enumerate(machines):
        ax = fig.add_subplot(grid[row], sharey=axes[0] if axes else None)
        axes.append(ax)
        cs = [c for c in comparisons if c["machine"] == m and c["contrast"] in DRAWN]
        keys = sorted({(c["contrast"], c["workload"]) for c in cs}, key=lambda k: (list(DRAWN).index(k[0]), k[1]))
        for i, level in enumerate(LEVELS):
            for x, key in enumerate(keys):
                c = next((c for c in cs if (c["contrast"], c["workload"]) == key and c["level"] == level), None)
                if c is None:
                    continue
                xs = x + (i - 1) * 0.22
                ax.errorbar([xs], [c["ratio"]], yerr=[[c["ratio"] - c["ci95"][0]], [c["ci95"][1] - c["ratio"]]],
                            fmt=DRAWN[key[0]], color=f"C{i}", markersize=4, elinewidth=0.7, capsize=1.5,
                            markerfacecolor=f"C{i}" if c["differs"] else "white")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.125, 0.25, 0.5, 1, 2, 4, 8]))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.tick_params(axis="y", labelsize=8)
        # the workload under each point, the contrast once over its group, groups apart
        ax.set_xticks(range(len(keys)), [k[1] for k in keys], fontsize=7.5, rotation=90)
        ax.set_xlim(-0.6, len(keys) - 0.4)
        for contrast in DRAWN:
            xs = [x for x, k in enumerate(keys) if k[0] == contrast]
            if not xs:
                continue
            if xs[0]:
                ax.axvline(xs[0] - 0.5, color="gray", linewidth=0.6, linestyle=":")
            ax.text((xs[0] + xs[-1]) / 2, 1.02, textwrap.fill(contrast, 11), transform=ax.get_xaxis_transform(), ha="center",
                    va="bottom", fontsize=8)
        ax.set_ylabel(m, fontsize=9, fontweight="bold")
    fig.supylabel("time ratio (> 1: the second arm is faster)", fontsize=9)
    handles = [matplotlib.lines.Line2D([], [], color=f"C{i}", marker="o", linestyle="", markersize=5,
                                       label=f"level: {level}")
               for i, level in enumerate(LEVELS)]
    handles.append(matplotlib.lines.Line2D([], [], color="black", marker="o", linestyle="", markersize=5,
                                           markerfacecolor="white", label="open: no difference after Holm"))
    legend_below(fig, grid[-1], handles, [h.get_label() for h in handles], ncol=len(handles))
    fig.suptitle("VIRTUAL TIME: the stealing hierarchy's parts, one P per virtual CPU", fontsize=9)
    p.save(fig, "hierarchy",
           "VIRTUAL TIME, not hardware: the stealing hierarchy's parts on the real machines' shapes "
           f"{tex(', '.join(machines))} at one P per virtual CPU, {tex(settings['size'])} sizes, "
           f"{settings['repetitions']} runs per arm and level. Each point is one arm's median time over "
           "another's with the bootstrap 95\\% interval of that ratio: node first (random victims over every P "
           "against the own node first), distance order (remote nodes in random order against nearest first), "
           "pinned placement (none against go\\_on pinned, both under the full hierarchy) and NUMA mode as shipped "
           "against flat mode; at three levels of the model: scheduling alone (no charges, uniform memory), with "
           "the cost model's charges, and with the latency model's penalty too. Filled: a difference that stands "
           "after Holm's correction within its machine and level. "
           f"Results: \\texttt{{{src}}}.")
