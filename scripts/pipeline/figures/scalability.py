"""Throughput of every workload by P count: flat mode, NUMA mode and the Go twin (scalability.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

from pipeline.figures.common import Run, MODE_STYLE, plt

# Every \\num macro this module writes.
MACROS = (
)


def draw(p: Run) -> None:
    med = p.spreads(lambda r: True)
    workloads = sorted({k[1] for k in med})
    topologies = sorted({k[0] for k in med}, key=lambda t: (t != "machine", t))
    if not workloads:
        p.missing.append("scalability (no timed runs)")
        return
    cols = 4
    rows = (len(workloads) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    markers = {t: "osD^v<>ph*"[i % 10] for i, t in enumerate(topologies)}
    for ax, w in zip(axes.flat, workloads):
        work = {r["topology"]: float(r["work"]) for r in p.rows if r["workload"] == w and r["work"]}
        for t in topologies:
            for mode in ("flat", "numa", "go"):
                # Throughput is work over seconds: the interval's ends swap.
                pts = sorted((k[2], work.get(t, 1.0) / v.median, work.get(t, 1.0) / v.ci_hi,
                              work.get(t, 1.0) / v.ci_lo)
                             for k, v in med.items() if k[0] == t and k[1] == w and k[3] == mode)
                if not pts:
                    continue
                color, style = MODE_STYLE[mode]
                xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                ax.plot(xs, ys, style, color=color, linewidth=1, marker=markers[t], markersize=4,
                        label=f"{p.topology_label(t)} {mode}")
                ax.errorbar(xs, ys, yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                            fmt="none", ecolor=color, elinewidth=0.8, capsize=2)
                # Oversubscribed points (more Ps than CPUs) hollow: their timings are not quoted.
                over = [(x, y) for x, y, *_ in pts if p.oversubscribed(x)]
                if over:
                    ax.plot([x for x, _ in over], [y for _, y in over], marker=markers[t], markersize=4,
                            linestyle="none", color=color, markerfacecolor="white")
        ax.set_title(w, fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        unit = next((r["unit"] for r in p.rows if r["workload"] == w and r["unit"]), "work")
        ax.set_ylabel(f"{unit}/s", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.yaxis.get_offset_text().set_fontsize(8)
        ax.set_xlabel("Ps", fontsize=8)
    spare = list(axes.flat)[len(workloads):]
    for ax in spare:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if spare:  # in a panel with no data, where it hides nothing
        spare[len(spare) // 2].legend(handles, labels, loc="center", fontsize=8, ncol=1)
    else:
        fig.legend(handles, labels, loc="lower right", fontsize=8, ncol=2)
    fig.suptitle("Throughput (work/s) by P count: flat, NUMA mode and Go", fontsize=10)
    p.save(fig, "scalability",
              "Throughput of every workload by P count, flat mode (blue), NUMA mode (red) and the Go 1.19 "
              "twin (grey, dashed): medians of the repetitions with their 95\\% bootstrap confidence "
              "intervals; hollow markers: more Ps than CPUs (oversubscribed, not quoted). "
              f"Results: \\texttt{{{p.where('results.csv')}}}; "
              + p.provenance(topologies, memory=True) + ".")
