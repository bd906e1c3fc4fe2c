"""Virtual time against real time, and speedups to 256 virtual CPUs (virtual-speedup.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json

from pipeline.figures.common import Run, tex

# Every \\num macro this module writes.
MACROS = (
    "ValidationDeterminism",
    "ValidationFibTop",
    "ValidationInside",
    "ValidationLawsBroken",
    "ValidationWorkSpanBroken",
    "ValidationOutside",
    "ValidationRatioMax",
    "ValidationRatioMin",
    "ValidationRows",
    "ValidationSkynetTop",
    "ValidationTopCpus",
    "ValidationUtsTop",
)


def draw(p: Run) -> None:
    """Virtual time's validation (DIR/virtual-validation/virtual.json, scripts/pipeline/virtual.py): its
    agreement with real time at 1 and 2 Ps, fork-join on many virtual CPUs, determinism."""
    macros = ("ValidationRatioMin", "ValidationRatioMax", "ValidationRows", "ValidationInside", "ValidationOutside",
              "ValidationTopCpus", "ValidationFibTop", "ValidationSkynetTop", "ValidationUtsTop",
              "ValidationLawsBroken", "ValidationWorkSpanBroken", "ValidationDeterminism")
    p.na(*macros)
    path = p.dir / "virtual-validation" / "virtual.json"
    if not path.exists():
        p.missing.append("virtual-speedup (no virtual-validation/virtual.json: scripts/pipeline/virtual.py did not run)")
        return
    d, src = json.loads(path.read_text()), p.where("virtual-validation/virtual.json")
    first = lambda cell: float(str(cell).split()[0])  # noqa: E731  "1.03 (0.79-1.59)" -> 1.03
    ratios = [first(row[4]) for row in d["agreement"]]
    p.number("ValidationRatioMin", min(ratios) if ratios else None, src)
    p.number("ValidationRatioMax", max(ratios) if ratios else None, src)
    p.number("ValidationRows", len(ratios), src)
    # scripts/pipeline/virtual.py's verdicts: the ratio's interval inside the bar, outside it, or across it.
    p.number("ValidationInside", sum(1 for row in d["agreement"] if row[5].startswith("within")), src)
    p.number("ValidationOutside", sum(1 for row in d["agreement"] if row[5].startswith("outside")), src)
    top = max((row[1] for row in d["scaling"]), default=None)
    p.number("ValidationTopCpus", top, src)
    for w, macro in (("fib", "ValidationFibTop"), ("skynet", "ValidationSkynetTop"), ("uts", "ValidationUtsTop")):
        row = next((r for r in d["scaling"] if r[0] == w and r[1] == top), None)
        p.number(macro, first(row[3]) if row else None, src)
    # Every bound broken (the work and span laws, the greedy envelope, the steal bound), and
    # the two laws alone: a law holds for any execution, the envelope and the steal bound are
    # fits to this machine's runs.
    broken = d.get("broken", [])
    p.number("ValidationLawsBroken", len(broken), src)
    p.number("ValidationWorkSpanBroken", sum(1 for b in broken if ": work law:" in b or ": span law:" in b), src)
    det = next((r for r in d.get("determinism", []) if r[0] == "seconds"), None)
    p.number("ValidationDeterminism", tex(det[4]) if det else None, src)
    png = p.dir / "virtual-validation" / "speedup.png"
    if png.exists():
        p.adopt(png, "virtual-speedup", (
            "VIRTUAL TIME, not hardware: fork-join speedup over one virtual CPU on virtual machines of the "
            "24-node em64t's shape, 1 to "
            f"{top} CPUs, flat mode, with linear speedup dotted; each point is the median of "
            f"{d['settings'].get('repetitions')} runs in a seeded random order, its bar the speedup's interval "
            "from the ends of the two medians' 95\\% intervals. Drawn by \\texttt{scripts/pipeline/virtual.py}. "
            f"Results: \\texttt{{{src}}}."))
