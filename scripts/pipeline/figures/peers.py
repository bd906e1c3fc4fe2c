"""nugo against Go and the C++ peers (oneTBB, OpenMP, Boost.Fiber), per kind of workload (peers-*.png, \\tablePeers).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

from pipeline import explib
from pipeline.figures.common import Run, OTHER_PROGRAM, PEER_STYLE, KINDS, SIM, tex, plt

# Every \\num macro this module writes.
MACROS = (
    "PeerFiberCommunication",
    "PeerFiberCommunicationCI",
    "PeerFiberCommunicationVerdict",
    "PeerFiberCompute",
    "PeerFiberComputeCI",
    "PeerFiberComputeVerdict",
    "PeerFiberMemory",
    "PeerFiberMemoryCI",
    "PeerFiberMemoryVerdict",
    "PeerGoCommunication",
    "PeerGoCommunicationCI",
    "PeerGoCommunicationVerdict",
    "PeerGoCompute",
    "PeerGoComputeCI",
    "PeerGoComputeVerdict",
    "PeerGoMemory",
    "PeerGoMemoryCI",
    "PeerGoMemoryVerdict",
    "PeerOmpCommunication",
    "PeerOmpCommunicationCI",
    "PeerOmpCommunicationVerdict",
    "PeerOmpCompute",
    "PeerOmpComputeCI",
    "PeerOmpComputeVerdict",
    "PeerOmpMemory",
    "PeerOmpMemoryCI",
    "PeerOmpMemoryVerdict",
    "PeerProcs",
    "PeerTbbCommunication",
    "PeerTbbCommunicationCI",
    "PeerTbbCommunicationVerdict",
    "PeerTbbCompute",
    "PeerTbbComputeCI",
    "PeerTbbComputeVerdict",
    "PeerTbbMemory",
    "PeerTbbMemoryCI",
    "PeerTbbMemoryVerdict",
)


def draw(p: Run) -> None:
    """Per workload kind: every runtime's time relative to nugo's flat mode, on this machine,
    at each P count it can run without oversubscription, with intervals; and, for the paper,
    the geometric mean of nugo's time over each peer's per kind at the largest such P count."""
    for kind in KINDS:
        for m in PEER_STYLE:
            p.na(f"Peer{m.title()}{kind.title()}", f"Peer{m.title()}{kind.title()}Verdict")
            p.interval(f"Peer{m.title()}{kind.title()}", None, None, "")
    p.na("PeerProcs")
    p.tables["Peers"] = "\\emph{No peer ran.}"
    spr = p.spreads(lambda r: r["topology"] == "machine" and not p.oversubscribed(r["procs"]))
    runtimes = [m for m in PEER_STYLE if any(k[3] == m for k in spr)]
    if not any(m != "go" for m in runtimes):
        p.missing.append("peers (no runs of oneTBB, OpenMP or Boost.Fiber)")
        return
    kind_of = {r["workload"]: r["kind"] for r in p.rows if r["kind"]}
    procs = sorted({k[2] for k in spr if k[3] == "flat"})
    top = procs[-1] if procs else None
    p.number("PeerProcs", top, p.where("results.csv"))
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
                mark = "$^\\dagger$" if (w, m) in OTHER_PROGRAM else ""
                cells.append(f"{'' if flat.differs(other) else SIM}{explib.fmt(r)}{mark} "
                             f"\\scriptsize({explib.fmt(lo)}--{explib.fmt(hi)})")
            body.append(f"{tex(w)} & {kind} & " + " & ".join(cells) + " \\\\")
    p.tables["Peers"] = (
        "\\begin{tabular}{llrrrr}\\toprule\n"
        "workload & kind & " + " & ".join(PEER_STYLE[m][0] for m in PEER_STYLE) + " \\\\\n\\midrule\n"
        + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}"
        + ("\n\n{\\footnotesize $^\\dagger$ another program: the sums return through the join, not over "
           "channels; left out of the geometric means.}" if any(w in {k[1] for k in spr} for w, _ in OTHER_PROGRAM)
           else ""))
    for kind in KINDS:
        groups = sorted({(k[1], k[2]) for k in spr if k[3] == "flat" and kind_of.get(k[1]) == kind})
        shown = [m for m in runtimes if any(("machine", w, n, m) in spr for w, n in groups)]
        if not groups or not shown:
            continue
        fig, ax = plt.subplots(figsize=(min(12.0, max(5.0, 0.8 * len(groups) + 1.5)), 3.6))
        width = 0.8 / len(shown)
        for i, m in enumerate(shown):
            xs, ys, lo, hi, other = [], [], [], [], []
            for g, (w, n) in enumerate(groups):
                x, flat = spr.get(("machine", w, n, m)), spr[("machine", w, n, "flat")]
                if not x:
                    continue
                r, r_lo, r_hi = explib.ratio_interval(x, flat)  # the peer's time over nugo's
                xs.append(g + (i - (len(shown) - 1) / 2) * width)
                ys.append(r)
                other.append((w, m) in OTHER_PROGRAM)
                lo.append(r - r_lo)
                hi.append(r_hi - r)
            label, color = PEER_STYLE[m]
            bars = ax.bar(xs, ys, width, color=color, label=label)
            for bar, o in zip(bars, other):
                if o:
                    bar.set_hatch("xx")
                    bar.set_edgecolor("black")
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5)
        ax.axhline(1.0, color="tab:blue", linewidth=1, label="nugo (flat mode)")
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{w}\n{n} P" for w, n in groups], fontsize=7)
        ax.set_ylabel("time / nugo's time", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, ncol=len(shown) + 1, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
        ax.set_title(f"{kind} workloads: each runtime against nugo (below 1: faster than nugo)", fontsize=9)
        p.save(fig, f"peers-{kind}",
                  f"The {kind} workloads: each runtime's median time over nugo's (flat mode) at the same P count "
                  "(worker threads), with the ratio's interval from the ends of the two 95\\% bootstrap "
                  "intervals; below 1 the runtime is faster than nugo. The C++ peers are bound one thread per "
                  "CPU as nugo is; Go binds nothing. Cross-hatched: a twin that runs another program "
                  "(oneTBB's and OpenMP's skynet return the sums through the join, not over channels). "
                  "Hardware timings, real topology: "
                  f"{tex(p.machine.get('cpu_model', 'this machine'))}. "
                  f"Results: \\texttt{{{p.where('results.csv')}}}.")
        for m in shown:
            ratios = [explib.ratio_interval(spr[("machine", w, top, "flat")], spr[("machine", w, top, m)])
                      for w, n in groups if n == top and ("machine", w, top, m) in spr
                      and (w, m) not in OTHER_PROGRAM]
            if ratios:
                p.geomean_interval(f"Peer{m.title()}{kind.title()}", ratios,
                                      f"{p.where('results.csv')}: geometric mean of flat/{m} over "
                                      f"{len(ratios)} {kind} workloads at {top} P (twins running "
                                      "another program left out)")
