#!/usr/bin/python3
"""A run's manifest, RESULTS_DIR/run.json: which revision and build made it, with what arguments,
its steps and how long each took, and its estimate. reproduce.sh keeps it; --resume, publishing
(scripts/dev/publish.sh), the claims, compare.py and the report read it.

  manifest.py init DIR --profile P --build B [--virtual-build V] --steps a,b,.. --estimate S --args ARGS...
  manifest.py step DIR NAME STATUS [SECONDS]     STATUS: running, done, failed, skipped
  manifest.py status DIR NAME                    a step's status
  manifest.py finish DIR
  manifest.py resume DIR                         the arguments the run was started with, one per
                                                 line, or exit 2 saying why it cannot be resumed
  manifest.py check-build DIR --build B [--virtual-build V]
                                                 exit 2 unless the builds are the ones that began it
  manifest.py estimate --profile P --build B --sweep-runs N [--virtual]
                                                 the run's estimate in seconds, from the reference
                                                 times of each step and a calibration here

The invariants: a run is one revision; a run resumed must be resumed at that revision, with
the same uncommitted changes (none, or the same ones: their hash), with byte-identical executables (build id: a hash of them), or it is refused; a
step is "done" only when its script returned, so a killed step is run again on resume.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import catalogue, explib  # noqa: E402

PROG = "manifest.py"
VERSION = 1
# The executables a run's numbers come from: the build id hashes every one in these folders
# of the build, so that a resumed run can prove it ran the same code (a rebuild of unchanged
# sources leaves them byte for byte) - the peers' twins included. Go's twin is left out: the
# sweep builds it into the build folder after the manifest is written (machine.json records
# Go's version).
EXECUTABLE_DIRS = ("experiments", "topology")
NOT_HASHED = {"go-workload"}
# The steps that only derive from the others' files: when a resumed run runs any other step
# again, these run again too, so that no figure, number, claim or report describes the data
# before the resume.
DERIVED = ("plot", "claims", "paper", "report")


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git(*args: str) -> bytes:
    try:
        return subprocess.run(["git", "-C", str(explib.ROOT), *args], capture_output=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return b""


def revision() -> tuple[str, bool, str]:
    """HEAD, whether tracked files differ from it (untracked files, results/ and builds are not
    sources), and a hash of those differences: two trees with the same revision and the same
    hash hold the same sources. Without git (a tarball) the revision is "unknown", which
    --resume and publishing refuse."""
    diff = git("diff", "HEAD", "--binary")
    return (git("rev-parse", "HEAD").decode() or "unknown", bool(diff),
            hashlib.sha256(diff).hexdigest()[:16] if diff else "")


def build_id(build: Path) -> dict:
    h = hashlib.sha256()
    found = []
    for d in EXECUTABLE_DIRS:
        for path in sorted((build / d).glob("*")) if (build / d).is_dir() else []:
            if path.is_file() and os.access(path, os.X_OK) and path.name not in NOT_HASHED:
                rel = f"{d}/{path.name}"
                h.update(rel.encode())
                h.update(path.read_bytes())
                found.append(rel)
    cache = build / "CMakeCache.txt"
    kind = ""
    if cache.exists():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_BUILD_TYPE:"):
                kind = line.split("=", 1)[1]
    return {"dir": str(build.resolve()), "type": kind, "id": h.hexdigest()[:16], "executables": found}


def path_of(run: Path) -> Path:
    return run / "run.json"


def load(run: Path) -> dict:
    p = path_of(run)
    if not run.is_dir():
        raise SystemExit(explib.bad_input(PROG, f"{run}: no such results directory"))
    if not p.exists():
        raise SystemExit(explib.bad_input(PROG, f"{p}: missing: not a directory reproduce.sh made, or "
                                                "made by a version before run.json"))
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise SystemExit(explib.bad_input(PROG, f"{p}: not JSON: {e}")) from e
    if data.get("version") != VERSION:
        raise SystemExit(explib.bad_input(PROG, f"{p}: version {data.get('version')}, this one reads {VERSION}"))
    return data


def save(run: Path, data: dict) -> None:
    tmp = path_of(run).with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path_of(run))  # whole or not at all


def cmd_init(a) -> int:
    rev, dirty, changes = revision()
    prior = json.loads(path_of(a.dir).read_text()) if a.resuming and path_of(a.dir).exists() else None
    if prior:  # resumed: keep what is done, record the (same) revision again
        if any(st["status"] != "done" for st in prior["steps"] if st["name"] not in DERIVED):
            for st in prior["steps"]:
                if st["name"] in DERIVED:
                    st["status"] = "pending"
        prior["revisions"] = sorted(set(prior.get("revisions", [])) | {rev})
        prior["resumed"] = prior.get("resumed", []) + [now()]
        prior["finished"] = None
        save(a.dir, prior)
        return 0
    data = {"version": VERSION, "revision": rev, "revisions": [rev], "dirty": dirty, "changes": changes,
            "profile": a.profile,
            "args": a.args, "build": build_id(a.build),
            "virtual_build": build_id(a.virtual_build) if a.virtual_build else None,
            "started": now(), "finished": None, "estimate_seconds": a.estimate,
            "steps": [{"name": s, "status": "pending", "seconds": None} for s in a.steps.split(",") if s],
            "failed": []}
    save(a.dir, data)
    return 0


def cmd_step(a) -> int:
    data = load(a.dir)
    for s in data["steps"]:
        if s["name"] == a.name:
            s["status"] = a.status
            if a.seconds is not None:
                s["seconds"] = a.seconds
            break
    else:
        return explib.bad_input(PROG, f"{a.dir}: no step '{a.name}' in run.json")
    data["failed"] = [s["name"] for s in data["steps"] if s["status"] == "failed"]
    save(a.dir, data)
    return 0


def cmd_status(a) -> int:
    print(next((s["status"] for s in load(a.dir)["steps"] if s["name"] == a.name), ""))
    return 0


def cmd_finish(a) -> int:
    data = load(a.dir)
    data["finished"] = now()
    data["seconds"] = sum(s["seconds"] or 0 for s in data["steps"])
    save(a.dir, data)
    return 0


def cmd_resume(a) -> int:
    data = load(a.dir)
    rev, dirty, changes = revision()
    if rev == "unknown":
        return explib.bad_input(PROG, "no git revision here (a tree without .git?): the run's sources cannot be "
                                      "shown to be these, so it cannot be resumed")
    if rev != data["revision"]:
        return explib.bad_input(PROG, f"{a.dir}: made by revision {data['revision'][:12]}, this clone is at "
                                      f"{rev[:12]}: a run is one revision (check out {data['revision'][:12]} to resume it)")
    if changes != data.get("changes", ""):
        return explib.bad_input(PROG, f"{a.dir}: made from revision {rev[:12]} " +
                                ("with uncommitted changes" if data.get("dirty") else "with none") +
                                ", and this clone's uncommitted changes differ from them: resuming would mix "
                                "two sets of sources into one run")
    if all(s["status"] == "done" for s in data["steps"]):
        return explib.bad_input(PROG, f"{a.dir}: every step is done: nothing to resume")
    print("\n".join(data["args"]))
    return 0


def cmd_check_build(a) -> int:
    data = load(a.dir)
    for key, build in (("build", a.build), ("virtual_build", a.virtual_build)):
        if build is None or not data.get(key):
            continue
        now_id, then = build_id(build)["id"], data[key]["id"]
        if now_id != then:
            return explib.bad_input(PROG, f"{a.dir}: its {key.replace('_', ' ')} was {then}, {build} is now {now_id}: "
                                          "the executables changed, so resuming would mix two builds' numbers")
    return 0


def calibrate(build: Path) -> float:
    """This machine's speed against the reference's: one fixed run, timed (best of three)."""
    exe = build / "experiments" / "nugo-workload"
    best = float("inf")
    env = {**os.environ, "NUGO_PROCS": "1", "NUGO_MODE": "flat"}
    for _ in range(3):
        t = time.monotonic()
        subprocess.run([str(exe), catalogue.CALIBRATION[0], "--size", catalogue.CALIBRATION[1]], env=env,
                       capture_output=True, check=True, timeout=60)
        best = min(best, time.monotonic() - t)
    return best / catalogue.CALIBRATION[2]


def cmd_estimate(a) -> int:
    ref = catalogue.STEP_SECONDS["quick" if a.profile == "quick" else "default"]
    try:
        if a.no_calibration:
            raise OSError("--no-calibration (a rehearsal: a guest's speed means nothing)")
        factor = calibrate(a.build)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"{PROG}: no calibration ({e}); the estimate assumes the reference machine's speed", file=sys.stderr)
        factor = 1.0
    sweep_scale = a.sweep_runs / catalogue.REFERENCE_SWEEP_RUNS[a.profile if a.profile == "quick" else "default"]
    steps = {s: v * factor * (sweep_scale if s == "sweep" else 1) for s, v in ref.items()
             if a.virtual or s not in catalogue.VIRTUAL_STEPS}
    if a.only:
        steps = {s: v for s, v in steps.items() if s in ("build", "sweep", "plot", "paper")}
    total = sum(steps.values())
    print(round(total))
    print(f"{PROG}: this machine runs the calibration at {factor:.2f}x the reference's time; the sweep plans "
          f"{a.sweep_runs} runs; " + ", ".join(f"{s} {explib.clock(v)}" for s, v in steps.items())
          + (" (--full: the other steps' larger plans are not counted, so expect more)" if a.profile == "full" else ""),
          file=sys.stderr)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description="a run's manifest, run.json")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init")
    p.add_argument("dir", type=Path)
    p.add_argument("--profile", required=True)
    p.add_argument("--build", type=Path, required=True)
    p.add_argument("--virtual-build", type=Path)
    p.add_argument("--steps", required=True)
    p.add_argument("--estimate", type=float)
    p.add_argument("--resuming", action="store_true")
    p.add_argument("--args", nargs=argparse.REMAINDER, default=[], help="the run's arguments (last)")
    p = sub.add_parser("step")
    p.add_argument("dir", type=Path)
    p.add_argument("name")
    p.add_argument("status", choices=("running", "done", "failed", "skipped"))
    p.add_argument("seconds", type=float, nargs="?")
    p = sub.add_parser("status")
    p.add_argument("dir", type=Path)
    p.add_argument("name")
    p = sub.add_parser("finish")
    p.add_argument("dir", type=Path)
    p = sub.add_parser("resume")
    p.add_argument("dir", type=Path)
    p = sub.add_parser("check-build")
    p.add_argument("dir", type=Path)
    p.add_argument("--build", type=Path, required=True)
    p.add_argument("--virtual-build", type=Path)
    p = sub.add_parser("estimate")
    p.add_argument("--profile", required=True, choices=("quick", "default", "full"))
    p.add_argument("--build", type=Path, required=True)
    p.add_argument("--sweep-runs", type=int, required=True)
    p.add_argument("--virtual", action="store_true", help="the virtual steps run")
    p.add_argument("--only", action="store_true", help="the sweep only (--only)")
    p.add_argument("--no-calibration", action="store_true", help="the reference machine's speed")
    a = ap.parse_args(argv)
    return {"init": cmd_init, "step": cmd_step, "status": cmd_status, "finish": cmd_finish, "resume": cmd_resume,
            "check-build": cmd_check_build, "estimate": cmd_estimate}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
