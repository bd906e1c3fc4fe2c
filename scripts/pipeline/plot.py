#!/usr/bin/python3
"""Every figure of the paper, and every number its text quotes, from one results directory.

usage: scripts/pipeline/plot.py RESULTS_DIR

Reads what scripts/reproduce.sh wrote there (results.csv and machine.json from the sweep;
micro/micro.json, preempt/preempt.json, net/net.json, trace/timeline-fork-join.png and the
virtual set's sweep in virtual/ (results.csv: scripts/pipeline/sweep.py --topology virtual) when those
experiments ran) and writes, without running anything:
  RESULTS_DIR/figures/*.png           the figures (one per experiment that has results)
  RESULTS_DIR/generated/numbers.tex   \\newcommand macros, one per number the paper quotes
  RESULTS_DIR/generated/captions.tex  each figure's caption: its results file, whether its
                                      topology was real or emulated, and whether the
                                      emulated memory latency model was on
A figure whose experiment did not run is left out, with a line saying so, and its macros
say "n/a"; the paper then prints n/a rather than a stale number. Needs Debian's
python3-matplotlib (run with /usr/bin/python3). Exit status 0; 1 when a figure failed (the
others, the numbers and the captions are still written); 2 when RESULTS_DIR has no
results.csv or it cannot be read.
"""
import csv
import json
import re
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402
from pipeline import results_md  # noqa: E402
from pipeline import sweep  # noqa: E402  (the virtual set's tables: the same the sweep wrote)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PROG = "plot.py"
MEMORY = ["triad", "stencil", "histogram", "triad_skew", "spmv"]
# The ablation's arms (scripts/pipeline/ablation.py), in its order, with a colour each.
ARM_STYLE = {"flat": "tab:blue", "neither": "tab:cyan", "placement": "tab:green", "hierarchy": "tab:orange",
             "both": "tab:red", "pinned": "tab:purple"}
MEASURED_PENALTY = 1.74  # remote/local DRAM latency, 2-socket Cascade Lake
MODE_STYLE = {"flat": ("tab:blue", "-"), "numa": ("tab:red", "-"), "go": ("tab:gray", "--")}
# The runtimes of the peers figures (sweep.py's PEERS and Go), in their order, with a colour each.
PEER_STYLE = {"go": ("Go 1.19", "tab:gray"), "tbb": ("oneTBB", "tab:green"), "omp": ("OpenMP (libgomp)", "tab:orange"),
              "fiber": ("Boost.Fiber", "tab:purple")}
KINDS = ("compute", "memory", "communication")
# Published 2-socket remote/local DRAM latency (../shared/reference/numa-and-peers.md: Intel
# MLC on Cascade Lake 1.74x, Ice Lake 1.60x), beside the latency model's factor. (No band of
# "published speedups" is drawn: it would join "up to" maxima of papers with different
# machines and baselines.)
PUBLISHED_REMOTE_LATENCY = (1.60, 1.74)
SIM = "$\\sim$"  # a ratio whose two medians' intervals overlap: no difference


def tex(text) -> str:
    """Free text (a topology name, a CPU model) made safe for TeX."""
    out = str(text)
    for a, b in (("\\", "/"), ("{", "("), ("}", ")"), ("_", "\\_"), ("&", "\\&"), ("%", "\\%"),
                 ("#", "\\#"), ("$", "\\$"), ("~", "\\textasciitilde{}"), ("^", "\\textasciicircum{}")):
        out = out.replace(a, b)
    return out


class Plotter:
    def __init__(self, results: Path):
        self.dir = results
        self.figures = results / "figures"
        self.generated = results / "generated"
        self.figures.mkdir(parents=True, exist_ok=True)
        self.generated.mkdir(parents=True, exist_ok=True)
        self.numbers: dict[str, tuple[str, str]] = {}  # macro: (value, where it came from)
        self.captions: dict[str, str] = {}
        self.tables: dict[str, str] = {}  # \\table<name>: a tabular the paper inputs whole
        self.made: list[str] = []
        self.missing: list[str] = []
        self.rows = explib.read_results(results / "results.csv")
        # One binding per comparison: where the sweep swept binding (--bind), the figures show
        # its first (sweep.json), the one held equal between the modes; Go's rows bind nothing.
        sweep = results / "sweep.json"
        bindings = json.loads(sweep.read_text()).get("settings", {}).get("bindings") if sweep.exists() else None
        if bindings:
            self.rows = [r for r in self.rows if r["mode"] == "go" or r["bind_asked"] in ("", bindings[0])]
        self.machine = json.loads((results / "machine.json").read_text()) if (results / "machine.json").exists() else {}
        self.topologies = self.machine.get("topologies", {})
        # The CPUs this run could use (sched_getaffinity), else the online ones.
        self.cpus = int(self.machine.get("cpus_usable") or self.machine.get("cpus_online") or 0)
        # The ablation (scripts/pipeline/ablation.py), when it ran: its own rows, in DIR/ablation/.
        ablation = results / "ablation" / "results.csv"
        self.ablation_rows = [r for r in explib.read_results(ablation) if r["ok"] == 1] if ablation.exists() else []

    def nodes(self, topology: str) -> int:
        """Nodes with CPUs of a topology of this run (machine.json), 1 when unknown."""
        return int(self.topologies.get(topology, {}).get("nodes_with_cpus", 1))

    def oversubscribed(self, procs: int) -> bool:
        """More Ps than this machine's CPUs: the threads share CPUs, so timings, and a busy-wait
        that runs down while its thread is descheduled, are distorted."""
        return bool(self.cpus) and procs > self.cpus

    def na(self, *macros: str) -> None:
        """Every macro a figure may set starts as n/a, so that a figure that fails or has no
        data leaves the paper printing n/a, never an undefined macro or a stale number."""
        for m in macros:
            self.number(m, None, "")

    # ---- helpers ----

    def where(self, name: str) -> str:
        """A results file as a reader finds it: relative to the repository when inside it."""
        path = (self.dir / name).resolve()
        try:
            return tex(path.relative_to(explib.ROOT))
        except ValueError:
            return tex(path)

    def number(self, macro: str, value, source: str, digits: int = 3, percent: bool = False) -> None:
        if value is None:
            text = "n/a"
        elif isinstance(value, str):
            text = value  # already TeX: callers pass free text through tex()
        elif percent:
            text = f"{value:.1f}\\%".replace("-", "$-$")  # a minus, not a hyphen
        elif isinstance(value, int):
            text = f"{value:,}".replace(",", "{,}")
        else:
            text = explib.fmt(value, digits)
        self.numbers[macro] = (text, source)

    def interval(self, macro: str, lo, hi, source: str, percent: bool = False) -> None:
        """The macro's 95% interval as "lo--hi" (\\num<macro>CI), or n/a without one."""
        if lo is None or hi is None:
            self.numbers[macro + "CI"] = ("n/a", source)
        elif percent:  # "-1.5\\% to 0.7\\%": a dash between signed numbers would read as a minus
            self.numbers[macro + "CI"] = (f"{lo:.1f}\\% to {hi:.1f}\\%".replace("-", "$-$"), source)
        else:
            self.numbers[macro + "CI"] = (f"{explib.fmt(lo)}--{explib.fmt(hi)}", source)

    def geomean_interval(self, macro: str, triples: list[tuple[float, float, float]], source: str) -> None:
        """A geometric mean of ratios (each with its interval from the ends of two medians' 95%
        intervals) and, as its interval, the geometric means of the ends: conservative, since
        every ratio is taken at the end of its interval at once."""
        if not triples:
            self.number(macro, None, source)
            self.number(macro + "Verdict", None, source)
            self.interval(macro, None, None, source)
            return
        lo, hi = statistics.geometric_mean([t[1] for t in triples]), statistics.geometric_mean([t[2] for t in triples])
        self.number(macro, statistics.geometric_mean([t[0] for t in triples]), source)
        self.interval(macro, lo, hi, source)
        # In words, for the text: which side of one the whole interval lies on, if either.
        self.number(macro + "Verdict", "below one" if hi < 1 else "above one" if lo > 1 else
                    "an interval that holds one: no difference", source)

    def save(self, fig, name: str, caption: str) -> None:
        if self.machine.get("rehearsal"):  # never to be mistaken for a result
            fig.text(0.5, 0.5, "REHEARSAL", fontsize=40, color="red", alpha=0.25, ha="center", va="center",
                     rotation=30)
            caption = f"REHEARSAL ({tex(self.machine['rehearsal'])}), not a result. " + caption
        fig.tight_layout()
        fig.savefig(self.figures / f"{name}.png", dpi=130)
        plt.close(fig)
        self.made.append(name)
        self.captions[name] = caption

    def adopt(self, png: Path, name: str, caption: str) -> None:
        """A figure another script drew (the tracer's timeline, virtual.py's speedups), as this
        run's figure NAME with its caption."""
        shutil.copyfile(png, self.figures / f"{name}.png")
        self.made.append(name)
        self.captions[name] = caption

    def spreads(self, pred) -> dict[tuple, explib.Spread]:
        """Seconds per (topology, workload, Ps, mode): median, range and 95% bootstrap interval."""
        groups: dict[tuple, list[float]] = {}
        for r in self.rows:
            if r["ok"] == 1 and r["timing_reported"] == 1 and pred(r):
                groups.setdefault((r["topology"], r["workload"], r["procs"], r["mode"]), []).append(float(r["seconds"]))
        return {k: explib.spread(v) for k, v in groups.items()}

    def medians(self, pred) -> dict[tuple, float]:
        return {k: s.median for k, s in self.spreads(pred).items()}

    def topology_label(self, t: str) -> str:
        return f"{t} (emulated)" if self.is_emulated(t) else f"{t} (real)"

    def real(self) -> str:
        """What a hardware timing of this run is: REAL, on this machine, of the kind it is."""
        kind = self.machine.get("machine_kind")
        return "REAL: timed on this machine" + (f", {tex(kind)}" if kind else "") + ", not emulated"

    def topology_source(self, topologies, machine: dict | None = None) -> str:
        """What the emulated or virtual topologies of this run were, from machine.json's specs: the
        hwloc XML files of real machines (a checkout with ../shared/topologies), or hwloc synthetic
        machines of their shapes, whose remote distances are all one value."""
        topo = (machine or self.machine).get("topologies", {})
        specs = [str(topo.get(t, {}).get("spec", "")) for t in topologies]
        if specs and all(sp.startswith("synthetic:") for sp in specs):
            return "hwloc synthetic machines of those shapes, every remote distance the same"
        if specs and all(sp.startswith("xml:") for sp in specs):
            return "hwloc XML files of real machines"
        return "hwloc descriptions (XML files of real machines or synthetic ones of their shapes; machine.json says which)"

    def is_emulated(self, t: str) -> bool:
        return any(r["emulated"] for r in self.rows if r["topology"] == t)

    def provenance(self, topologies: list[str], memory: bool) -> str:
        real = [t for t in topologies if not self.is_emulated(t)]
        emulated = [t for t in topologies if t not in real]
        parts = []
        if real:
            kind = self.machine.get("machine_kind")
            parts.append(f"real topology: {tex(', '.join(real))} ({tex(self.machine.get('cpu_model', 'this machine'))}"
                         + (f", {tex(kind)}" if kind else "") + ")")
        if emulated:
            parts.append(f"EMULATED topologies: {tex(', '.join(emulated))} ({self.topology_source(emulated)}, folded onto this machine's "
                         f"{self.machine.get('cpus_online', '?')} CPUs: scheduler decisions, not hardware timings)")
        if memory and emulated:
            on = any(r["latency_model"] for r in self.rows if r["workload"] in MEMORY and r["topology"] in emulated)
            parts.append("emulated memory latency model ON for the memory-bound workloads on the emulated topologies"
                         if on else "emulated memory latency model off")
        return "; ".join(parts)

    # ---- the figures ----

    def scalability(self) -> None:
        med = self.spreads(lambda r: True)
        workloads = sorted({k[1] for k in med})
        topologies = sorted({k[0] for k in med}, key=lambda t: (t != "machine", t))
        if not workloads:
            self.missing.append("scalability (no timed runs)")
            return
        cols = 4
        rows = (len(workloads) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
        markers = {t: "osD^v<>ph*"[i % 10] for i, t in enumerate(topologies)}
        for ax, w in zip(axes.flat, workloads):
            work = {r["topology"]: float(r["work"]) for r in self.rows if r["workload"] == w and r["work"]}
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
                            label=f"{self.topology_label(t)} {mode}")
                    ax.errorbar(xs, ys, yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                                fmt="none", ecolor=color, elinewidth=0.8, capsize=2)
                    # Oversubscribed points (more Ps than CPUs) hollow: their timings are not quoted.
                    over = [(x, y) for x, y, *_ in pts if self.oversubscribed(x)]
                    if over:
                        ax.plot([x for x, _ in over], [y for _, y in over], marker=markers[t], markersize=4,
                                linestyle="none", color=color, markerfacecolor="white")
            ax.set_title(w, fontsize=9)
            ax.set_xscale("log", base=2)
            ax.set_ylim(bottom=0)
            unit = next((r["unit"] for r in self.rows if r["workload"] == w and r["unit"]), "work")
            ax.set_ylabel(f"{unit}/s", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.set_xlabel("Ps", fontsize=7)
        for ax in list(axes.flat)[len(workloads):]:
            ax.axis("off")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower right", fontsize=7, ncol=2)
        fig.suptitle("Throughput (work/s) by P count: flat, NUMA mode and Go", fontsize=10)
        self.save(fig, "scalability",
                  "Throughput of every workload by P count, flat mode (blue), NUMA mode (red) and the Go 1.19 "
                  "twin (grey, dashed): medians of the repetitions with their 95\\% bootstrap confidence "
                  "intervals; hollow markers: more Ps than CPUs (oversubscribed, not quoted). "
                  f"Results: \\texttt{{{self.where('results.csv')}}}; "
                  + self.provenance(topologies, memory=True) + ".")

    def peers(self) -> None:
        """Per workload kind: every runtime's time relative to nugo's flat mode, on this machine,
        at each P count it can run without oversubscription, with intervals; and, for the paper,
        the geometric mean of nugo's time over each peer's per kind at the largest such P count."""
        for kind in KINDS:
            for m in PEER_STYLE:
                self.na(f"Peer{m.title()}{kind.title()}", f"Peer{m.title()}{kind.title()}Verdict")
                self.interval(f"Peer{m.title()}{kind.title()}", None, None, "")
        self.na("PeerProcs")
        self.tables["Peers"] = "\\emph{No peer ran.}"
        spr = self.spreads(lambda r: r["topology"] == "machine" and not self.oversubscribed(r["procs"]))
        runtimes = [m for m in PEER_STYLE if any(k[3] == m for k in spr)]
        if not any(m != "go" for m in runtimes):
            self.missing.append("peers (no runs of oneTBB, OpenMP or Boost.Fiber)")
            return
        kind_of = {r["workload"]: r["kind"] for r in self.rows if r["kind"]}
        procs = sorted({k[2] for k in spr if k[3] == "flat"})
        top = procs[-1] if procs else None
        self.number("PeerProcs", top, self.where("results.csv"))
        body = []
        for kind in KINDS:
            for w in sorted({k[1] for k in spr if k[3] == "flat" and k[2] == top and kind_of.get(k[1]) == kind}):
                cells = []
                for m in PEER_STYLE:
                    if ("machine", w, top, m) not in spr:
                        cells.append("--")
                        continue
                    flat, other = spr[("machine", w, top, "flat")], spr[("machine", w, top, m)]
                    r, lo, hi = explib.ratio_interval(flat, other)  # nugo's time over the peer's
                    cells.append(f"{'' if flat.differs(other) else SIM}{explib.fmt(r)} "
                                 f"\\scriptsize({explib.fmt(lo)}--{explib.fmt(hi)})")
                body.append(f"{tex(w)} & {kind} & " + " & ".join(cells) + " \\\\")
        self.tables["Peers"] = (
            "\\begin{tabular}{llrrrr}\\toprule\n"
            "workload & kind & " + " & ".join(PEER_STYLE[m][0] for m in PEER_STYLE) + " \\\\\n\\midrule\n"
            + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}")
        for kind in KINDS:
            groups = sorted({(k[1], k[2]) for k in spr if k[3] == "flat" and kind_of.get(k[1]) == kind})
            shown = [m for m in runtimes if any(("machine", w, n, m) in spr for w, n in groups)]
            if not groups or not shown:
                continue
            fig, ax = plt.subplots(figsize=(min(12.0, max(5.0, 0.8 * len(groups) + 1.5)), 3.6))
            width = 0.8 / len(shown)
            for i, m in enumerate(shown):
                xs, ys, lo, hi = [], [], [], []
                for g, (w, n) in enumerate(groups):
                    x, flat = spr.get(("machine", w, n, m)), spr[("machine", w, n, "flat")]
                    if not x:
                        continue
                    r, r_lo, r_hi = explib.ratio_interval(x, flat)  # the peer's time over nugo's
                    xs.append(g + (i - (len(shown) - 1) / 2) * width)
                    ys.append(r)
                    lo.append(r - r_lo)
                    hi.append(r_hi - r)
                label, color = PEER_STYLE[m]
                ax.bar(xs, ys, width, color=color, label=label)
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
            ax.axhline(1.0, color="tab:blue", linewidth=1, label="nugo (flat mode)")
            ax.set_yscale("log")
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels([f"{w}\n{n} P" for w, n in groups], fontsize=7)
            ax.set_ylabel("time / nugo's time", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=7, ncol=len(shown) + 1, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
            ax.set_title(f"{kind} workloads: each runtime against nugo (below 1: faster than nugo)", fontsize=9)
            self.save(fig, f"peers-{kind}",
                      f"The {kind} workloads: each runtime's median time over nugo's (flat mode) at the same P count "
                      "(worker threads), with the ratio's interval from the ends of the two 95\\% bootstrap "
                      "intervals; below 1 the runtime is faster than nugo. The C++ peers are bound one thread per "
                      "CPU as nugo is; Go binds nothing. Hardware timings, real topology: "
                      f"{tex(self.machine.get('cpu_model', 'this machine'))}. "
                      f"Results: \\texttt{{{self.where('results.csv')}}}.")
            for m in shown:
                ratios = [explib.ratio_interval(spr[("machine", w, top, "flat")], spr[("machine", w, top, m)])
                          for w, n in groups if n == top and ("machine", w, top, m) in spr]
                if ratios:
                    self.geomean_interval(f"Peer{m.title()}{kind.title()}", ratios,
                                          f"{self.where('results.csv')}: geometric mean of flat/{m} over "
                                          f"{len(ratios)} {kind} workloads at {top} P")

    def locality(self) -> None:
        self.locality_numbers({})
        acc: dict[tuple, dict] = {}  # (topology, mode) and (topology, mode, procs): the counts
        by_distance: dict[tuple, dict[int, int]] = {}
        for r in self.rows:
            if r["ok"] == 1 and r["mode"] in ("flat", "numa") and self.nodes(r["topology"]) > 1 and r["runs"]:
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
        self.locality_numbers(acc)
        if not acc:
            self.missing.append("locality (no multi-node runs)")
            return
        topologies = sorted({k[0] for k in acc})
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
        labels, same, remote = [], [], []
        for t in topologies:
            for mode in ("flat", "numa"):
                # at two Ps per node, as the macros: with one P per node every steal is remote
                a = acc.get((t, mode, 2 * self.nodes(t))) or acc.get((t, mode))
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
        self.save(fig, "locality",
                  "Steal locality, flat against NUMA mode, all workloads and repetitions summed: the share of "
                  "steals from a P of the same node (at two Ps per node), and goroutines moved across nodes by distance "
                  "(the compute and communication workloads: the memory-bound ones place goroutines on other nodes "
                  "on purpose, with go\\_on); one colour per topology, NUMA mode hatched, log scale, no bar where "
                  "none moved. "
                  f"Results: \\texttt{{{self.where('results.csv')}}}; " + self.provenance(topologies, memory=False)
                  + ". These are counts of the scheduler's decisions; no timing is involved.")

    def locality_numbers(self, acc: dict) -> None:
        """The paper's locality numbers, at two Ps per node: with one P per node every steal is
        necessarily remote, so mixing P counts would mix two different questions."""
        for t, key in (("2node", "TwoNode"), ("4node", "FourNode"), ("24node", "TwentyFourNode")):
            for mode in ("flat", "numa"):
                m = mode.capitalize()
                a = acc.get((t, mode, 2 * self.nodes(t)))
                steals = a["same"] + a["remote"] if a else 0
                self.number(f"StealsRemote{m}{key}", 100 * a["remote"] / steals if steals else None,
                            self.where("results.csv"), percent=True)
                self.number(f"RunsHome{m}{key}", 100 * a["home"] / a["runs"] if a and a["runs"] else None,
                            self.where("results.csv"), percent=True)

    def memory_speedup(self) -> None:
        self.na("MemorySpeedupTwo", "MemorySpeedupMaxTwo", "MemorySpeedupFour", "MemorySpeedupDifferTwo",
                "MemorySpeedupMaxFour", "MemorySpeedupBasisTwo", "MemorySpeedupBasisFour", "MemorySpeedupRowsTwo")
        multi = lambda r: self.nodes(r["topology"]) > 1  # noqa: E731
        fits = lambda r: not self.oversubscribed(r["procs"])  # noqa: E731
        for kind, macro in (("compute", "ComputeFlatOverNuma"), ("communication", "CommunicationFlatOverNuma")):
            spr = self.spreads(lambda r: r["kind"] == kind and multi(r) and fits(r))
            self.geomean_interval(macro, [explib.ratio_interval(spr[(t, w, n, "flat")], spr[(t, w, n, "numa")])
                                          for (t, w, n, m) in spr if m == "flat" and (t, w, n, "numa") in spr],
                                  self.where("results.csv"))
        spr = self.spreads(lambda r: r["workload"] in MEMORY and multi(r))
        med = {k: v.median for k, v in spr.items()}
        keys = sorted({(k[0], k[1], k[2]) for k in med if (k[0], k[1], k[2], "flat") in med and (k[0], k[1], k[2], "numa") in med})
        if not keys:
            self.missing.append("memory speedup (no memory-bound runs in both modes on a multi-node topology)")
            return
        topologies = sorted({k[0] for k in keys})
        emulated = any(self.is_emulated(t) for t in topologies)
        fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(keys)), 3.6))
        labels = [f"{w}\n{t} {n}P" for t, w, n in keys]
        speedups = [med[(t, w, n, "flat")] / med[(t, w, n, "numa")] for t, w, n in keys]
        over = [self.oversubscribed(n) for _, _, n in keys]
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
            ax.legend(fontsize=7)
        ax.set_xticks(range(len(keys)), labels, fontsize=6, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_ylabel("flat time / NUMA time")
        ax.set_title("Memory-bound workloads: NUMA mode over flat mode"
                     + (" (EMULATED memory latency)" if emulated else ""), fontsize=9)
        model = ("EMULATED MEMORY LATENCY on the emulated topologies: a block of data worked on from a node "
                 "other than its home pays a busy-wait of the block's local time (the least any block of its goroutine took) times (distance - 10)/10. "
                 if emulated else "")
        self.save(fig, "memory-speedup",
                  "Speedup of NUMA mode over flat mode on the memory-bound workloads (median flat time over "
                  f"median NUMA time). {model}Hatched bars ran more Ps than this machine has CPUs, and are "
                  "left out of the numbers quoted in the text where a topology has runs that are not. Error bars: "
                  "from the ends of the two medians' 95\\% bootstrap confidence intervals. "
                  f"Results: \\texttt{{{self.where('results.csv')}}}; "
                  + self.provenance(topologies, memory=True) + ".")
        for t, name in (("2node", "Two"), ("4node", "Four")):
            # Runs with no more Ps than CPUs; when a topology has none (4 nodes on 2 CPUs), all of
            # its runs, and the basis macro says they were oversubscribed.
            mine = [(w, n) for tt, w, n in keys if tt == t]
            fitting = [(w, n) for w, n in mine if not self.oversubscribed(n)]
            s = [med[(t, w, n, "flat")] / med[(t, w, n, "numa")] for w, n in fitting]
            self.number(f"MemorySpeedup{name}", statistics.median(s) if s else None, self.where("results.csv"))
            self.number(f"MemorySpeedupMax{name}", max(s) if s else None, self.where("results.csv"))
            if name == "Two":
                self.number("MemorySpeedupRowsTwo", len(fitting), self.where("results.csv"))
                self.number("MemorySpeedupDifferTwo", sum(1 for w, n in fitting
                                                          if spr[(t, w, n, "flat")].differs(spr[(t, w, n, "numa")])),
                            self.where("results.csv"))
            self.number(f"MemorySpeedupBasis{name}",
                        "over the runs with no more Ps than CPUs" if fitting else
                        "every run had more Ps than this machine has CPUs, so none is quoted: "
                        "the figure shows them, hatched" if mine else "no runs", "")

    def virtual_set(self) -> None:
        """NUMA mode against flat mode on the virtual set (DIR/virtual/: scripts/pipeline/sweep.py
        --topology virtual), in virtual time, and the locality targets judged there."""
        self.na("VirtualSpeedupMemory", "VirtualSpeedupMemoryMax", "VirtualSpeedupOther", "VirtualTargetsMet",
                "VirtualTargetsRows", "VirtualRuns", "VirtualRowsMemory", "VirtualRowsMemoryFaster",
                "VirtualRowsOther", "VirtualRowsOtherDiffer", "VirtualRepetitions", "VirtualMaxCpus",
                "VirtualRowsOtherFaster", "VirtualRowsMemorySlower", "VirtualSpeedupMemoryFasterMin",
                "VirtualSpeedupMemoryFasterMax",
                "VirtualTargetsMetMemory", "VirtualTargetsRowsMemory", "VirtualTopologySource", "VirtualTargetsMetOther", "VirtualTargetsRowsOther",
                *(f"Virtual{what}{m}{n}" for what in ("StealsRemote", "RunsHome", "RemoteBlocks") for m in ("Flat", "Numa")
                  for n in ("Two", "Four", "TwentyFour")))
        self.tables["Virtual"] = "\\emph{The virtual set did not run.}"
        path = self.dir / "virtual" / "results.csv"
        if not path.exists():
            self.missing.append("virtual (no virtual/results.csv: the virtual set did not run)")
            return
        every = explib.read_results(path)
        rows = [r for r in every if r["ok"] == 1 and r.get("clock") == "virtual"]
        groups: dict[tuple, list[float]] = {}
        for r in rows:
            groups.setdefault((r["topology"], r["workload"], r["procs"], r["mode"]), []).append(float(r["seconds"]))
        spr = {k: explib.spread(v) for k, v in groups.items()}
        keys = sorted({k[:3] for k in spr if (*k[:3], "flat") in spr and (*k[:3], "numa") in spr},
                      key=lambda k: (k[2], k[0], k[1] not in MEMORY, k[1]))
        if not keys:
            self.missing.append("virtual (no workload ran in both modes)")
            return
        src = self.where("virtual/results.csv")
        ratio = {k: explib.ratio_interval(spr[(*k, "flat")], spr[(*k, "numa")]) for k in keys}
        fig, ax = plt.subplots(figsize=(max(8, 0.32 * len(keys)), 3.8))
        vals = [ratio[k][0] for k in keys]
        ax.bar(range(len(keys)), vals, color=["tab:red" if k[1] in MEMORY else "tab:blue" for k in keys])
        ax.errorbar(range(len(keys)), vals, yerr=[[v - ratio[k][1] for v, k in zip(vals, keys)],
                                                  [ratio[k][2] - v for v, k in zip(vals, keys)]],
                    fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(keys)), [f"{w} {t}" for t, w, n in keys], fontsize=5.5, rotation=60, ha="right",
                      rotation_mode="anchor")
        ax.set_ylabel("flat time / NUMA time (virtual)")
        ax.bar([0], [0], color="tab:red", label="memory-bound (latency model charged)")
        ax.bar([0], [0], color="tab:blue", label="compute and communication")
        ax.legend(fontsize=7)
        ax.set_title("VIRTUAL TIME: NUMA mode over flat mode on virtual machines of "
                     + ", ".join(f"{t} ({n} CPUs)" for n, t in sorted({(n, t) for t, _, n in keys})), fontsize=8)
        reps = max(len(v) for v in groups.values())
        vmachine = json.loads((self.dir / "virtual" / "machine.json").read_text()) \
            if (self.dir / "virtual" / "machine.json").exists() else {}
        vsource = self.topology_source(sorted({t for t, _, _ in keys}), vmachine)
        self.number("VirtualTopologySource", vsource, src)
        self.save(fig, "virtual",
                  "VIRTUAL TIME, not hardware: NUMA mode over flat mode (median flat time over median NUMA time, "
                  f"up to {reps} runs each) on virtual machines of the shapes of real ones (v2x16: the 2-socket Xeon, "
                  f"32 CPUs; v4x24: the 4-socket Xeon, 96; v24x16: the 24-node em64t, 384; in this run {vsource}), one P per CPU. The runtime's "
                  "unchanged scheduler ran one thread at a time in the order of virtual clocks; each clock is the CPU "
                  "time its thread used plus the cost model's charges: a cache line by node distance (48 ns in a node, "
                  "122 ns at the nearest remote distance) for steals, queue takes, wake-ups and goroutines changing P, "
                  "and, for the memory-bound workloads, the emulated memory latency model's remote blocks. "
                  "Projections of the model, not measurements of a machine. Error bars: from the ends of the two "
                  f"medians' 95\\% bootstrap intervals. Results: \\texttt{{{src}}}.")
        mem = [ratio[k][0] for k in keys if k[1] in MEMORY]
        other = [ratio[k][0] for k in keys if k[1] not in MEMORY]
        # A row "differs" when its interval excludes 1 (the two medians' intervals part).
        differs = {k: spr[(*k, "flat")].differs(spr[(*k, "numa")]) for k in keys}
        self.number("VirtualRowsMemory", sum(1 for k in keys if k[1] in MEMORY), src)
        self.number("VirtualRowsMemoryFaster", sum(1 for k in keys if k[1] in MEMORY and differs[k]
                                                   and ratio[k][0] > 1), src)
        self.number("VirtualRowsOther", sum(1 for k in keys if k[1] not in MEMORY), src)
        self.number("VirtualRowsOtherDiffer", sum(1 for k in keys if k[1] not in MEMORY and differs[k]), src)
        self.number("VirtualRowsOtherFaster", sum(1 for k in keys if k[1] not in MEMORY and differs[k] and ratio[k][0] > 1), src)
        self.number("VirtualRowsMemorySlower", sum(1 for k in keys if k[1] in MEMORY and differs[k] and ratio[k][0] < 1), src)
        faster = [ratio[k][0] for k in keys if k[1] in MEMORY and differs[k] and ratio[k][0] > 1]
        self.number("VirtualSpeedupMemoryFasterMin", min(faster) if faster else None, src)
        self.number("VirtualSpeedupMemoryFasterMax", max(faster) if faster else None, src)
        self.number("VirtualRepetitions", reps, src)
        self.number("VirtualMaxCpus", max(k[2] for k in keys), src)
        machines = sorted({(n, t) for t, _, n in keys})
        workloads = sorted({k[1] for k in keys}, key=lambda w: (w not in MEMORY, w))
        body = []
        for w in workloads:
            cells = []
            for n, t in machines:
                k = (t, w, n)
                if k not in ratio:
                    cells.append("--")
                    continue
                r, lo, hi = ratio[k]
                cells.append(f"{'' if differs[k] else SIM}{explib.fmt(r)} "
                             f"\\scriptsize({explib.fmt(lo)}--{explib.fmt(hi)})")
            body.append(tex(w) + " & " + " & ".join(cells) + " \\\\")
        self.tables["Virtual"] = (
            "\\begin{tabular}{l" + "r" * len(machines) + "}\\toprule\n"
            "workload & " + " & ".join(f"{tex(t)} ({n} CPUs)" for n, t in machines) + " \\\\\n\\midrule\n"
            + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}")
        self.number("VirtualSpeedupMemory", statistics.median(mem) if mem else None, src)
        self.number("VirtualSpeedupMemoryMax", max(mem) if mem else None, src)
        self.number("VirtualSpeedupOther", statistics.median(other) if other else None, src)
        self.number("VirtualRuns", len(rows), src)
        targets = sweep.summarize(every)["targets"]
        met = lambda t: t[">= 95%"] == "met" and t["<= 10%"] == "met"  # noqa: E731
        self.number("VirtualTargetsMet", sum(1 for t in targets if met(t)), src)
        self.number("VirtualTargetsRows", len(targets), src)
        for name, pick in (("Memory", lambda t: t["workload"] in MEMORY), ("Other", lambda t: t["workload"] not in MEMORY)):
            self.number(f"VirtualTargetsMet{name}", sum(1 for t in targets if pick(t) and met(t)), src)
            self.number(f"VirtualTargetsRows{name}", sum(1 for t in targets if pick(t)), src)
        # Locality counters where no P is folded: every workload and repetition summed, per
        # virtual machine and mode.
        for t, name in (("v2x16", "Two"), ("v4x24", "Four"), ("v24x16", "TwentyFour")):
            for mode in ("flat", "numa"):
                mine = [r for r in rows if r["topology"] == t and r["mode"] == mode]
                steals = sum(int(r["steals_same_node"] or 0) + int(r["steals_remote"] or 0) for r in mine)
                runs = sum(int(r["runs"] or 0) for r in mine)
                blocks = sum(int(r["blocks"] or 0) for r in mine if r["workload"] in MEMORY)
                m = mode.title()
                self.number(f"VirtualStealsRemote{m}{name}",
                            100 * sum(int(r["steals_remote"] or 0) for r in mine) / steals if steals else None,
                            src, percent=True)
                self.number(f"VirtualRunsHome{m}{name}",
                            100 * sum(int(r["runs_home"] or 0) for r in mine) / runs if runs else None, src, percent=True)
                self.number(f"VirtualRemoteBlocks{m}{name}",
                            100 * sum(int(r["remote_blocks"] or 0) for r in mine if r["workload"] in MEMORY) / blocks
                            if blocks else None, src, percent=True)

    def virtual_validation(self) -> None:
        """Virtual time's validation (DIR/virtual-validation/virtual.json, scripts/pipeline/virtual.py): its
        agreement with real time at 1 and 2 Ps, fork-join on many virtual CPUs, determinism."""
        macros = ("ValidationRatioMin", "ValidationRatioMax", "ValidationRows", "ValidationInside", "ValidationOutside",
                  "ValidationTopCpus", "ValidationFibTop", "ValidationSkynetTop", "ValidationUtsTop",
                  "ValidationLawsBroken", "ValidationDeterminism")
        self.na(*macros)
        path = self.dir / "virtual-validation" / "virtual.json"
        if not path.exists():
            self.missing.append("virtual-speedup (no virtual-validation/virtual.json: scripts/pipeline/virtual.py did not run)")
            return
        d, src = json.loads(path.read_text()), self.where("virtual-validation/virtual.json")
        first = lambda cell: float(str(cell).split()[0])  # noqa: E731  "1.03 (0.79-1.59)" -> 1.03
        ratios = [first(row[4]) for row in d["agreement"]]
        self.number("ValidationRatioMin", min(ratios) if ratios else None, src)
        self.number("ValidationRatioMax", max(ratios) if ratios else None, src)
        self.number("ValidationRows", len(ratios), src)
        # scripts/pipeline/virtual.py's verdicts: the ratio's interval inside the bar, outside it, or across it.
        self.number("ValidationInside", sum(1 for row in d["agreement"] if row[5].startswith("within")), src)
        self.number("ValidationOutside", sum(1 for row in d["agreement"] if row[5].startswith("outside")), src)
        top = max((row[1] for row in d["scaling"]), default=None)
        self.number("ValidationTopCpus", top, src)
        for w, macro in (("fib", "ValidationFibTop"), ("skynet", "ValidationSkynetTop"), ("uts", "ValidationUtsTop")):
            row = next((r for r in d["scaling"] if r[0] == w and r[1] == top), None)
            self.number(macro, first(row[3]) if row else None, src)
        self.number("ValidationLawsBroken", len(d.get("broken", [])), src)
        det = next((r for r in d.get("determinism", []) if r[0] == "seconds"), None)
        self.number("ValidationDeterminism", tex(det[4]) if det else None, src)
        png = self.dir / "virtual-validation" / "speedup.png"
        if png.exists():
            self.adopt(png, "virtual-speedup", (
                "VIRTUAL TIME, not hardware: fork-join speedup over one virtual CPU on virtual machines of the "
                "24-node em64t's shape, 1 to "
                f"{top} CPUs, flat mode, with the work law's bound; each point is the median of "
                f"{d['settings'].get('repetitions')} runs. Drawn by \\texttt{{scripts/pipeline/virtual.py}}. "
                f"Results: \\texttt{{{src}}}."))

    def micro(self) -> None:
        self.na("MicroCreateVsGo", "MicroChanSyncVsGo", "MicroYieldVsFiber", "MicroYieldVsRawSwitch",
                "MicroSkynetVsGo", "MicroFanoutVsGo", "MicroFanoutRssVsGo", "MicroSkynetRssVsGo", "MicroYieldVsRawSwitchNugo",
                "MicroRepetitions")
        path = self.dir / "micro" / "micro.json"
        if not path.exists():
            self.missing.append("micro (no micro/micro.json)")
            return
        data = json.loads(path.read_text())
        every = {r["benchmark"]: r for r in data["rows"]}
        rows = [r for r in data["rows"] if r["go"] or r["fiber"]]
        # times only (ns per something): peak RSS, cores and latency rows are other quantities
        rows = [r for r in rows if r["nugo"] and not r.get("absolute") and r["unit"].startswith("ns/")]
        fig, ax = plt.subplots(figsize=(9, 3.6))
        names = [r["benchmark"] for r in rows]
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], [r["nugo"] / r["go"] if r["go"] else 0 for r in rows], 0.4,
               color="tab:red", label="nugo / Go 1.19")
        ax.bar([i + 0.2 for i in x], [r["nugo"] / r["fiber"] if r["fiber"] else 0 for r in rows], 0.4,
               color="tab:purple", label="nugo / Boost.Fiber")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(list(x), names, rotation=60, ha="right", fontsize=6)
        ax.set_ylabel("time ratio (< 1: nugo faster)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over, the bars
        self.save(fig, "micro",
                  "Scheduler micro-benchmarks: nugo's time per operation over Go 1.19's and Boost.Fiber's, "
                  f"measured side by side in one run ({self.real()}). Results: "
                  f"\\texttt{{{self.where('micro/micro.json')}}}.")
        by = {r["benchmark"]: r for r in rows}

        def ratio(name, other):
            r = by.get(name)
            return r["nugo"] / r[other] if r and r[other] else None
        self.number("MicroCreateVsGo", ratio("create_and_run/procs:1", "go"), self.where("micro/micro.json"))
        self.number("MicroChanSyncVsGo", ratio("chan_sync/procs:1", "go"), self.where("micro/micro.json"))
        self.number("MicroYieldVsFiber", ratio("yield_ping/procs:1", "fiber"), self.where("micro/micro.json"))
        self.number("MicroSkynetVsGo", ratio("skynet/procs:2", "go"), self.where("micro/micro.json"))
        self.number("MicroFanoutVsGo", ratio("fanout_100k/procs:2", "go"), self.where("micro/micro.json"))
        raw, ping = every.get("raw_switch"), every.get("yield_ping/procs:1")
        own = every.get("raw_switch_nugo")
        self.number("MicroYieldVsRawSwitchNugo", ping["nugo"] / own["nugo"] if own and ping and own["nugo"] else None,
                    self.where("micro/micro.json"))
        self.number("MicroYieldVsRawSwitch", ping["nugo"] / raw["nugo"] if raw and ping and raw["nugo"] else None,
                    self.where("micro/micro.json"))
        for name, macro in (("fanout_100k/procs:2 peak RSS", "MicroFanoutRssVsGo"),
                            ("skynet/procs:2 peak RSS", "MicroSkynetRssVsGo")):
            r = every.get(name)
            self.number(macro, r["nugo"] / r["go"] if r and r["nugo"] and r["go"] else None,
                        self.where("micro/micro.json"))
        self.number("MicroRepetitions", data.get("settings", {}).get("repetitions"), self.where("micro/micro.json"))

    def preempt(self) -> None:
        self.na("PreemptNugoPNinetyNine", "PreemptGoPNinetyNine", "PreemptNugoSlices", "PreemptGoSlices", "PreemptLossTenMs", "PreemptLossOneMs",
                "PreemptLossTwoHundredUs", "PreemptGoLoss", "SysmonCoresTenMs", "SysmonCoresOneMs", "SysmonCoresOff", "PreemptRounds")
        for c in ("TenMs", "OneMs", "TwoHundredUs"):
            self.interval(f"PreemptLoss{c}", None, None, "")
        self.preempt_whole()
        path = self.dir / "preempt" / "preempt.json"
        if not path.exists():
            self.missing.append("preemption (no preempt/preempt.json)")
            return
        d = json.loads(path.read_text())
        series = []
        for key, b in sorted(d["nugo"].items()):
            if key.startswith("preempt_latency/") and "p50_us" in b:
                series.append((f"nugo {key.split('/')[1]}", b["p50_us"] / 1e3, b["p99_us"] / 1e3, b.get("slice_us", 0) / 1e3))
        g = d.get("go", {}).get("BenchmarkPreemptLatency")
        if g:
            series.append(("Go 1.19 (10 ms, fixed)", g["p50_us"] / 1e3, g["p99_us"] / 1e3, 10.0))
        fig, ax = plt.subplots(figsize=(8, 3.2))
        x = range(len(series))
        ax.bar([i - 0.2 for i in x], [s[1] for s in series], 0.4, color="tab:blue", label="p50")
        ax.bar([i + 0.2 for i in x], [s[2] for s in series], 0.4, color="tab:red", label="p99")
        ax.scatter(list(x), [s[3] for s in series], marker="_", s=400, color="black", label="configured slice", zorder=3)
        ax.set_yscale("log")
        ax.set_xticks(list(x), [s[0] for s in series], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("wake delay (ms)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.save(fig, "preempt",
                  "Preemption latency: how long a goroutine that became runnable waits behind CPU hogs, p50 and "
                  "p99, for nugo's time slices (lock\\_hog: the hog holds a std::mutex) and for Go 1.19 "
                  f"({self.real()}). Results: \\texttt{{{self.where('preempt/preempt.json')}}}.")
        ten = d["nugo"].get("preempt_latency/slice:10ms")
        self.number("PreemptNugoPNinetyNine", ten["p99_us"] / 1e3 if ten else None, self.where("preempt/preempt.json"))
        self.number("PreemptGoPNinetyNine", g["p99_us"] / 1e3 if g else None, self.where("preempt/preempt.json"))
        # The p99 in slices of 10 ms: nugo's at its default slice, Go's at its fixed one.
        self.number("PreemptNugoSlices", ten["p99_us"] / 1e4 if ten else None, self.where("preempt/preempt.json"), digits=2)
        self.number("PreemptGoSlices", g["p99_us"] / 1e4 if g else None, self.where("preempt/preempt.json"), digits=2)
        over, src = d.get("overhead", {}), self.where("preempt/preempt.json")
        for config, macro in (("slice:10ms", "TenMs"), ("slice:1ms", "OneMs"), ("slice:200us", "TwoHundredUs")):
            losses = over.get("nugo_loss", {}).get(config)
            if losses:
                sp = explib.spread([100 * x for x in losses])
                self.number(f"PreemptLoss{macro}", sp.median, src, percent=True)
                self.interval(f"PreemptLoss{macro}", sp.ci_lo if sp.n > 1 else None, sp.ci_hi if sp.n > 1 else None,
                              src, percent=True)
        if over.get("go_loss"):
            self.number("PreemptGoLoss", 100 * statistics.median(over["go_loss"]), src, percent=True)
        for config, macro in (("slice:10ms", "TenMs"), ("slice:1ms", "OneMs"), ("async:off", "Off")):
            cores = over.get("nugo_other_cores", {}).get(config)
            self.number(f"SysmonCores{macro}", 100 * statistics.median(cores) if cores else None, src, percent=True)
        self.number("PreemptRounds", d.get("settings", {}).get("rounds"), src)

    def preempt_whole(self) -> None:
        """Preemption's cost on whole workloads (preempt/workloads.json, scripts/pipeline/preempt.py)."""
        self.na("PreemptWholeWorkloads", "PreemptWholeRounds")
        for c in ("TenMs", "OneMs", "TwoHundredUs"):
            self.na(f"PreemptWhole{c}", f"PreemptWhole{c}Differ", f"PreemptWhole{c}Verdict", f"PreemptWhole{c}Faster",
                    f"PreemptWhole{c}Slower")
            self.interval(f"PreemptWhole{c}", None, None, "")
        path = self.dir / "preempt" / "workloads.json"
        if not path.exists():
            self.missing.append("preemption on whole workloads (no preempt/workloads.json)")
            return
        d, src = json.loads(path.read_text()), self.where("preempt/workloads.json")
        summary = d["summary"]
        self.number("PreemptWholeWorkloads", len(summary), src)
        self.number("PreemptWholeRounds", d["settings"]["rounds"], src)
        for config, macro in (("10ms", "TenMs"), ("1ms", "OneMs"), ("200us", "TwoHundredUs")):
            triples = [(v[config]["median"], v[config]["ci_lo"], v[config]["ci_hi"]) for v in summary.values()]
            self.geomean_interval(f"PreemptWhole{macro}", triples,
                                  f"{src}: geometric mean over the workloads of time at {config} / time with "
                                  "asynchronous preemption off")
            self.number(f"PreemptWhole{macro}Differ", sum(1 for v in summary.values() if v[config]["differs"]), src)
            self.number(f"PreemptWhole{macro}Faster", sum(1 for v in summary.values() if v[config]["ci_hi"] < 1), src)
            self.number(f"PreemptWhole{macro}Slower", sum(1 for v in summary.values() if v[config]["ci_lo"] > 1), src)

    def http(self) -> None:
        self.na("HttpVsGoRaw", "HttpVsNetHttp")
        path = self.dir / "net" / "net.json"
        if not path.exists():
            self.missing.append("http (no net/net.json)")
            return
        h = json.loads(path.read_text())["http"]
        servers = [("nugo", "nugo-http", "tab:red"), ("goraw", "Go raw (package net)", "tab:gray"),
                   ("go", "Go net/http", "tab:olive")]
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
        for i, (key, label, color) in enumerate(servers):
            for ax, metric in ((left, "rps"), (right, "p99_ms")):
                vals = [h[f"{key}/{c}"] for c in (100, 400)]
                med = [v[metric] for v in vals]
                err = [[m - v.get(f"{metric}_min", m) for m, v in zip(med, vals)],
                       [v.get(f"{metric}_max", m) - m for m, v in zip(med, vals)]]
                ax.bar([j + (i - 1) * 0.27 for j in range(2)], med, 0.27, yerr=err, color=color, label=label, capsize=2)
        for ax, title in ((left, "requests/s"), (right, "p99 latency (ms)")):
            ax.set_xticks([0, 1], ["100 connections", "400 connections"])
            ax.set_title(title, fontsize=9)
        left.legend(fontsize=7)
        self.save(fig, "http",
                  "HTTP /echo under wrk on loopback: throughput and p99 latency of nugo-http, the Go 1.19 twin "
                  "with the same minimal parser (Go raw) and Go's net/http; median and range over the runs "
                  f"({self.real()}). Results: \\texttt{{{self.where('net/net.json')}}}.")
        self.number("HttpVsGoRaw", h["nugo/100"]["rps"] / h["goraw/100"]["rps"], self.where("net/net.json"))
        self.number("HttpVsNetHttp", h["nugo/100"]["rps"] / h["go/100"]["rps"], self.where("net/net.json"))

    def tracer(self) -> None:
        """What tracing costs when on (trace/overhead.json, scripts/pipeline/tracer.py)."""
        for b, macro in (("yield_ping", "TracerYield"), ("skynet/procs:1", "TracerSkynet")):
            self.na(macro)
            self.interval(macro, None, None, "")
        path = self.dir / "trace" / "overhead.json"
        if not path.exists():
            self.missing.append("tracer cost (no trace/overhead.json)")
            return
        src = self.where("trace/overhead.json")
        rows = {r["benchmark"]: r for r in json.loads(path.read_text()).get("tracing_on", [])}
        for b, macro in (("yield_ping", "TracerYield"), ("skynet/procs:1", "TracerSkynet")):
            r = rows.get(b) or next((v for k, v in rows.items() if k.startswith(b.split("/")[0])), None)
            if r:
                self.number(macro, r["ratio"], src)
                self.interval(macro, *r["ratio_range"], src)

    def timeline(self) -> None:
        src = self.dir / "trace" / "timeline-fork-join.png"
        if not src.exists():
            self.missing.append("timeline (no trace/timeline-fork-join.png)")
            return
        self.adopt(src, "timeline", (
            "A timeline from the execution tracer: fork-join fib(20) at 4 Ps, flat mode above and NUMA mode "
            "below, on the EMULATED 2-node machine (scheduler decisions only). Drawn by "
            f"\\texttt{{scripts/tools/timeline.py}} from \\texttt{{{self.where('trace/fork-join-flat.json')}}} and "
            f"\\texttt{{{self.where('trace/fork-join-numa.json')}}}."))

    # ---- the ablation (scripts/pipeline/ablation.py) ----

    def ablation_spreads(self) -> dict[tuple, explib.Spread]:
        """Seconds per (topology, Ps, workload, arm, penalty; 0 for no model)."""
        groups: dict[tuple, list[float]] = {}
        for r in self.ablation_rows:
            key = (r["topology"], r["procs"], r["workload"], r["arm"], float(r["latency_penalty"] or 0))
            groups.setdefault(key, []).append(float(r["seconds"]))
        return {k: explib.spread(v) for k, v in groups.items()}

    def ablation_config(self) -> tuple[str, int] | None:
        """The configuration the figures show: the first with no more Ps than CPUs, else the first."""
        configs = sorted({(r["topology"], r["procs"]) for r in self.ablation_rows})
        fitting = [c for c in configs if not self.oversubscribed(c[1])]
        return (fitting or configs or [None])[0]

    def ablation(self) -> None:
        self.na("AblationTopology", "AblationProcs", "AblationRepetitions", "AblationRuns", "AblationPenaltyMin",
                "AblationPenaltyMax", "AblationPenaltyShown", "AblationDifferShown", "AblationPairsShown",
                *[f"AblationRemote{a.title()}" for a in ARM_STYLE],
                *[f"AblationSpeedup{a.title()}" for a in ARM_STYLE if a != "flat"],
                *[f"AblationUniform{a.title()}" for a in ARM_STYLE if a != "flat"],
                "FibFlatOverNeither", "FibFlatOverHierarchy", "FibMovedFlat", "FibMovedNeither", "FibMovedHierarchy")
        config = self.ablation_config()
        if not config:
            self.missing.append("ablation (scripts/pipeline/ablation.py did not run)")
            return
        t, n = config
        src = self.where("ablation/results.csv")
        rows = [r for r in self.ablation_rows if (r["topology"], r["procs"]) == config]
        spr = self.ablation_spreads()
        arms = [a for a in ARM_STYLE if any(r["arm"] == a for r in rows)]
        workloads = [w for w in MEMORY if any(r["workload"] == w for r in rows)]
        penalties = sorted({float(r["latency_penalty"]) for r in rows if r["latency_penalty"]})
        if not workloads or not penalties or "flat" not in arms:
            self.missing.append("ablation (no memory-bound runs with the flat arm)")
            return
        base = penalties[0]
        shown = min(penalties, key=lambda r: abs(r - MEASURED_PENALTY))
        over = self.oversubscribed(n)
        self.number("AblationTopology", tex(t), src)
        self.number("AblationProcs", n, src)
        self.number("AblationRepetitions", max(r["repetition"] for r in rows), src)
        self.number("AblationRuns", len(self.ablation_rows), src)
        self.number("AblationPenaltyMin", penalties[0], src)
        self.number("AblationPenaltyMax", penalties[-1], src)
        self.number("AblationPenaltyShown", shown, src)
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
            self.number(f"AblationRemote{a.title()}", statistics.mean(remote) if remote else None, src, percent=True)
            if a != "flat":
                pairs = [(spr[(t, n, w, "flat", shown)], spr[(t, n, w, a, shown)]) for w in workloads
                         if (t, n, w, "flat", shown) in spr and (t, n, w, a, shown) in spr]
                differ_pairs[0] += sum(1 for f, x in pairs if f.differs(x))
                differ_pairs[1] += len(pairs)
                for macro, penalty in ((f"AblationSpeedup{a.title()}", shown), (f"AblationUniform{a.title()}", base)):
                    ratios = [spr[(t, n, w, "flat", penalty)].median / spr[(t, n, w, a, penalty)].median for w in workloads
                              if (t, n, w, "flat", penalty) in spr and (t, n, w, a, penalty) in spr]
                    self.number(macro, statistics.geometric_mean(ratios) if ratios and not over else None, src)
        self.number("AblationDifferShown", differ_pairs[0], src)
        self.number("AblationPairsShown", differ_pairs[1], src)
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
        self.save(fig, "ablation",
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
        self.save(fig, "penalty",
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
                self.number(macro, ratio if fib.differs(other) else
                            f"{explib.fmt(ratio)} (the intervals overlap: no difference)", src)
        for a in ("flat", "neither", "hierarchy"):
            moved = [int(r["moved_remote"]) for r in rows if r["workload"] == "fib" and r["arm"] == a]
            self.number(f"FibMoved{a.title()}", int(statistics.median(moved)) if moved else None, src)

    # ---- the numbers ----

    def sweep_numbers(self) -> None:
        self.na("SweepRuns", "SweepFailed", "SweepWorkloads", "SweepRepetitions", "SweepSize", "MachineCpu",
                "MachineCpus", "MachineKind", "MachineKernel", "MachineCompiler", "GitRevision", "MachineNodes", "ResultsDir",
                "LatencyRemoteFactorTwoNode", "PublishedRemoteLatencyLow", "PublishedRemoteLatencyHigh",
                "LatencyRemoteBlocksFlat")
        src = self.where("results.csv")
        self.number("SweepRuns", len(self.rows), src)
        self.number("SweepFailed", sum(1 for r in self.rows if r["ok"] != 1), src)
        self.number("SweepWorkloads", len({r["workload"] for r in self.rows}), src)
        self.number("SweepRepetitions", max((r["repetition"] for r in self.rows), default=0), src)
        self.number("SweepSize", tex(self.rows[0]["size"]) if self.rows else None, src)
        m = {k: (v if v is not None else "n/a") for k, v in self.machine.items()}
        self.number("MachineCpu", tex(str(m.get("cpu_model", "n/a")).replace("(R)", "").replace("(TM)", "")), "machine.json")
        self.number("MachineCpus", self.cpus or None, "machine.json")
        self.number("MachineKind", tex(m.get("machine_kind", "n/a")), "machine.json")
        self.number("MachineKernel", tex(m.get("kernel", "n/a")), "machine.json")
        self.number("MachineCompiler", tex(m.get("compiler", "n/a")), "machine.json")
        revision = str(m.get("git_revision", "n/a"))
        self.number("GitRevision", tex(revision[:12] + ("-dirty" if revision.endswith("-dirty") else "")), "machine.json")
        self.number("MachineNodes", self.nodes("machine") if "machine" in self.topologies else None, "machine.json")
        self.number("ResultsDir", self.where("."), "")
        emulated = sorted(t for t, v in self.topologies.items() if v.get("emulated"))
        self.number("TopologySource", self.topology_source(emulated) if emulated else None, "machine.json")
        self.number("LatencyRemoteFactorTwoNode", self.distance_factor("2node"), "machine.json")
        self.number("PublishedRemoteLatencyLow", PUBLISHED_REMOTE_LATENCY[0], "shared/reference/numa-and-peers.md")
        self.number("PublishedRemoteLatencyHigh", PUBLISHED_REMOTE_LATENCY[1], "shared/reference/numa-and-peers.md")
        modelled = [r for r in self.rows if r["latency_model"] and r["blocks"]]
        blocks = sum(int(r["blocks"]) for r in modelled if r["mode"] == "flat")
        remote = sum(int(r["remote_blocks"]) for r in modelled if r["mode"] == "flat")
        self.number("LatencyRemoteBlocksFlat", 100 * remote / blocks if blocks else None, src, percent=True)

    def distance_factor(self, topology: str):
        """Remote/local cost the model charges on a topology: its largest distance / 10, from the
        distance matrix the sweep recorded in machine.json."""
        matrix = self.topologies.get(topology, {}).get("distance") or []
        values = [d for row in matrix for d in row]
        return max(values) / 10 if values else None

    def write_generated(self) -> None:
        lines = ["% Generated by scripts/pipeline/plot.py from " + self.where(".") + ": do not edit.",
                 "% Each macro names the results file it came from."]
        if self.machine.get("rehearsal"):
            lines.append(f"% REHEARSAL ({self.machine['rehearsal']}): these numbers check the pipeline; "
                         "none of them is a result.")
        for macro, (value, source) in sorted(self.numbers.items()):
            lines.append(f"\\newcommand{{\\num{macro}}}{{{value}}}  % {source}")
        (self.generated / "numbers.tex").write_text("\n".join(lines) + "\n")
        caps = ["% Generated by scripts/pipeline/plot.py: each figure's caption and whether it exists."]
        for name in ("scalability", "locality", "memory-speedup", "ablation", "penalty", "micro", "preempt", "http",
                     "timeline", "virtual", "virtual-speedup", *(f"peers-{kind}" for kind in KINDS)):
            macro = re.sub(r"[^A-Za-z]", "", name.title())
            text = self.captions.get(name, "Not produced by this run: its experiment did not run.")
            caps.append(f"\\newcommand{{\\caption{macro}}}{{{text}}}")
            caps.append(f"\\newcommand{{\\has{macro}}}{{{'1' if name in self.made else '0'}}}")
        (self.generated / "captions.tex").write_text("\n".join(caps) + "\n")
        tables = ["% Generated by scripts/pipeline/plot.py from " + self.where(".") + ": do not edit."]
        for name in ("Virtual", "Peers"):
            tables.append(f"\\newcommand{{\\table{name}}}{{%\n{self.tables.get(name, 'n/a')}}}")
        (self.generated / "tables.tex").write_text("\n".join(tables) + "\n")


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        return explib.bad_input(PROG, "usage: scripts/pipeline/plot.py RESULTS_DIR")
    results = Path(sys.argv[1])
    if not (results / "results.csv").is_file():
        return explib.bad_input(PROG, f"{results}: no results.csv there (scripts/reproduce.sh writes one)")
    try:
        p = Plotter(results)
    except (OSError, csv.Error, KeyError, ValueError, json.JSONDecodeError) as e:
        return explib.bad_input(PROG, f"{results}: cannot read the results: {e}")
    failed = []
    # A figure that fails is reported and left out; the others, the numbers and the captions are
    # still written, so that the paper builds (printing n/a for what is missing).
    for figure in (p.scalability, p.locality, p.memory_speedup, p.ablation, p.peers, p.micro, p.preempt, p.http,
                   p.tracer, p.timeline, p.virtual_set, p.virtual_validation, p.sweep_numbers):
        try:
            figure()
        except Exception as e:  # noqa: BLE001 -- any error in one figure must not lose the rest
            plt.close("all")
            failed.append(f"{figure.__name__}: {type(e).__name__}: {e}")
    p.write_generated()
    results_md.write(p.generated)  # the same numbers as Markdown, for the README's readers
    print(f"{PROG}: {len(p.made)} figures in {p.figures}: {', '.join(p.made)}")
    for m in p.missing:
        print(f"{PROG}: left out: {m}")
    print(f"{PROG}: {len(p.numbers)} numbers in {p.generated / 'numbers.tex'}, as Markdown in {p.generated / 'results.md'}")
    for f in failed:
        print(f"{PROG}: FAILED: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
