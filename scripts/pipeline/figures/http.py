"""The HTTP server against Go's (http.png).

MACROS names every macro this module writes (\\num<name> in the paper), each literally,
so that grep finds where a number comes from; Run.number refuses any other."""
from __future__ import annotations

import json

from pipeline.figures.common import Run, plt

# Every \\num macro this module writes.
MACROS = (
    "HttpVsGoRaw",
    "HttpVsNetHttp",
)


def draw(p: Run) -> None:
    p.na("HttpVsGoRaw", "HttpVsNetHttp")
    path = p.dir / "net" / "net.json"
    if not path.exists():
        p.missing.append("http (no net/net.json)")
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
    p.save(fig, "http",
              "HTTP /echo under wrk on loopback: throughput and p99 latency of nugo-http, the Go 1.19 twin "
              "with the same minimal parser (Go raw) and Go's net/http; median and range over the runs "
              f"({p.real()}). Results: \\texttt{{{p.where('net/net.json')}}}.")
    p.number("HttpVsGoRaw", h["nugo/100"]["rps"] / h["goraw/100"]["rps"], p.where("net/net.json"))
    p.number("HttpVsNetHttp", h["nugo/100"]["rps"] / h["go/100"]["rps"], p.where("net/net.json"))
