#!/usr/bin/env python3
"""Checks an execution trace of nugo (NUGO_TRACE) for what its readers rely on.

usage: scripts/check/trace_check.py TRACE.json [--stats STATS.json] [--expect-steals]

The trace must be JSON that Python's json module loads, in the Chrome trace-event format:
every track's events in time order, every goroutine slice begun and ended on the same track and
not nested, every steal and unblock naming goroutines the trace knows, every flow arrow
started and ended once. With --stats (the NUGO_STATS file of the same run), the runs and
steals in the trace must equal the runtime's counts exactly. Prints a summary; exits 1 naming
the first problem, 2 for a file that cannot be read.
"""
import argparse
import collections
import json
import sys


def fail(msg):
    print(f"trace_check: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def load(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        print(f"trace_check: cannot read {what} {path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    except json.JSONDecodeError as e:
        fail(f"{path} is not valid JSON: {e}")


def check(trace, stats, expect_steals):
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        fail("no traceEvents array")
    other = trace.get("otherData", {})
    if other.get("generator") != "nugo":
        fail("otherData.generator is not nugo")
    events = trace["traceEvents"]
    last_ts = {}
    open_slice = {}
    goroutines = set()
    runs = 0
    steals = collections.Counter()
    flow_starts, flow_ends = set(), set()
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph is None or "pid" not in e:
            fail(f"event {i} has no ph or pid: {e}")
        if ph == "M":
            continue
        track = (e["pid"], e.get("tid"))
        ts = e.get("ts")
        if not isinstance(ts, (int, float)):
            fail(f"event {i} has no numeric ts: {e}")
        if ts < last_ts.get(track, 0):
            fail(f"event {i} goes back in time on track {track}: {ts} < {last_ts[track]}")
        last_ts[track] = ts
        args = e.get("args", {})
        if ph == "B":
            if track in open_slice:
                fail(f"event {i}: slice of G{args.get('g')} begins inside G{open_slice[track]} "
                     f"on track {track}")
            open_slice[track] = args["g"]
            goroutines.add(args["g"])
            if "after" not in args:
                runs += 1
        elif ph == "E":
            if open_slice.get(track) != args.get("g"):
                fail(f"event {i}: end of G{args.get('g')} on track {track}, where "
                     f"{'G' + str(open_slice[track]) if track in open_slice else 'nothing'} runs")
            del open_slice[track]
        elif ph == "i":
            name = e.get("name", "")
            if name == "go create":
                goroutines.add(args["g"])
            elif name.startswith("steal"):
                steals["remote" if args.get("remote") else "same_node"] += 1
        elif ph == "s":
            if e["id"] in flow_starts:
                fail(f"event {i}: flow {e['id']} starts twice")
            flow_starts.add(e["id"])
        elif ph == "f":
            if e["id"] not in flow_starts or e["id"] in flow_ends:
                fail(f"event {i}: flow {e['id']} ends without a start, or twice")
            flow_ends.add(e["id"])
        else:
            fail(f"event {i} has an unexpected phase {ph!r}")
    if open_slice:
        fail(f"slices left open at the end: {open_slice}")
    # References: every goroutine a steal or unblock names is one the trace saw created or run
    # (an unblock's goroutine may have been created before a trace started mid-run: then it
    # still must have run, or run later).
    for i, e in enumerate(events):
        if e.get("ph") == "i" and (e["name"].startswith("steal") or e["name"] == "unblock"):
            g = e["args"]["g"]
            if g not in goroutines:
                fail(f"event {i}: {e['name']} of G{g}, a goroutine the trace never ran")
            if e["name"] == "unblock" and e["args"]["waker"] and e["args"]["waker"] not in goroutines:
                fail(f"event {i}: unblock by G{e['args']['waker']}, a goroutine the trace never ran")
    if expect_steals and sum(steals.values()) == 0:
        fail("no steal recorded")
    summary = (f"{len(events)} events, {len(goroutines)} goroutines, {runs} runs, "
               f"steals {steals['same_node']} same node + {steals['remote']} remote, "
               f"{len(flow_ends)} of {len(flow_starts)} flows ended")
    if stats is not None:
        if other.get("truncated"):
            fail("the trace is truncated: its counts cannot match the statistics")
        t = stats["totals"]
        for key, mine in (("runs", runs), ("steals_same_node", steals["same_node"]),
                          ("steals_remote", steals["remote"])):
            if t[key] != mine:
                fail(f"{key}: the trace has {mine}, NUGO_STATS says {t[key]}")
        summary += "; runs and steals agree with NUGO_STATS"
    print(f"trace_check: OK: {summary}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--stats", help="the NUGO_STATS file of the same run")
    ap.add_argument("--expect-steals", action="store_true", help="fail if no steal was recorded")
    a = ap.parse_args()
    trace = load(a.trace, "trace")
    stats = load(a.stats, "statistics") if a.stats else None
    check(trace, stats, a.expect_steals)


if __name__ == "__main__":
    main()
