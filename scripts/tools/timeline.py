#!/usr/bin/python3
"""Draws execution traces of nugo (NUGO_TRACE) as timelines: where goroutines ran, and when.

usage: scripts/tools/timeline.py TRACE.json [TRACE.json ...] -o TIMELINE.png [--from MS] [--to MS]
                           [--title TEXT ...]

One panel per trace, stacked, on one time axis each (milliseconds from the trace's start). A
panel has a lane per P, grouped by node (the node's name on the left). A bar is a goroutine
running, coloured by its home node, so a bar of another node's colour is a goroutine running
away from home. Marks: a red triangle where a P stole from another node, a black cross where
a goroutine was preempted, a grey tick for a steal within the node. The panel's title says the
mode, the Ps and the topology, and EMULATED when the topology was (scheduler decisions only:
no memory was placed on those nodes). --from/--to draw a window of the run.

Runs with Debian's /usr/bin/python3 and python3-matplotlib (scripts/bootstrap.sh installs it).
Exit status: 0, or 2 for bad usage or a file that is not a nugo trace (named, with what is
wrong).
"""
import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def fail(msg):
    print(f"timeline.py: {msg}", file=sys.stderr)
    return 2


class Trace:
    """The slices and marks of one trace file, in milliseconds from its first event."""

    def __init__(self, path):
        try:
            data = json.loads(Path(path).read_text())
        except OSError as e:
            raise ValueError(f"cannot read {path}: {e.strerror}")
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not JSON: {e}")
        if not isinstance(data, dict) or "traceEvents" not in data:
            raise ValueError(f"{path} is not a trace: no traceEvents")
        self.other = data.get("otherData", {})
        if self.other.get("generator") != "nugo":
            raise ValueError(f"{path} is not a nugo trace (otherData.generator)")
        events = data["traceEvents"]
        self.node_names, self.p_names = {}, {}
        timed = [e for e in events if e.get("ph") != "M"]
        t0 = min((e["ts"] for e in timed), default=0.0)
        self.end = max((e["ts"] for e in timed), default=0.0) - t0
        self.end /= 1000.0
        self.slices = defaultdict(list)  # (node, p) -> [(start ms, duration ms, home)]
        self.marks = defaultdict(list)   # kind -> [(ms, (node, p))]
        self.homes = set()
        open_ = {}
        for e in events:
            ph = e.get("ph")
            if ph == "M":
                if e.get("name") == "process_name" and e["pid"] < 1000:
                    self.node_names[e["pid"]] = e["args"]["name"]
                elif e.get("name") == "thread_name" and e["pid"] < 1000:
                    self.p_names[(e["pid"], e["tid"])] = e["args"]["name"]
                continue
            lane = (e["pid"], e.get("tid"))
            ms = (e["ts"] - t0) / 1000.0
            if ph == "B":
                open_[lane] = (ms, e["args"]["home"])
            elif ph == "E" and lane in open_:
                start, home = open_.pop(lane)
                self.slices[lane].append((start, ms - start, home))
                self.homes.add(home)
            elif ph == "i":
                name = e.get("name", "")
                if name == "steal (remote)":
                    self.marks["remote steal"].append((ms, lane))
                elif name == "steal":
                    self.marks["steal"].append((ms, lane))
                elif name == "preempt":
                    self.marks["preempt"].append((ms, lane))
        self.lanes = sorted(self.p_names, key=lambda lane: (lane[0], lane[1]))

    def title(self):
        o = self.other
        topo = o.get("topology", "?")
        if topo.startswith("xml:"):
            topo = Path(topo[4:]).name
        text = f"{o.get('mode', '?')} mode, {o.get('procs', '?')} Ps, topology {topo}"
        if o.get("emulated"):
            text += " (EMULATED: scheduler decisions only)"
        if o.get("truncated"):
            text += ", trace truncated at its cap"
        return text


def draw(traces, titles, out, t_from, t_to):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    colours = plt.get_cmap("tab10").colors
    heights = [max(1.6, 0.22 * len(t.lanes) + 0.9) for t in traces]
    fig, axes = plt.subplots(len(traces), 1, figsize=(11, sum(heights) + 0.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    homes = sorted(set().union(*(t.homes for t in traces)))
    for ax, t, title in zip(axes[:, 0], traces, titles):
        lo = t_from if t_from is not None else 0.0
        hi = t_to if t_to is not None else max(t.end, 1e-3)
        index = {lane: i for i, lane in enumerate(t.lanes)}
        for lane, slices in t.slices.items():
            if lane not in index:
                continue
            y = len(t.lanes) - 1 - index[lane]
            by_home = defaultdict(list)
            for start, dur, home in slices:
                if start + dur >= lo and start <= hi:
                    # A slice too short to see still gets a sliver (1/2000 of the window).
                    by_home[home].append((start, max(dur, (hi - lo) / 2000.0)))
            for home, bars in by_home.items():
                ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=colours[home % len(colours)],
                               linewidth=0)
        styles = {"remote steal": dict(marker="v", color="red", s=36, zorder=3),
                  "preempt": dict(marker="x", color="black", s=28, zorder=3),
                  "steal": dict(marker="|", color="0.45", s=40, zorder=2)}
        for kind, style in styles.items():
            pts = [(ms, len(t.lanes) - 1 - index[lane] + 0.38) for ms, lane in t.marks[kind]
                   if lane in index and lo <= ms <= hi]
            if pts:
                ax.scatter(*zip(*pts), **style)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.6, len(t.lanes) - 0.1)
        step = max(1, len(t.lanes) // 16)  # 64 Ps: every 4th label
        ticks = list(range(0, len(t.lanes), step))
        ax.set_yticks([len(t.lanes) - 1 - i for i in ticks])
        ax.set_yticklabels([t.p_names[t.lanes[i]] for i in ticks], fontsize=7)
        # Node groups: a line between them and the node's name at the left.
        nodes = [lane[0] for lane in t.lanes]
        for i in range(1, len(nodes)):
            if nodes[i] != nodes[i - 1]:
                ax.axhline(len(t.lanes) - i - 0.5, color="0.3", linewidth=0.8)
        for node in sorted(set(nodes)):
            rows = [i for i, n in enumerate(nodes) if n == node]
            mid = len(t.lanes) - 1 - (rows[0] + rows[-1]) / 2.0
            ax.annotate(t.node_names.get(node, f"node {node}"), xy=(0, mid),
                        xycoords=("axes fraction", "data"), xytext=(-38, 0),
                        textcoords="offset points", ha="right", va="center", fontsize=8,
                        rotation=90)
        ax.set_title(title, fontsize=9, loc="left")
        ax.grid(axis="x", color="0.9", linewidth=0.6)
        ax.set_axisbelow(True)
    axes[-1, 0].set_xlabel("time since the trace started (ms)")
    handles = [Patch(color=colours[h % len(colours)], label=f"goroutine of home node {h}")
               for h in homes]
    handles += [Line2D([], [], marker="v", color="red", linestyle="", label="steal from another node"),
                Line2D([], [], marker="|", color="0.45", linestyle="", label="steal within the node"),
                Line2D([], [], marker="x", color="black", linestyle="", label="preemption")]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0.03, 0.07 if len(handles) <= 4 else 0.1, 1, 1))
    fig.savefig(out, dpi=130)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", help="NUGO_TRACE files, one panel each")
    ap.add_argument("-o", "--output", required=True, help="the PNG (or PDF, SVG) to write")
    ap.add_argument("--from", dest="t_from", type=float, help="window start, ms")
    ap.add_argument("--to", dest="t_to", type=float, help="window end, ms")
    ap.add_argument("--title", action="append", help="a panel's title (one per trace)")
    a = ap.parse_args()
    if a.t_from is not None and a.t_to is not None and a.t_from >= a.t_to:
        return fail(f"--from {a.t_from} must be before --to {a.t_to}")
    if a.title and len(a.title) != len(a.traces):
        return fail(f"{len(a.title)} --title for {len(a.traces)} traces")
    try:
        traces = [Trace(p) for p in a.traces]
    except ValueError as e:
        return fail(str(e))
    for path, t in zip(a.traces, traces):
        if not t.lanes:
            return fail(f"{path} has no P tracks")
    titles = a.title or [t.title() for t in traces]
    if a.title:  # a caller's titles still say what was emulated
        titles = [f"{mine}  ({t.title()})" for mine, t in zip(a.title, traces)]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return fail("needs matplotlib: run with /usr/bin/python3 (apt-get install python3-matplotlib)")
    draw(traces, titles, a.output, a.t_from, a.t_to)
    print(f"timeline.py: wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
