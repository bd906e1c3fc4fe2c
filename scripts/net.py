#!/usr/bin/env python3
"""Run nugo's network applications beside their Go twins, with the same load.

usage: scripts/net.py BUILD_DIR OUT_DIR [--quick]

Servers: BUILD/experiments/nugo-http and nugo-echo, and the Go twins of
experiments/baselines/go/apps (built here with Go 1.19, standard library only):
httpraw, the same minimal HTTP parser as nugo-http over package net in the same
code shape (the like-for-like twin, the headline), and http, on net/http (which
does much more per request). Load: wrk (Debian package) on loopback, 2 threads.

  http /echo    100 and 400 connections: requests/s and p99 latency, the three
                servers in turn; the full run takes the median of 3 runs of 10 s each.
  /sleep storm  400 connections on /sleep (1 s in nanosleep(2) per request): the
                servers' thread counts while it runs and 2 s after it ends.
  echo          100 connections x 2000 round trips of 64 bytes, each client against
                its own server: round trips/s.

Targets, checked in the same run, at both loads: against httpraw (issue 14),
nugo's requests/s >= 1.2x and p99 <= httpraw's; against net/http (issue 5),
requests/s >= 1.0x and p99 <= net/http's. Every subprocess has a timeout. Writes OUT_DIR/net.md and net.json. Exit status: 0
when everything ran (targets may miss: the table says so), 1 when something failed
to run, 2 on bad usage.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent.parent / "experiments" / "baselines" / "go"


def fail(msg: str):
    print(f"net.py: {msg}", file=sys.stderr)
    sys.exit(1)


def build_go(out: Path) -> dict:
    env = dict(os.environ, GOFLAGS="-mod=mod", GO111MODULE="on")
    bins = {}
    for app in ("http", "httpraw", "echo"):
        exe = out / f"go-{app}"
        try:
            r = subprocess.run(["go", "build", "-o", str(exe), f"./apps/{app}"], cwd=GO_DIR,
                               capture_output=True, text=True, env=env, timeout=600)
        except subprocess.TimeoutExpired:
            fail(f"go build ./apps/{app} timed out")
        if r.returncode != 0:
            fail(f"go build ./apps/{app} failed:\n{r.stdout}{r.stderr}")
        bins[app] = exe
    return bins


class Server:
    """A server process on an ephemeral port (it prints "listening on ADDR:PORT")."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv + ["--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on .*:(\d+)", line)
        if not m:
            self.proc.kill()
            fail(f"{argv[0]} did not start (said {line!r})")
        self.port = int(m.group(1))

    def threads(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
        return -1

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def to_ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    if not m:
        fail(f"cannot read wrk latency {text!r}")
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]


def wrk(port: int, path: str, conns: int, secs: int) -> dict:
    cmd = ["wrk", "-t2", f"-c{conns}", f"-d{secs}s", "--timeout", "5s", "--latency",
           f"http://127.0.0.1:{port}{path}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 60)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(cmd)} timed out")
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    rps = re.search(r"Requests/sec:\s+([\d.]+)", r.stdout)
    p99 = re.search(r"^\s+99%\s+(\S+)", r.stdout, re.M)
    if not rps or not p99:
        fail(f"cannot read wrk's output:\n{r.stdout}")
    errors = re.search(r"Socket errors: (.*)", r.stdout)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    if non2xx:
        fail(f"{non2xx.group(1)} failed responses from port {port}:\n{r.stdout}")
    return {"rps": float(rps.group(1)), "p99_ms": to_ms(p99.group(1)),
            "socket_errors": errors.group(1) if errors else ""}


def storm(server: Server, secs: int) -> dict:
    load = subprocess.Popen(["wrk", "-t2", "-c400", f"-d{secs}s", "--timeout", "5s",
                             f"http://127.0.0.1:{server.port}/sleep"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while load.poll() is None:
        peak = max(peak, server.threads())
        time.sleep(0.1)
    out = load.stdout.read()
    done = re.search(r"(\d+) requests in", out)
    time.sleep(2)
    return {"threads_peak": peak, "threads_after": server.threads(),
            "requests": int(done.group(1)) if done else 0}


def echo(server_argv, client_argv) -> float:
    s = Server(server_argv)
    try:
        r = subprocess.run(client_argv + ["--port", str(s.port), "--conns", "100", "--msgs", "2000",
                                          "--size", "64"], capture_output=True, text=True,
                           timeout=300)
    except subprocess.TimeoutExpired:
        fail(f"echo client {client_argv[0]} timed out")
    finally:
        s.stop()
    m = re.search(r"rtt/s: ([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        fail(f"echo client failed:\n{r.stdout}{r.stderr}")
    return float(m.group(1))


def main() -> int:
    argv = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv[1:]
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, out_dir = Path(argv[0]).resolve(), Path(argv[1]).resolve()  # go build runs elsewhere
    nugo_http = build / "experiments" / "nugo-http"
    nugo_echo = build / "experiments" / "nugo-echo"
    for exe in (nugo_http, nugo_echo):
        if not exe.exists():
            print(f"net.py: {exe} not found (build with NUGO_BUILD_EXPERIMENTS=ON)", file=sys.stderr)
            return 2
    if not shutil.which("wrk"):
        print("net.py: wrk not found (scripts/bootstrap.sh --baselines installs it)", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    go = build_go(out_dir)
    secs, runs = (3, 1) if quick else (10, 3)

    servers = {"nugo": Server([str(nugo_http)]), "goraw": Server([str(go["httpraw"])]),
               "go": Server([str(go["http"])])}
    results = {"http": {}, "storm": {}, "echo": {}}
    try:
        for name, s in servers.items():
            wrk(s.port, "/echo", 100, 1)  # warm-up
        for conns in (100, 400):
            samples = {name: [] for name in servers}
            for _ in range(runs):
                for name, s in servers.items():  # in turn, so drift hits all
                    samples[name].append(wrk(s.port, "/echo", conns, secs))
            for name, rows in samples.items():
                results["http"][f"{name}/{conns}"] = {
                    "rps": statistics.median(r["rps"] for r in rows),
                    "p99_ms": statistics.median(r["p99_ms"] for r in rows),
                    "runs": rows}
        for name in ("nugo", "go"):  # the thread storm is the runtimes', not the parsers'
            results["storm"][name] = storm(servers[name], 4 if quick else 10)
    finally:
        for s in servers.values():
            s.stop()
    results["echo"]["nugo"] = echo([str(nugo_echo), "server"], [str(nugo_echo), "client"])
    results["echo"]["go"] = echo([str(go["echo"]), "server"], [str(go["echo"]), "client"])

    verdicts = {}
    lines = ["# Network: nugo beside Go 1.19", "",
             f"`scripts/net.py` on this machine: wrk -t2, {secs} s per run, median of {runs}, the "
             "servers in turn; each at its default of one P (GOMAXPROCS) per CPU. Go raw: "
             "apps/httpraw, the same minimal parser as nugo-http over package net (like for "
             "like, the headline); Go net/http: apps/http.", "",
             "## HTTP /echo (keep-alive)", "",
             "| connections | nugo req/s | Go raw req/s | ratio | nugo p99 | Go raw p99 | "
             "target >= 1.2x, p99 <= | Go net/http req/s | ratio | Go net/http p99 | "
             "target >= 1.0x, p99 <= |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for conns in (100, 400):
        n, r, g = (results["http"][f"{k}/{conns}"] for k in ("nugo", "goraw", "go"))
        ok_raw = n["rps"] >= 1.2 * r["rps"] and n["p99_ms"] <= r["p99_ms"]
        ok = n["rps"] >= g["rps"] and n["p99_ms"] <= g["p99_ms"]
        verdicts[f"http {conns} vs raw"] = ok_raw
        verdicts[f"http {conns} vs net/http"] = ok
        lines.append(f"| {conns} | {n['rps']:,.0f} | {r['rps']:,.0f} | {n['rps'] / r['rps']:.2f}x | "
                     f"{n['p99_ms']:.2f} ms | {r['p99_ms']:.2f} ms | {'met' if ok_raw else 'missed'} | "
                     f"{g['rps']:,.0f} | {n['rps'] / g['rps']:.2f}x | {g['p99_ms']:.2f} ms | "
                     f"{'met' if ok else 'missed'} |")
    sn, sg = results["storm"]["nugo"], results["storm"]["go"]
    lines += ["", "## /sleep storm (400 connections, 1 s nanosleep per request)", "",
              "| | nugo | Go |", "|---|---|---|",
              f"| threads while it runs (peak) | {sn['threads_peak']} | {sg['threads_peak']} |",
              f"| threads 2 s after | {sn['threads_after']} | {sg['threads_after']} |",
              f"| requests served | {sn['requests']} | {sg['requests']} |"]
    en, eg = results["echo"]["nugo"], results["echo"]["go"]
    lines += ["", "## TCP echo (100 connections x 2000 round trips of 64 B, client and server alike)", "",
              "| nugo round trips/s | Go round trips/s | ratio |", "|---|---|---|",
              f"| {en:,.0f} | {eg:,.0f} | {en / eg:.2f}x |"]
    (out_dir / "net.md").write_text("\n".join(lines) + "\n")
    (out_dir / "net.json").write_text(json.dumps({**results, "targets": verdicts}, indent=1))
    print("\n".join(lines))
    print(f"\nwrote {out_dir / 'net.md'} and {out_dir / 'net.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
