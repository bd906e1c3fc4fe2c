"""The micro-benchmarks against Go and the raw switch (micro.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json

from pipeline.figures.common import Run, plt

# Every \\num macro this module writes.
MACROS = (
    "MicroChanSyncVsGo",
    "MicroCreateVsGo",
    "MicroCreateVsGoGcOff",
    "MicroFanoutRssVsGo",
    "MicroFanoutVsGo",
    "MicroRepetitions",
    "MicroSkynetRssVsGo",
    "MicroSkynetVsGo",
    "MicroYieldVsFiber",
    "MicroYieldVsRawSwitch",
    "MicroYieldVsRawSwitchNugo",
)


def draw(p: Run) -> None:
    p.na("MicroCreateVsGo", "MicroCreateVsGoGcOff", "MicroChanSyncVsGo", "MicroYieldVsFiber", "MicroYieldVsRawSwitch",
            "MicroSkynetVsGo", "MicroFanoutVsGo", "MicroFanoutRssVsGo", "MicroSkynetRssVsGo", "MicroYieldVsRawSwitchNugo",
            "MicroRepetitions")
    path = p.dir / "micro" / "micro.json"
    if not path.exists():
        p.missing.append("micro (no micro/micro.json)")
        return
    data = json.loads(path.read_text())
    every = {r["benchmark"]: r for r in data["rows"]}
    rows = [r for r in data["rows"] if r["go"] or r["fiber"]]
    # times only (ns per something): peak RSS, cores and latency rows are other quantities
    rows = [r for r in rows if r["nugo"] and not r.get("absolute") and r["unit"].startswith("ns/")]
    fig, ax = plt.subplots(figsize=(9, 4.6))  # room for the 8 pt tick labels under the bars
    names = [r["benchmark"] for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["nugo"] / r["go"] if r["go"] else 0 for r in rows], 0.4,
           color="tab:red", label="nugo / Go 1.19")
    ax.bar([i + 0.2 for i in x], [r["nugo"] / r["fiber"] if r["fiber"] else 0 for r in rows], 0.4,
           color="tab:purple", label="nugo / Boost.Fiber")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(list(x), names, rotation=60, ha="right", fontsize=8)  # 8 pt: readable printed
    ax.set_ylabel("time ratio (< 1: nugo faster)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside, not over, the bars
    p.save(fig, "micro",
              "Scheduler micro-benchmarks: nugo's time per operation over Go 1.19's and Boost.Fiber's, "
              f"measured side by side in one run ({p.real()}). Results: "
              f"\\texttt{{{p.where('micro/micro.json')}}}.")
    by = {r["benchmark"]: r for r in rows}

    def ratio(name, other):
        r = by.get(name)
        return r["nugo"] / r[other] if r and r[other] else None
    p.number("MicroCreateVsGo", ratio("create_and_run/procs:1", "go"), p.where("micro/micro.json"))
    create = every.get("create_and_run/procs:1")
    gcoff = data.get("medians", {}).get("go_gcoff", {}).get("create_and_run/procs:1")
    p.number("MicroCreateVsGoGcOff", create["nugo"] / gcoff["time_ns"]
             if create and create["nugo"] and gcoff and gcoff.get("time_ns") else None,
             p.where("micro/micro.json") + " (Go with GOGC=off)")
    p.number("MicroChanSyncVsGo", ratio("chan_sync/procs:1", "go"), p.where("micro/micro.json"))
    p.number("MicroYieldVsFiber", ratio("yield_ping/procs:1", "fiber"), p.where("micro/micro.json"))
    p.number("MicroSkynetVsGo", ratio("skynet/procs:2", "go"), p.where("micro/micro.json"))
    p.number("MicroFanoutVsGo", ratio("fanout_100k/procs:2", "go"), p.where("micro/micro.json"))
    raw, ping = every.get("raw_switch"), every.get("yield_ping/procs:1")
    own = every.get("raw_switch_nugo")
    p.number("MicroYieldVsRawSwitchNugo", ping["nugo"] / own["nugo"] if own and ping and own["nugo"] else None,
                p.where("micro/micro.json"))
    p.number("MicroYieldVsRawSwitch", ping["nugo"] / raw["nugo"] if raw and ping and raw["nugo"] else None,
                p.where("micro/micro.json"))
    for name, macro in (("fanout_100k/procs:2 peak RSS", "MicroFanoutRssVsGo"),
                        ("skynet/procs:2 peak RSS", "MicroSkynetRssVsGo")):
        r = every.get(name)
        p.number(macro, r["nugo"] / r["go"] if r and r["nugo"] and r["go"] else None,
                    p.where("micro/micro.json"))
    p.number("MicroRepetitions", data.get("settings", {}).get("repetitions"), p.where("micro/micro.json"))
