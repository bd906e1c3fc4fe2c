"""Steal locality and moves by distance, flat against NUMA mode (locality.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

from pipeline.figures.common import MODE_STYLE, Run, legend_below, plt

# Every \\num macro this module writes.
MACROS = (
    "RunsHomeFlatFourNode",
    "RunsHomeFlatTwentyFourNode",
    "RunsHomeFlatTwoNode",
    "RunsHomeNumaFourNode",
    "RunsHomeNumaTwentyFourNode",
    "RunsHomeNumaTwoNode",
    "StealsRemoteFlatFourNode",
    "StealsRemoteFlatTwentyFourNode",
    "StealsRemoteFlatTwoNode",
    "StealsRemoteNumaFourNode",
    "StealsRemoteNumaTwentyFourNode",
    "StealsRemoteNumaTwoNode",
)


def draw(p: Run) -> None:
    locality_numbers(p, {})
    acc: dict[tuple, dict] = {}  # (topology, mode) and (topology, mode, procs): the counts
    by_distance: dict[tuple, dict[int, int]] = {}
    for r in p.rows:
        if r["ok"] == 1 and r["mode"] in ("flat", "numa") and p.nodes(r["topology"]) > 1 and r["runs"]:
            for key in ((r["topology"], r["mode"]), (r["topology"], r["mode"], r["procs"])):
                a = acc.setdefault(key, {"same": 0, "remote": 0, "runs": 0, "home": 0})
                a["same"] += int(r["steals_same_node"])
                a["remote"] += int(r["steals_remote"])
                a["runs"] += int(r["runs"])
                a["home"] += int(r["runs_home"])
            if r["kind"] == "memory":
                continue  # go_on places their goroutines on other nodes on purpose: not a move
            d = by_distance.setdefault((r["topology"], r["mode"]), {})
            for item in (r.get("moved_remote_by_distance") or "").split():
                dist, count = item.split(":")
                d[int(dist)] = d.get(int(dist), 0) + int(count)
    locality_numbers(p, acc)
    if not acc:
        p.missing.append("locality (no multi-node runs)")
        return
    # By node count (not by name, which puts 24node before 2node).
    topologies = sorted({k[0] for k in acc}, key=lambda t: (p.nodes(t), t))
    moved = [t for t in topologies if any(by_distance.get((t, m)) for m in ("flat", "numa"))]
    # Full width: the two shares on top, one small panel of moves per topology below (each
    # topology's distances on its own axis, not mixed with another's).
    fig = plt.figure(figsize=(7.0, 4.8))
    grid = fig.add_gridspec(3, 1, height_ratios=(1.1, 1.0, 0.12))
    top = grid[0].subgridspec(1, 2)
    steals_ax = fig.add_subplot(top[0])
    home_ax = fig.add_subplot(top[1], sharey=steals_ax)
    distances = {t: sorted({d for m in ("flat", "numa") for d in by_distance.get((t, m), {})}) for t in moved}
    width = 0.38
    for ax, what, title in ((steals_ax, "remote", "Steals from a remote node"),
                            (home_ax, "home", "Goroutine runs on their home node")):
        for j, mode in enumerate(("flat", "numa")):
            xs, ys, texts = [], [], []
            for i, t in enumerate(topologies):
                # at two Ps per node, as the macros: with one P per node every steal is remote
                a = acc.get((t, mode, 2 * p.nodes(t)))
                total = (a["same"] + a["remote"]) if what == "remote" and a else a["runs"] if a else 0
                x = i + (j - 0.5) * width
                if total:
                    share = 100 * a[what] / total
                    xs.append(x)
                    ys.append(share)
                    texts.append((x, share, f"{share:.1f}%"))  # as \\num prints it
                else:
                    texts.append((x, 0, "n/a"))
            ax.bar(xs, ys, width, color=MODE_STYLE[mode][0], edgecolor="black", linewidth=0.5,
                   hatch="///" if mode == "numa" else None, label=f"{mode} mode".replace("numa", "NUMA"))
            for x, y, text in texts:
                ax.text(x, y + 2, text, ha="center", va="bottom", fontsize=7.5, rotation=90)
        ax.set_xticks(range(len(topologies)), topologies, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
    steals_ax.set_ylim(0, 135)  # room above a full bar for its label
    steals_ax.set_yticks(range(0, 101, 25))
    steals_ax.set_ylabel("% (two Ps per node)", fontsize=8)
    # each panel as wide as its distances need
    bottom = grid[1].subgridspec(1, max(len(moved), 1), width_ratios=[len(distances[t]) + 1 for t in moved] or None)
    moves_axes = [fig.add_subplot(bottom[i]) for i in range(len(moved))]
    for i, (ax, t) in enumerate(zip(moves_axes, moved)):
        for j, mode in enumerate(("flat", "numa")):
            d = by_distance.get((t, mode), {})
            # a log axis, on which a count of 0 has no bar
            ks = [k for k, dist in enumerate(distances[t]) if d.get(dist, 0) > 0]
            ax.bar([k + (j - 0.5) * width for k in ks], [d[distances[t][k]] for k in ks], width,
                   color=MODE_STYLE[mode][0], edgecolor="black", linewidth=0.5,
                   hatch="///" if mode == "numa" else None)
        ax.set_xticks(range(len(distances[t])), [str(k) for k in distances[t]], fontsize=8)
        ax.set_xlim(-0.8, len(distances[t]) - 0.2)
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.8)  # every bar from 1 up
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(f"{t}: moves", fontsize=9)
        ax.set_xlabel("node distance", fontsize=8)
        if i:
            ax.sharey(moves_axes[0])
            ax.tick_params(labelleft=False)
    if moves_axes:
        top_count = max(c for d in by_distance.values() for c in d.values())
        moves_axes[0].set_ylim(0.8, top_count * 4)  # headroom above the tallest bar
        moves_axes[0].set_ylabel("goroutines moved\nacross nodes", fontsize=8)
    legend_below(fig, grid[2, :], *steals_ax.get_legend_handles_labels(), ncol=2)
    p.save(fig, "locality",
              "Steal locality, flat against NUMA mode, all workloads and repetitions summed, at two Ps per node "
              "(with one P per node every steal is remote). Top: the share of steals from a P of another node "
              "and the share of goroutine runs on their home node, each bar labelled with its percentage; "
              "topologies by node count, n/a where no run had two Ps per node. Bottom: goroutines moved across "
              "nodes by distance, one panel per topology "
              "(the compute and communication workloads: the memory-bound ones place goroutines on other nodes "
              "on purpose, with go\\_on); NUMA mode hatched, log scale, no bar where "
              "none moved. "
              f"Results: \\texttt{{{p.where('results.csv')}}}; " + p.provenance(topologies, memory=False)
              + ". These are counts of the scheduler's decisions; no timing is involved.")


def locality_numbers(p: Run, acc: dict) -> None:
    """The paper's locality numbers, at two Ps per node: with one P per node every steal is
    necessarily remote, so mixing P counts would mix two different questions."""
    for t, key in (("2node", "TwoNode"), ("4node", "FourNode"), ("24node", "TwentyFourNode")):
        for mode in ("flat", "numa"):
            m = mode.capitalize()
            a = acc.get((t, mode, 2 * p.nodes(t)))
            steals = a["same"] + a["remote"] if a else 0
            p.number(f"StealsRemote{m}{key}", 100 * a["remote"] / steals if steals else None,
                        p.where("results.csv"), percent=True)
            p.number(f"RunsHome{m}{key}", 100 * a["home"] / a["runs"] if a and a["runs"] else None,
                        p.where("results.csv"), percent=True)
