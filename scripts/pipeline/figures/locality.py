"""Steal locality and moves by distance, flat against NUMA mode (locality.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

from pipeline.figures.common import Run, plt

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
    topologies = sorted({k[0] for k in acc})
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    labels, same, remote = [], [], []
    for t in topologies:
        for mode in ("flat", "numa"):
            # at two Ps per node, as the macros: with one P per node every steal is remote
            a = acc.get((t, mode, 2 * p.nodes(t))) or acc.get((t, mode))
            if a:
                total = max(a["same"] + a["remote"], 1)
                labels.append(f"{t}\n{mode}")
                same.append(a["same"] / total)
                remote.append(a["remote"] / total)
    x = range(len(labels))
    left.bar(x, same, color="tab:green", label="same node")
    left.bar(x, remote, bottom=same, color="tab:orange", label="remote node")
    left.set_xticks(list(x), labels, fontsize=7)
    left.set_ylabel("share of steals")
    left.legend(fontsize=7)
    left.set_title("Where thieves stole from", fontsize=9)
    distances = sorted({d for v in by_distance.values() for d in v})
    width = 0.8 / max(len(by_distance), 1)
    # One colour per topology, NUMA mode hatched; a log axis, on which a count of 0 has no bar.
    colors = {t: f"C{i}" for i, t in enumerate(sorted({t for t, _ in by_distance}))}
    for i, ((t, mode), d) in enumerate(sorted(by_distance.items())):
        xs = [j + i * width for j, k in enumerate(distances) if d.get(k, 0) > 0]
        right.bar(xs, [d[k] for k in distances if d.get(k, 0) > 0], width, label=f"{t} {mode}",
                  color=colors[t], edgecolor="black", linewidth=0.5,
                  hatch="///" if mode == "numa" else None)
    right.set_xticks([j + width * (len(by_distance) - 1) / 2 for j in range(len(distances))],
                     [str(k) for k in distances])
    right.set_xlabel("distance (distance matrix) between the nodes")
    right.set_ylabel("goroutines moved across nodes")
    right.set_yscale("log")
    right.set_ylim(bottom=0.8)  # every bar from 1 up
    right.legend(fontsize=6)
    right.set_title("Moves across nodes by distance (compute, communication)", fontsize=9)
    p.save(fig, "locality",
              "Steal locality, flat against NUMA mode, all workloads and repetitions summed: the share of "
              "steals from a P of the same node (at two Ps per node), and goroutines moved across nodes by distance "
              "(the compute and communication workloads: the memory-bound ones place goroutines on other nodes "
              "on purpose, with go\\_on); one colour per topology, NUMA mode hatched, log scale, no bar where "
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
