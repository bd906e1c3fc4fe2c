"""The virtual verdicts against virtual time's constants (sensitivity.png, \\tableSensitivity).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json

import matplotlib.ticker

from pipeline import explib
from pipeline.figures.common import Run, tex, plt

# Every \\num macro this module writes.
MACROS = (
    "SensitivityDepends",
    "SensitivityMachines",
    "SensitivityProfile",
    "SensitivityRepetitions",
    "SensitivitySize",
    "SensitivitySurvived",
    "SensitivityVerdicts",
)


def verdicts(p: Run) -> dict[tuple[str, str], dict] | None:
    """(machine, workload) -> sensitivity.py's verdict there, or None when it did not run."""
    path = p.dir / "sensitivity" / "sensitivity.json"
    if not path.exists():
        return None
    d = json.loads(path.read_text())
    return {(v["topology"], v["workload"]): v | {"size": d["settings"]["size"]} for v in d["verdicts"]}


def draw(p: Run) -> None:
    """NUMA against flat mode in virtual time with each model constant halved and doubled
    (DIR/sensitivity/sensitivity.json: scripts/pipeline/sensitivity.py)."""
    p.na(*MACROS)
    p.tables["Sensitivity"] = "\\emph{The sensitivity step did not run.}"
    path = p.dir / "sensitivity" / "sensitivity.json"
    if not path.exists():
        p.missing.append("sensitivity (no sensitivity/sensitivity.json: scripts/pipeline/sensitivity.py did not run)")
        return
    d, src = json.loads(path.read_text()), p.where("sensitivity/sensitivity.json")
    settings, vs = d["settings"], d["verdicts"]
    names = ["baseline"] + [f"{c} x{f:g}" for c in settings["constants"] for f in settings["factors"]]
    p.number("SensitivityVerdicts", len(vs), src)
    p.number("SensitivitySurvived", d["survived"], src)
    p.number("SensitivityDepends", tex(", ".join(sorted({c for v in vs for c in v["depends_on"]}))) or "none", src)
    p.number("SensitivityRepetitions", settings["repetitions"], src)
    p.number("SensitivitySize", tex(settings["size"]), src)
    p.number("SensitivityProfile", tex(settings["profile"]), src)
    p.number("SensitivityMachines", tex(", ".join(settings["machines"])), src)
    short = {"no difference": "=", "NUMA faster": "+", "NUMA slower": "$-$"}
    body = []
    for v in vs:
        cells = []
        for n in names:
            c = v["cells"].get(n)
            if c is None:
                cells.append("--")
                continue
            mark = short[c["verdict"]]
            flip = n != "baseline" and c["verdict"] != v["baseline"]
            cells.append(("\\textbf{" + mark + "}" if flip else mark) + f" {explib.fmt(c['ratio'], 2)}")
        body.append(f"{tex(v['workload'])} ({tex(v['topology'])}) & " + " & ".join(cells) + " & "
                    + ("yes" if v["survives"] else "no") + " \\\\")
    p.tables["Sensitivity"] = (
        "\\begin{tabular}{l" + "r" * len(names) + "l}\\toprule\n"
        "workload & " + " & ".join(tex(n) for n in names) + " & survives \\\\\n\\midrule\n"
        + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}")
    # The figure: for each configuration, flat/NUMA under every setting, with its interval.
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(vs) + 2), 3.6))
    width = 0.8 / len(names)
    for i, n in enumerate(names):
        xs, ys, lo, hi = [], [], [], []
        for k, v in enumerate(vs):
            c = v["cells"].get(n)
            if c is None:
                continue
            xs.append(k - 0.4 + (i + 0.5) * width)
            ys.append(c["ratio"])
            lo.append(c["ratio"] - c["lo"])
            hi.append(c["hi"] - c["ratio"])
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o" if n == "baseline" else ".", markersize=5 if n == "baseline" else 3,
                    elinewidth=0.6, capsize=1, label=n, color="black" if n == "baseline" else None)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.2g"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.2g"))
    ax.set_xticks(range(len(vs)), [f"{v['workload']}\n{v['topology']}" + ("" if v["survives"] else "\n(depends)")
                                   for v in vs], fontsize=6)
    ax.set_ylabel("flat time / NUMA time (virtual)")
    ax.legend(fontsize=5, ncol=4)
    ax.set_title("VIRTUAL TIME: NUMA over flat mode with each model constant halved and doubled", fontsize=8)
    p.save(fig, "sensitivity",
           "VIRTUAL TIME, not hardware: flat mode's median time over NUMA mode's on "
           f"{tex(', '.join(settings['machines']))}, one P per virtual CPU, {tex(settings['size'])} sizes, "
           f"{settings['repetitions']} runs per mode and setting, under the baseline constants and with each of "
           "the quantum, a wake-up's latency, a line's price within a node and across nodes, and the "
           "latency model's penalty halved and doubled, one at a time; bars from the ends of the two medians' "
           "95\\% intervals. A configuration whose verdict (faster, slower, no difference) changes under some "
           f"setting depends on that constant. Results: \\texttt{{{src}}}.")
