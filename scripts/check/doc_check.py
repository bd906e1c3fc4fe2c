#!/usr/bin/env python3
"""The documents' rules, as paper_check.py is the paper's.

    python3 scripts/check/doc_check.py [REPO]

- README.md types no result. A digit in its prose (code blocks, `code spans` and link targets
  are not prose) must be part of a name (C++20, x86-64, Debian 12, ...), a machine's shape
  (2-socket, 24-node, 96-CPU) or a design constant of paper/constants.tex, which paper_check.py
  checks against the source. Results live in paper/generated/results.md, generated.
- paper/generated/results.md is what scripts/pipeline/results_md.py renders from paper/generated: nobody
  edits it by hand.
- Every tracked Markdown document cites only files a clone has: every repository path it names
  in a code span or a link exists (a run's outputs, results/<run>/..., are named with a
  placeholder). Generated results and test data are not documents.

Exit status 1 with each violation named, 2 for bad input.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import results_md  # noqa: E402

PROG = "doc_check.py"

# Names with digits in them, as the README writes them; each is a name, not a measurement.
NAMES = ("C++20", "x86-64", "Debian 12", "g++ 12", "proposal of 2014", "status 2", "IPv4", "IPv6",
         "SHA-256", "HTTP/1.1", "p99", "9p", "Catch2")
# A machine's shape: "2-socket", "24-node", "96-CPU", "384-PU", "one-node" has no digit.
SHAPE = re.compile(r"^\d+-(socket|node|CPU|PU|core|vCPU)s?$")
# A top-level directory of the repository: a path in a code span that starts with one is checked.
TOP = ("topology/", "core/", "numa/", "experiments/", "scripts/", "tests/", "paper/", "examples/", "docs/",
       ".ci/", "results/")


def constants(repo: Path) -> set[str]:
    """The design constants' values (paper/constants.tex), checked against the source elsewhere."""
    out = set()
    for line in (repo / "paper" / "constants.tex").read_text().splitlines():
        m = re.match(r"\\newcommand\{\\const\w+\}\{([^}]*)\}", line)
        if m:
            out.add(m.group(1))
    return out


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the prose: no fenced or indented code, code spans or link targets."""
    out = []
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            continue
        line = re.sub(r"`[^`]*`", " ", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)
        out.append((n, line))
    return out


def typed_numbers(text: str, allowed: set[str]) -> list[str]:
    found = []
    for n, line in prose(text):
        for name in NAMES:
            line = line.replace(name, " ")
        for token in re.findall(r"[A-Za-z0-9_.,%+/-]*\d[A-Za-z0-9_.,%+/-]*", line):
            token = token.strip(".,")
            if SHAPE.match(token) or token in allowed or token.split("-")[0] in allowed:
                continue
            found.append(f"line {n}: the number '{token}' is typed (results belong in paper/generated/results.md; "
                         "a design constant in paper/constants.tex)")
    return found


def cited_paths(text: str) -> list[str]:
    """Repository paths named in code spans and link targets."""
    paths = []
    for m in re.finditer(r"`([^`\s]+)`|\]\(([^)\s#]+)\)", text):
        p = (m.group(1) or m.group(2)).rstrip(".,:;")
        # A placeholder (results/<run>/...) or results/latest names a run's output, not a file of
        # the clone.
        if "<" in p or "*" in p or "..." in p or "://" in p or p.startswith("results/latest"):
            continue
        p = re.sub(r"^(\.\./)+", "", p)
        if p.startswith(TOP):
            paths.append(p.split(":")[0])
    return paths


def documents(repo: Path) -> list[Path]:
    """The tracked Markdown documents (git ls-files), else README.md and docs/ outside a clone."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "*.md"], capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    docs = [repo / f for f in out if not f.startswith(("paper/generated/", "tests/data/"))]
    return docs or [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def main() -> int:
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        print(f"{PROG}: usage: scripts/check/doc_check.py [REPO]", file=sys.stderr)
        return 2
    repo = Path(sys.argv[1] if len(sys.argv) == 2 else Path(__file__).resolve().parents[2])
    readme = repo / "README.md"
    if not readme.is_file():
        print(f"{PROG}: {readme}: no README.md there", file=sys.stderr)
        return 2
    problems = [f"README.md: {p}" for p in typed_numbers(readme.read_text(), constants(repo))]
    generated = repo / "paper" / "generated"
    committed = generated / "results.md"
    if not committed.is_file():
        problems.append(f"{committed}: missing (scripts/pipeline/results_md.py {generated} writes it)")
    elif committed.read_text() != results_md.render(generated):
        problems.append(f"{committed}: not what scripts/pipeline/results_md.py renders from {generated}: "
                        "regenerate it, never edit it")
    for doc in documents(repo):
        for p in cited_paths(doc.read_text()):
            if not (repo / p).exists() and not (doc.parent / p).exists():
                problems.append(f"{doc.relative_to(repo)}: names {p}, which a clone does not have")
    for p in problems:
        print(f"{PROG}: {p}", file=sys.stderr)
    if not problems:
        print(f"{PROG}: README.md types no number; results.md is generated; every file the documents name exists")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
