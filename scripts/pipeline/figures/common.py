"""What every figure module shares: the run's data, the constants of the figures, and the
registry of the paper's numbers, tables and captions that plot.py writes out.

A figure module (scalability, peers, locality, ...) has a draw(run) and MACROS, the literal
name of every \\num macro it writes; Run.number and Run.interval note any other as undeclared,
and plot.py fails the run on it.
"""
from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

from pipeline import catalogue, explib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MEMORY = ["triad", "stencil", "histogram", "triad_skew", "spmv"]
# The ablation's arms (scripts/pipeline/ablation.py), in its order, with a colour each.
ARM_STYLE = {"flat": "tab:blue", "neither": "tab:cyan", "placement": "tab:green", "hierarchy": "tab:orange",
             "both": "tab:red", "pinned": "tab:purple"}
MEASURED_PENALTY = catalogue.MEASURED_PENALTY
MODE_STYLE = {"flat": ("tab:blue", "-"), "numa": ("tab:red", "-"), "go": ("tab:gray", "--")}
# The runtimes of the peers figures (sweep.py's PEERS and Go), in their order, with a colour each.
PEER_STYLE = {"go": ("Go 1.19", "tab:gray"), "tbb": ("oneTBB", "tab:green"), "omp": ("OpenMP (libgomp)", "tab:orange"),
              "fiber": ("Boost.Fiber", "tab:purple")}
KINDS = ("compute", "memory", "communication")
# Twins that compute the same result by another program (experiments/baselines/README.md, "How
# each kernel is written"): oneTBB's and OpenMP's skynet return the sums through the join instead
# of sending them over a channel per parent, so they time a fork-join, not skynet's channels.
# Shown (marked) in the peers table, left out of the per-kind geometric means the paper quotes.
OTHER_PROGRAM = {("skynet", "tbb"), ("skynet", "omp")}
# Published 2-socket remote/local DRAM latency (../shared/reference/numa-and-peers.md: Intel
# MLC on Cascade Lake 1.74x, Ice Lake 1.60x), beside the latency model's factor. (No band of
# "published speedups" is drawn: it would join "up to" maxima of papers with different
# machines and baselines.)
PUBLISHED_REMOTE_LATENCY = (1.60, 1.74)
SIM = "$\\sim$"  # a ratio whose two medians' intervals overlap: no difference


tex = explib.tex


class Run:
    """One results directory: its rows and machine, and what the figures write from them."""

    def __init__(self, results: Path):
        self.dir = results
        self.figures = results / "figures"
        self.generated = results / "generated"
        self.figures.mkdir(parents=True, exist_ok=True)
        self.generated.mkdir(parents=True, exist_ok=True)
        self.numbers: dict[str, tuple[str, str]] = {}  # macro: (value, where it came from)
        # The same numbers unformatted (numbers.json): what the claims are judged on
        # (scripts/pipeline/claims.py), so that a claim and the paper's text read one value.
        self.values: dict[str, dict] = {}
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
        # The macros the figure module now drawing declares (its MACROS), and any it wrote
        # without declaring: a failure of the run (plot.py), so that every macro's name
        # stands literally in the module that writes it.
        self.declared: set[str] = set()
        self.undeclared: list[str] = []

    def check_declared(self, macro: str) -> None:
        if macro not in self.declared:
            self.undeclared.append(macro)

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

    def where(self, name: str) -> str:
        """A results file as a reader finds it: relative to the repository when inside it."""
        path = (self.dir / name).resolve()
        try:
            return tex(path.relative_to(explib.ROOT))
        except ValueError:
            return tex(path)

    def number(self, macro: str, value, source: str, digits: int = 3, percent: bool = False) -> None:
        self.check_declared(macro)
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
        raw = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        interval = self.values.get(macro, {}).get("interval")  # interval() may come first
        self.values[macro] = {"value": raw, "text": None if value is None else str(value) if raw is None else text,
                              "percent": percent, "interval": interval, "source": source}

    def interval(self, macro: str, lo, hi, source: str, percent: bool = False) -> None:
        """The macro's 95% interval as "lo--hi" (\\num<macro>CI), or n/a without one."""
        self.check_declared(macro + "CI")
        self.values.setdefault(macro, {"value": None, "text": None, "percent": percent, "source": source})
        self.values[macro]["interval"] = None if lo is None or hi is None else [lo, hi]
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
                    "no difference", source)

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

    def write_generated(self) -> None:
        lines = ["% Generated by scripts/pipeline/plot.py from " + self.where(".") + ": do not edit.",
                 "% Each macro names the results file it came from."]
        if self.machine.get("rehearsal"):
            lines.append(f"% REHEARSAL ({self.machine['rehearsal']}): these numbers check the pipeline; "
                         "none of them is a result.")
        for macro, (value, source) in sorted(self.numbers.items()):
            lines.append(f"\\newcommand{{\\num{macro}}}{{{value}}}  % {source}")
        (self.generated / "numbers.tex").write_text("\n".join(lines) + "\n")
        (self.generated / "numbers.json").write_text(json.dumps(
            {"results": str(self.dir), "rehearsal": self.machine.get("rehearsal"),
             "numbers": dict(sorted(self.values.items()))}, indent=1) + "\n")
        caps = ["% Generated by scripts/pipeline/plot.py: each figure's caption and whether it exists."]
        for name in ("scalability", "locality", "memory-speedup", "ablation", "penalty", "micro", "preempt", "http",
                     "timeline", "virtual", "virtual-speedup", "sensitivity", "hierarchy",
                     *(f"peers-{kind}" for kind in KINDS)):
            macro = re.sub(r"[^A-Za-z]", "", name.title())
            text = self.captions.get(name, "Not produced by this run: its experiment did not run.")
            caps.append(f"\\newcommand{{\\caption{macro}}}{{{text}}}")
            caps.append(f"\\newcommand{{\\has{macro}}}{{{'1' if name in self.made else '0'}}}")
        (self.generated / "captions.tex").write_text("\n".join(caps) + "\n")
        tables = ["% Generated by scripts/pipeline/plot.py from " + self.where(".") + ": do not edit."]
        for name in ("Virtual", "Peers", "Sensitivity", "Hierarchy"):
            tables.append(f"\\newcommand{{\\table{name}}}{{%\n{self.tables.get(name, 'n/a')}}}")
        (self.generated / "tables.tex").write_text("\n".join(tables) + "\n")


def legend_below(fig, cell, handles, labels, ncol: int) -> None:
    """A legend for every panel in its own row of the grid (CELL, an empty axes' place), where
    it hides no data; in an axes, not the figure, so that Run.save's tight_layout keeps room for it."""
    ax = fig.add_subplot(cell)
    ax.axis("off")
    ax.legend(handles, labels, loc="center", ncol=ncol, fontsize=8, frameon=False)
