"""The execution tracer's cost and the fork-join timeline (timeline.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json

from pipeline.figures.common import Run

# Every \\num macro this module writes.
MACROS = (
    "TracerSkynet",
    "TracerSkynetCI",
    "TracerYield",
    "TracerYieldCI",
)


def overhead(p: Run) -> None:
    """What tracing costs when on (trace/overhead.json, scripts/pipeline/tracer.py)."""
    for b, macro in (("yield_ping", "TracerYield"), ("skynet/procs:1", "TracerSkynet")):
        p.na(macro)
        p.interval(macro, None, None, "")
    path = p.dir / "trace" / "overhead.json"
    if not path.exists():
        p.missing.append("tracer cost (no trace/overhead.json)")
        return
    src = p.where("trace/overhead.json")
    rows = {r["benchmark"]: r for r in json.loads(path.read_text()).get("tracing_on", [])}
    for b, macro in (("yield_ping", "TracerYield"), ("skynet/procs:1", "TracerSkynet")):
        r = rows.get(b) or next((v for k, v in rows.items() if k.startswith(b.split("/")[0])), None)
        if r:
            p.number(macro, r["ratio"], src)
            p.interval(macro, *r["ratio_range"], src)


def timeline(p: Run) -> None:
    src = p.dir / "trace" / "timeline-fork-join.png"
    if not src.exists():
        p.missing.append("timeline (no trace/timeline-fork-join.png)")
        return
    p.adopt(src, "timeline", (
        "A timeline from the execution tracer: fork-join fib(20) at 4 Ps, flat mode above and NUMA mode "
        "below, on the EMULATED 2-node machine (scheduler decisions only). Drawn by "
        f"\\texttt{{scripts/tools/timeline.py}} from \\texttt{{{p.where('trace/fork-join-flat.json')}}} and "
        f"\\texttt{{{p.where('trace/fork-join-numa.json')}}}."))


def draw(p: Run) -> None:
    """The tracer's cost, then the timeline: each on its own, as either may be missing."""
    try:
        overhead(p)
    finally:
        timeline(p)
