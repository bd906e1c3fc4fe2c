#!/usr/bin/python3
"""Run nugo's network applications beside their Go twins, with the same load.

usage: scripts/pipeline/net.py --out DIR [--build-dir BUILD] [--quick]

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

Targets, checked in the same run, at both loads: against httpraw (the same work
per request), nugo's requests/s >= 1.2x and p99 <= httpraw's; against net/http,
requests/s >= 1.0x and p99 <= net/http's. Every subprocess has a timeout, and a
server that does not say where it listens within 30 s is a failure. Writes DIR/net.md
and net.json (with the settings and commands). Exit status: 0 when everything ran
(targets may miss: the table says so), 1 when something failed to run, 2 on bad usage.
"""
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib  # noqa: E402

RUNNER = explib.Runner(timeout_s=600)


def fail(msg: str):
    print(f"net.py: {msg}", file=sys.stderr)
    sys.exit(1)


def build_go(build: Path) -> dict:
    bins = {}
    for app in ("http", "httpraw", "echo"):
        exe = build / f"go-{app}"
        try:
            RUNNER.run(["go", "build", "-o", exe, f"./apps/{app}"], cwd=explib.GO_DIR,
                       env=explib.go_environment(build))
        except explib.Failed as e:
            fail(str(e))
        bins[app] = exe
    return bins


class Server:
    """A server process on an ephemeral port (it prints "listening on ADDR:PORT")."""

    def __init__(self, argv):
        RUNNER.commands.append(explib.quote(argv + ["--port", "0"]))
        self.proc = subprocess.Popen(argv + ["--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else "(nothing in 30 s)"
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
        r = RUNNER.run(cmd, timeout_s=secs + 60)
    except explib.Failed as e:
        fail(str(e))
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
    peak, deadline = 0, time.monotonic() + secs + 60
    while load.poll() is None:
        if time.monotonic() > deadline:
            load.kill()
            fail(f"wrk on /sleep did not end {secs + 60} s after it started")
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
        r = RUNNER.run(client_argv + ["--port", s.port, "--conns", "100", "--msgs", "2000", "--size", "64"],
                       timeout_s=300, check=False)
    except explib.Failed as e:
        fail(str(e))
    finally:
        s.stop()
    m = re.search(r"rtt/s: ([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
        fail(f"echo client failed:\n{r.stdout}{r.stderr}")
    return float(m.group(1))


def main() -> int:
    args = explib.parser("net.py", __doc__).parse_args()
    quick = args.quick
    build, out_dir = args.build_dir.resolve(), args.out.resolve()  # go build runs elsewhere
    nugo_http = build / "experiments" / "nugo-http"
    nugo_echo = build / "experiments" / "nugo-echo"
    for exe in (nugo_http, nugo_echo):
        if not exe.exists():
            print(f"net.py: {exe} not found (build with NUGO_BUILD_EXPERIMENTS=ON)", file=sys.stderr)
            return 2
    if not shutil.which("go"):
        print("net.py: go not found (scripts/bootstrap.sh --baselines installs Go 1.19)", file=sys.stderr)
        return 2
    if not shutil.which("wrk"):
        print("net.py: wrk not found (scripts/bootstrap.sh --baselines installs it)", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    go = build_go(build)
    # Five-second wrk runs: tens of thousands of requests each on this machine, a steady state
    # long before the end, and three of them per server for the spread.
    secs, runs = (3, 1) if quick else (5, 3)

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
                rps = explib.spread([r["rps"] for r in rows])
                p99 = explib.spread([r["p99_ms"] for r in rows])
                results["http"][f"{name}/{conns}"] = {
                    "rps": rps.median, "rps_min": rps.lo, "rps_max": rps.hi,
                    "p99_ms": p99.median, "p99_ms_min": p99.lo, "p99_ms_max": p99.hi,
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
             f"`scripts/pipeline/net.py` on this machine: wrk -t2, {secs} s per run, median of {runs}, the "
             "servers in turn; each at its default of one P (GOMAXPROCS) per CPU. Go raw: "
             "apps/httpraw, the same minimal parser as nugo-http over package net (like for "
             "like, the headline); Go net/http: apps/http. Requests/s and p99: the median, and "
             "[min, max] over the runs.", "",
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
        def req(x):
            return f"{x['rps']:,.0f} [{x['rps_min']:,.0f}, {x['rps_max']:,.0f}]"

        def p99(x):
            return f"{x['p99_ms']:.2f} ms [{x['p99_ms_min']:.2f}, {x['p99_ms_max']:.2f}]"

        lines.append(f"| {conns} | {req(n)} | {req(r)} | {n['rps'] / r['rps']:.2f}x | "
                     f"{p99(n)} | {p99(r)} | {'met' if ok_raw else 'missed'} | "
                     f"{req(g)} | {n['rps'] / g['rps']:.2f}x | {p99(g)} | "
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
    explib.write_json(out_dir / "net.json", {**results, "targets": verdicts},
                      {"quick": quick, "seconds_per_run": secs, "runs": runs, "wrk_threads": 2,
                       "connections": [100, 400], "build_dir": str(build)}, RUNNER.commands)
    print("\n".join(lines))
    print(f"\nwrote {out_dir / 'net.md'} and {out_dir / 'net.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
