#!/usr/bin/python3
"""The scheduler statistics of one run (NUGO_STATS), as a table and as a locality chart.

usage: scripts/tools/stats.py STATS.json [-o CHART.png]

Prints, per node and in total: goroutine runs at home and away, steals within the node and
from other nodes, goroutines moved across nodes (and by distance), cross-node wake-ups,
preemptions and idle time (numa/README.md, "Statistics", defines every counter). With -o it
also draws a bar chart per node: runs home/away, and steals same node/remote by distance.
The chart's title says whether the topology was emulated.

Runs with Debian's /usr/bin/python3; the chart needs python3-matplotlib
(scripts/bootstrap.sh installs it). Exit status: 0, or 2 for bad usage or a file that is not
a NUGO_STATS file (named, with what is wrong).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline.catalogue import STATS_COUNTERS as COUNTERS  # noqa: E402


def fail(msg: str) -> int:
    print(f"stats.py: {msg}", file=sys.stderr)
    return 2


def load(path: Path) -> dict:
    try:
        stats = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not JSON: {e}")
    for key in ("mode", "procs", "topology", "totals", "nodes", "ps"):
        if key not in stats:
            raise ValueError(f"{path} is not a NUGO_STATS file: no key '{key}'")
    for where, block in [("totals", stats["totals"])] + [(f"node {n.get('node')}", n)
                                                         for n in stats["nodes"]]:
        missing = [k for k in COUNTERS + ["moved_remote_by_distance"] if k not in block]
        if missing:
            raise ValueError(f"{path}: {where} lacks {', '.join(missing)}")
    return stats


def table(stats: dict) -> str:
    topo = stats["topology"]
    head = (f"mode {stats['mode']}, {stats['procs']} Ps, topology {topo['source']} "
            f"({topo['nodes']} nodes{', EMULATED: scheduler decisions, not memory speed' if topo['emulated'] else ''})")
    cols = ["node", "Ps", "runs", "home", "away", "steals same", "steals remote", "moved remote",
            "by distance", "wake-ups x-node", "preemptions", "idle ms"]
    rows = []
    for block, name in [(n, str(n["node"])) for n in stats["nodes"]] + [(stats["totals"], "total")]:
        runs = block["runs"]
        home = f"{100 * block['runs_home'] / runs:.1f}%" if runs else "-"
        by_distance = " ".join(f"{d}:{n}" for d, n in sorted(block["moved_remote_by_distance"].items(),
                                                            key=lambda kv: int(kv[0]))) or "-"
        ps = len(block["ps"]) if "ps" in block else stats["procs"]
        rows.append([name, str(ps), f"{runs:,}", home, f"{block['runs_away']:,}",
                     f"{block['steals_same_node']:,}", f"{block['steals_remote']:,}",
                     f"{block['moved_remote']:,}", by_distance, f"{block['wakeups_cross_node']:,}",
                     f"{block['preemptions']:,}", f"{block['idle_ns'] / 1e6:.1f}"])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([head, line(cols)] + [line(r) for r in rows])


def chart(stats: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = stats["nodes"]
    labels = [str(n["node"]) for n in nodes]
    distances = sorted({int(d) for n in nodes for d in n["moved_remote_by_distance"]})
    fig, (runs_ax, steals_ax) = plt.subplots(1, 2, figsize=(10, 4))
    x = range(len(nodes))
    home = [n["runs_home"] for n in nodes]
    away = [n["runs_away"] for n in nodes]
    runs_ax.bar(x, home, label="runs at home", color="#4c72b0")
    runs_ax.bar(x, away, bottom=home, label="runs away", color="#dd8452")
    runs_ax.set_xticks(list(x), labels)
    runs_ax.set_ylabel("goroutine runs")
    runs_ax.set_xlabel("node")
    runs_ax.set_title("where goroutines ran")
    runs_ax.legend()
    same = [n["moved_same_node"] for n in nodes]
    steals_ax.bar(x, same, label="moved within the node", color="#55a868")
    bottom = same
    for i, d in enumerate(distances):
        counts = [n["moved_remote_by_distance"].get(str(d), 0) for n in nodes]
        steals_ax.bar(x, counts, bottom=bottom, label=f"moved from distance {d}",
                      color=plt.cm.Reds(0.4 + 0.5 * i / max(1, len(distances) - 1)))
        bottom = [b + c for b, c in zip(bottom, counts)]
    steals_ax.set_xticks(list(x), labels)
    steals_ax.set_ylabel("goroutines moved to the node")
    steals_ax.set_xlabel("node")
    steals_ax.set_title("what its Ps took, and from where")
    steals_ax.legend()
    topo = stats["topology"]
    fig.suptitle(f"nugo {stats['mode']} mode, {stats['procs']} Ps, {Path(topo['source']).name}"
                 + (" (EMULATED topology)" if topo["emulated"] else ""))
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main() -> int:
    args = sys.argv[1:]
    out = None
    if "-o" in args:
        i = args.index("-o")
        if i + 1 >= len(args):
            return fail("-o needs a file name\n\n" + __doc__)
        out = Path(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        return fail("expected one STATS.json\n\n" + __doc__)
    try:
        stats = load(Path(args[0]))
        text = table(stats)
    except ValueError as e:
        return fail(str(e))
    except (TypeError, KeyError, AttributeError) as e:  # the keys, with values of other shapes
        return fail(f"{args[0]} is not a NUGO_STATS file: {type(e).__name__}: {e}")
    print(text)
    if out:
        chart(stats, out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
