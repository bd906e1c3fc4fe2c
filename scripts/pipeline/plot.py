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

Each figure is a module of pipeline/figures/ with a draw(run) and MACROS, the literal name of
every macro it writes; a macro written but not declared there fails the run.
"""
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib, results_md  # noqa: E402
from pipeline.figures import (ablation, hierarchy, http, locality, memory_speedup, micro, peers,  # noqa: E402
                              preempt, scalability, sensitivity, sweep_numbers, tracer, virtual_set,
                              virtual_validation)
from pipeline.figures.common import Run, plt  # noqa: E402

PROG = "plot.py"
# In the order they are drawn (ablation before the peers, as the paper reads them).
FIGURES = (scalability, locality, memory_speedup, ablation, peers, micro, preempt, http, tracer,
           virtual_set, virtual_validation, sensitivity, hierarchy, sweep_numbers)


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        return explib.bad_input(PROG, "usage: scripts/pipeline/plot.py RESULTS_DIR")
    results = Path(sys.argv[1])
    if not (results / "results.csv").is_file():
        return explib.bad_input(PROG, f"{results}: no results.csv there (scripts/reproduce.sh writes one)")
    try:
        p = Run(results)
    except (OSError, csv.Error, KeyError, ValueError, json.JSONDecodeError) as e:
        return explib.bad_input(PROG, f"{results}: cannot read the results: {e}")
    failed = []
    # A figure that fails is reported and left out; the others, the numbers and the captions are
    # still written, so that the paper builds (printing n/a for what is missing).
    for figure in FIGURES:
        p.declared = set(figure.MACROS)
        try:
            figure.draw(p)
        except Exception as e:  # noqa: BLE001 -- any error in one figure must not lose the rest
            plt.close("all")
            failed.append(f"{figure.__name__}: {type(e).__name__}: {e}")
        for macro in p.undeclared:
            failed.append(f"{figure.__name__} wrote \\num{macro}, which its MACROS does not declare")
        p.undeclared = []
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

