"""The experiment pipeline: what scripts/reproduce.sh runs, and what the tools and checks share.

Each runner is also a command (python3 scripts/pipeline/sweep.py ...); the modules import each
other as `from pipeline import explib`, with scripts/ on the path (each command puts it there).

  catalogue    the machines, the statistics' counters, the locality targets: each defined once
  explib       one command line, subprocesses with timeouts, parsers, spreads, tables, progress
  sweep, ablation, virtual, micro, preempt, net, numa, numa_policies, tracer, ab: the runners
  plot         the figures and the paper's numbers, tables and captions from a results directory,
               a module each in figures/ (draw(run) and MACROS, the literal name of every macro)
  results_md   the same numbers as Markdown (generated/results.md)
  report       the run as one self-contained web page (RUN_DIR/index.html): claims, steps,
               figures, tables, links
"""
