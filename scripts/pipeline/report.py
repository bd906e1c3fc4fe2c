#!/usr/bin/python3
"""One run as one web page: RUN_DIR/index.html, the run a researcher opens first or mails on.

usage: scripts/pipeline/report.py RUN_DIR

RUN_DIR is what scripts/reproduce.sh wrote (results.csv, machine.json, figures/, generated/, a
directory per experiment, reproduce.log; run.json and claims.json when their makers ran). The
page holds, in this order:
  1. the run: its revision (loudly when the tree was dirty or more than one revision made it),
     profile, start, end and length, the machine and how it was classified (hardware or a
     virtual machine, CPUs, NUMA nodes), and a banner when the run is a rehearsal;
  2. the claims of claims.json, each with its verdict, numbers and intervals, condition and the
     results file it was judged from, under the verdicts' counts;
  3. the steps of run.json with their status and time, failures in red, pointing at
     reproduce.log;
  4. every figure of figures/ with its caption and its provenance (REAL, EMULATED, MODEL or
     VIRTUAL, read from the caption), in the order of generated/results.md;
  5. the summary tables with their intervals: generated/results.md and every experiment's .md,
     each in a collapsible section;
  6. links to the run's files (results.csv, every .json and .md, reproduce.log, the paper).

The page is self-contained: the figures are embedded as data: URIs and the style and the few
lines of script are inline, so that the one file shows everything when it is mailed alone,
opened from an archive or kept after the run's directory is gone, and so that opening it
reaches for no network (no CDN, no web fonts: a page about measurements must not depend on
what a server says today). The links of part 6 are relative: they work beside the run.

The Markdown the experiments write is converted here, for the subset they use (headings,
paragraphs, bullet lists, pipe tables, **bold**, *italic*, `code`, links): a Markdown library
would be one more dependency for a few dozen lines, and every text is escaped (html.escape).

A part whose input is missing says so and the rest is written: run.json and claims.json are
newer than most runs, and an experiment that did not run has no figure and no table. Exit
status 0; 2 when RUN_DIR is not a run's directory or a JSON file of it cannot be read (named).

The page's script marks <body> with data-figures-loaded and data-figures-total once the window
has loaded, and writes any error the page raises into <pre id="page-errors">:
tests/report_test.sh opens the page in headless Chromium and reads both.
"""
import argparse
import base64
import html
import os
import re
import struct
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, the pipeline package's home
from pipeline import explib, results_md  # noqa: E402

PROG = "report.py"
PAGE = "index.html"
MANIFEST_VERSION = 1  # run.json's, as manifest.py writes it

# The experiments' summaries, in the order a reader meets them (results.md's order); any other
# .md of the run follows these. paper/ holds copies and logs/ the runs' own output: neither is
# a summary.
SECTION_FILES = ("sweep.md", "virtual/sweep.md", "ablation/ablation.md", "hierarchy/hierarchy.md",
                 "micro/micro.md", "preempt/preempt.md", "preempt/workloads.md", "net/net.md",
                 "numa/numa.md", "numa/policies.md", "trace/overhead.md", "virtual-validation/*.md",
                 "sensitivity/sensitivity.md")
NOT_SUMMARIES = ("paper", "logs")
SHOWN_ELSEWHERE = ("claims.md", "generated/results.md")  # parts 2 and 4-5 show them already

# A caption's provenance: the words plot.py's captions use for each kind of number
# (figures/common.py: real(), provenance(); the virtual figures open with VIRTUAL TIME). One
# caption may carry several: the scalability figure has a real and emulated topologies and the
# latency model.
PROVENANCE = (
    ("REAL", re.compile(r"\bREAL\b|Hardware timings|\breal topology\b")),
    ("EMULATED", re.compile(r"\bEMULATED\b")),
    ("MODEL", re.compile(r"\bMODEL\b|\bPROJECTION\b|MEMORY LATENCY|latency model ON")),
    ("VIRTUAL", re.compile(r"\bVIRTUAL\b")),
)

VERDICTS = {"holds": "ok", "does not hold": "bad", "inconclusive": "warn", "not applicable": "na"}
VERDICT_CLASS = VERDICTS | {"missing": "bad"}  # claims.py also counts claims it could not judge
STATUSES = {"done": "ok", "failed": "bad", "running": "run", "pending": "warn", "skipped": "na"}
# What each step of reproduce.sh does, for a run.json whose steps carry no title of their own
# (manifest.py records names only).
STEP_TITLES = {"build": "the Release build", "sweep": "workload sweep", "ablation": "the ablation: placement and "
               "the stealing hierarchy", "micro": "micro-benchmarks beside Go and Boost.Fiber",
               "preempt": "sysmon, preemption and system calls", "net": "HTTP under wrk and TCP echo",
               "numa": "NUMA mode against flat mode, and the policies", "trace": "the execution tracer",
               "virtual": "the virtual set, its validation, sensitivity and the hierarchy's trial",
               "plot": "figures and the paper's numbers", "claims": "the paper's claims judged",
               "paper": "the paper's PDF", "report": "this page"}

e = html.escape


class BadRun(Exception):
    """RUN_DIR is not a run, or one of its files cannot be read: exit status 2."""


@dataclass
class Run:
    dir: Path
    machine: dict
    manifest: dict | None     # run.json (manifest.py), None for a run made before it existed
    claims: dict | None       # claims.json (claims.py), None when it did not run
    results_md: str | None    # generated/results.md (plot.py)
    captions: dict[str, str] = field(default_factory=dict)  # figure name -> caption (captions.tex)


def read_json(path: Path, what: str) -> dict | None:
    try:
        return explib.read_json_object(path)
    except ValueError as err:
        raise BadRun(f"{path}: cannot read {what}: {str(err).removeprefix(f'{path}: ')}") from err


def load(run_dir: Path) -> Run:
    if not run_dir.is_dir():
        raise BadRun(f"{run_dir}: no such directory")
    if not (run_dir / "results.csv").is_file() and not (run_dir / "machine.json").is_file():
        raise BadRun(f"{run_dir}: not a run's directory (no results.csv, no machine.json: "
                     "scripts/reproduce.sh writes both)")
    run = read_json(run_dir / "run.json", "the run's record")
    claims = read_json(run_dir / "claims.json", "the claims")
    if claims is not None and not isinstance(claims.get("claims", []), list):
        raise BadRun(f"{run_dir / 'claims.json'}: \"claims\" is not a list")
    if run is not None and not isinstance(run.get("steps", []), list):
        raise BadRun(f"{run_dir / 'run.json'}: \"steps\" is not a list")
    md = run_dir / "generated" / "results.md"
    captions = {}
    for name, (text, _) in results_md.read_macros(run_dir / "generated" / "captions.tex").get("caption", {}).items():
        captions[name] = results_md.plain(text)
    return Run(run_dir, read_json(run_dir / "machine.json", "the machine") or {}, run, claims,
               md.read_text() if md.is_file() else None, captions)


# ---- small helpers ----

def href(run: Run, path: Path) -> str:
    """A relative link from the page to a file of the run, quoted (a ':' in a first segment
    would read as a URL scheme)."""
    return quote(os.path.relpath(path, run.dir).replace(os.sep, "/"))


def in_run(run: Run, path: Path) -> bool:
    """Whether path is a file or directory of the run: only those get links."""
    return path.resolve().is_relative_to(run.dir.resolve()) and path.exists()


def badge(text: str, kind: str) -> str:
    return f'<span class="badge {kind}">{e(text)}</span>'


def when(stamp: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    except (ValueError, AttributeError):
        return None


def size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def png_size(data: bytes) -> tuple[int, int] | None:
    """A PNG's width and height from its IHDR chunk, for the <img> attributes (no layout jump)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def provenance(caption: str) -> list[str]:
    return [label for label, pattern in PROVENANCE if pattern.search(caption)]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


# ---- Markdown, the subset the experiments write ----

INLINE = re.compile(r"`([^`]+)`|!\[([^\]]*)\]\(([^)\s]*)\)|\[([^\]]+)\]\(([^)\s]+)\)")
BOLD = re.compile(r"\*\*(.+?)\*\*")
# An emphasis starts after a space or an opening bracket and ends before one, so that a '*'
# in a legend ("'*' marks a difference") stays a star.
ITALIC = re.compile(r"(?<![^\s(\[])\*(?=[A-Za-z0-9_`])([^*]+?)(?<=\S)\*(?=$|[\s.,;:)\]])")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
ORDERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
IMAGE_LINE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]*)\)\s*$")
# A number as the tables print it: "0.818", "1,500", "~1.2 [1.2, 1.2]", "98.1%", "1.06x",
# "4.56 ms"; not "2node" nor "0: 0.5, 1: 0.7" (a list, read left to right).
NUMBER = re.compile(r"^[~*≈<>=]*\s*[-+−]?(\d[\d,]*(\.\d+)?|\.\d+)([eE][-+]?\d+)?(?=$|\s|%|x$|x\s|\)|\])")
EMPTY_CELL = {"", "-", "–", "—", "n/a", "?"}


class Markdown:
    """Markdown of a file in the run as HTML. Relative links resolve against the file's own
    directory and become links only to files that exist in the run; a link elsewhere (the
    network, the source tree) stays text, so the page reaches for nothing."""

    def __init__(self, run: Run, source: Path, shift: int = 0, figures: dict[str, str] | None = None):
        self.run, self.base, self.shift = run, source.parent, shift
        self.figures = figures or {}  # a figure's name -> its anchor on the page

    def inline(self, text: str) -> str:
        out, last = [], 0
        for m in INLINE.finditer(text):
            out.append(self.emphasis(text[last:m.start()]))
            code, alt, src, label, target = m.groups()
            if code is not None:
                out.append(f"<code>{e(code)}</code>")
            elif src is not None:  # an image: the figures part shows it; here, a link to it
                name = Path(src).stem
                anchor = self.figures.get(name)
                out.append(f'<a href="#{anchor}">figure {e(name)}</a>' if anchor else e(alt or name))
            else:
                out.append(self.link(label, target))
            last = m.end()
        out.append(self.emphasis(text[last:]))
        return "".join(out)

    def emphasis(self, text: str) -> str:
        text = e(text.replace("\\|", "|").replace("\\*", "*"))
        text = BOLD.sub(r"<strong>\1</strong>", text)
        return ITALIC.sub(r"<em>\1</em>", text)

    def link(self, label: str, target: str) -> str:
        if target.startswith("#"):
            return f'<a href="{e(target)}">{self.emphasis(label)}</a>'
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, mailto:, ...: stays text
            return f'{self.emphasis(label)} (<span class="url">{e(target)}</span>)'
        path = self.base / target.split("#")[0]
        return f'<a href="{href(self.run, path)}">{self.emphasis(label)}</a>' if in_run(self.run, path) else self.emphasis(label)

    def heading(self, level: int, text: str) -> str:
        n = min(6, level + self.shift)
        return f'<h{n}>{self.inline(text)}</h{n}>'

    def table(self, lines: list[str]) -> str:
        def cells(line: str) -> list[str]:
            s = line.strip()
            s = s[1:] if s.startswith("|") else s
            s = s[:-1] if s.endswith("|") and not s.endswith("\\|") else s
            return [c.strip() for c in re.split(r"(?<!\\)\|", s)]
        head, rule, body = cells(lines[0]), cells(lines[1]), [cells(x) for x in lines[2:]]
        width = max(len(head), *(len(r) for r in body)) if body else len(head)
        head += [""] * (width - len(head))
        body = [r + [""] * (width - len(r)) for r in body]
        right = []
        for i in range(width):
            spec = rule[i] if i < len(rule) else ""
            if spec.endswith(":") and not spec.startswith(":"):
                right.append(True)
            elif spec.startswith(":"):
                right.append(False)
            else:  # a column of numbers reads right-aligned, as the digits line up
                values = [r[i] for r in body if r[i].strip() not in EMPTY_CELL]
                numbers = sum(1 for v in values if NUMBER.match(v))
                right.append(bool(values) and numbers >= 0.75 * len(values))
        def cls(i: int, v: str) -> str:
            # A long text in a column of numbers ("0.991 (the intervals overlap: no
            # difference)") may wrap; a number with its interval may not.
            return "" if not right[i] else ' class="num"' if len(v) <= 32 else ' class="num wrap"'
        def row(tag: str, values: list[str]) -> str:
            return "<tr>" + "".join(f"<{tag}{cls(i, v)}>{self.inline(v)}</{tag}>" for i, v in enumerate(values)) + "</tr>"
        return ('<div class="table-wrap"><table>\n<thead>' + row("th", head) + "</thead>\n<tbody>\n"
                + "\n".join(row("td", r) for r in body) + "\n</tbody></table></div>")

    def render(self, text: str) -> str:
        lines = text.splitlines()
        out, i = [], 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
            elif line.startswith("```"):
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                out.append(f"<pre>{e(chr(10).join(lines[i + 1:j]))}</pre>")
                i = j + 1
            elif m := HEADING.match(line):
                out.append(self.heading(len(m.group(1)), m.group(2)))
                i += 1
            elif "|" in line and i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]) and "-" in lines[i + 1]:
                j = i + 2
                while j < len(lines) and lines[j].strip() and "|" in lines[j]:
                    j += 1
                out.append(self.table(lines[i:j]))
                i = j
            elif BULLET.match(line) or ORDERED.match(line):
                ordered = not BULLET.match(line)
                pattern = ORDERED if ordered else BULLET
                items = []
                while i < len(lines) and lines[i].strip() and not HEADING.match(lines[i]):
                    m = pattern.match(lines[i])
                    if m:
                        items.append(m.group(1))
                    elif items:  # a continuation line of the item before
                        items[-1] += " " + lines[i].strip()
                    else:
                        break
                    i += 1
                tag = "ol" if ordered else "ul"
                out.append(f"<{tag}>" + "".join(f"<li>{self.inline(x)}</li>" for x in items) + f"</{tag}>")
            else:
                para = []
                while i < len(lines) and lines[i].strip() and not HEADING.match(lines[i]) \
                        and not lines[i].startswith("```") and not BULLET.match(lines[i]) \
                        and not (i + 1 < len(lines) and "|" in lines[i] and TABLE_RULE.match(lines[i + 1])):
                    para.append(lines[i].strip())
                    i += 1
                if not para:  # a line no rule above takes: shown as it is, never lost
                    para, i = [line.strip()], i + 1
                out.append(f"<p>{self.inline(' '.join(para))}</p>")
        return "\n".join(out)


# ---- results.md: the figures' order and captions, and the numbers' tables ----

@dataclass
class Section:
    title: str
    figures: list[tuple[str, str]] = field(default_factory=list)  # (name, caption)
    body: list[str] = field(default_factory=list)                  # the Markdown but the figures


def results_sections(text: str) -> tuple[list[str], list[Section]]:
    """results.md as its preamble and its sections (results_md.render: '## title', then each
    figure as an image line and a '*name.png.* caption' line, then tables)."""
    preamble: list[str] = []
    sections: list[Section] = []
    for line in text.splitlines():
        if line.startswith("# ") and not sections and not preamble:
            continue  # "# Results": the page has its own headings
        if m := re.match(r"^##\s+(.*)$", line):
            sections.append(Section(m.group(1).strip()))
            continue
        if m := IMAGE_LINE.match(line):
            if sections:
                sections[-1].figures.append((Path(m.group(2)).stem, ""))
            continue
        if (m := re.match(r"^\*([\w.-]+)\.png\.\*\s*(.*)$", line)) and sections:
            figs = sections[-1].figures
            for k, (name, _) in enumerate(figs):
                if name == m.group(1):
                    figs[k] = (name, m.group(2))
                    break
            else:
                figs.append((m.group(1), m.group(2)))
            continue
        (sections[-1].body if sections else preamble).append(line)
    return preamble, sections


def caption_key(name: str) -> str:
    """A figure's name as captions.tex names its macro (plot.py: scalability -> Scalability)."""
    return re.sub(r"[^A-Za-z]", "", name.title())


# ---- the parts of the page ----

def part_header(run: Run) -> str:
    r, m = run.manifest or {}, run.machine
    revision = r.get("revision") or re.sub(r"-dirty$", "", str(m.get("git_revision") or "")) or "unknown"
    revisions = [str(x) for x in r.get("revisions") or []]
    dirty = bool(r.get("dirty")) if run.manifest is not None else str(m.get("git_revision", "")).endswith("-dirty")
    started, finished = when(r.get("started")), when(r.get("finished"))
    banners = []
    if m.get("rehearsal"):
        banners.append(("bad", f"REHEARSAL ({m['rehearsal']}): this run checks the pipeline. None of its "
                               "numbers is a result; none may be quoted."))
    if str(m.get("machine_kind", "")).startswith("a QEMU guest"):
        banners.append(("bad", "Software emulation (QEMU without KVM): the timings describe QEMU, not the runtimes."))
    if dirty:
        banners.append(("bad", "UNCOMMITTED CHANGES: the tree had changes that no revision records; "
                               "this run cannot be reproduced from its revision alone."))
    if len(set(revisions)) > 1:
        banners.append(("warn", f"Made by more than one revision ({len(set(revisions))}): "
                                + ", ".join(x[:12] for x in dict.fromkeys(revisions))
                                + ". The steps did not all run the same code."))
    if run.manifest is not None and r.get("started") and not r.get("finished"):
        banners.append(("warn", "Not finished: the run was still going, or was stopped, when this page was made."))
    if run.manifest is not None and r.get("failed"):
        banners.append(("bad", f"Failed steps: {', '.join(map(str, r['failed']))} (see Steps below and reproduce.log)."))
    if run.manifest is not None and r.get("version") != MANIFEST_VERSION:
        banners.append(("warn", f"run.json is version {r.get('version')}; this page reads version {MANIFEST_VERSION}, "
                                "so it may leave out or misread some of it."))
    if run.manifest is None:
        banners.append(("na", "No run.json: this run predates it (or reproduce.sh was stopped early), so its "
                              "profile, times and steps are not recorded; the revision is machine.json's."))

    if started and finished:
        total = explib.clock((finished - started).total_seconds())
    elif r.get("steps"):
        total = explib.clock(sum(float(s.get("seconds") or 0) for s in r["steps"])) + " (the steps' sum)"
    else:
        total = "-"
    if r.get("estimate_seconds"):
        total += f" (estimated {explib.clock(float(r['estimate_seconds']))})"
    def build_text(b: dict) -> str:
        return " ".join(str(x) for x in (b.get("type"), b.get("dir"), f"id {b['id']}" if b.get("id") else None) if x)
    rev = f'<code title="{e(revision)}">{e(revision[:12])}</code>'
    if dirty:
        rev += " " + badge("uncommitted changes", "bad")
        if r.get("changes"):  # manifest.py: a hash of the diff, so two dirty runs can be told apart
            rev += f' <span class="muted small">diff {e(str(r["changes"]))}</span>'
    if len(set(revisions)) > 1:
        rev += " " + badge("made by more than one revision", "warn")
    runfacts = [
        ("Revision", rev),
        ("Profile", e(str(r.get("profile") or "-"))),
        ("Started", e(stamp(started, r.get("started")))),
        ("Finished", e(stamp(finished, r.get("finished"))) if run.manifest is None or r.get("finished")
         else badge("not finished", "warn")),
        ("Total time", e(total)),
        ("Command", "<code>" + e(" ".join(["scripts/reproduce.sh", *map(str, r.get("args") or [])])) + "</code>"
         if run.manifest is not None else "-"),
        ("Build", e(build_text(r.get("build") or {})) or "-"),
    ]
    if r.get("virtual_build"):
        runfacts.append(("Virtual-time build", e(build_text(r["virtual_build"]))))
    if r.get("resumed"):
        runfacts.append(("Resumed", e(", ".join(stamp(when(x), x) for x in r["resumed"]))))
    virt = m.get("virtualization") or {}
    kind = m.get("machine_kind") or (explib.machine_kind(virt) if virt else "not recorded")
    nodes = m.get("nodes_allowed") or {}
    machinefacts = [
        ("Kind", e(kind)),
        ("CPU", e(str(m.get("cpu_model", "-")))),
        ("CPUs", e(f"{m.get('cpus_usable', '?')} of {m.get('cpus_online', '?')} usable"
                   + (f" ({m['cpus_allowed']})" if m.get("cpus_allowed") else ""))),
        ("NUMA nodes", e(str(m.get("numa_nodes", "?"))
                         + (" (usable CPUs: " + "; ".join(f"node {k}: {v}" for k, v in nodes.items()) + ")"
                            if nodes else ""))),
        ("Virtualization", e(", ".join(f"{k} {virt[k]}" for k in ("vm", "container") if k in virt)
                             + (f" (by {virt['how']})" if virt.get("how") else "")) or "not recorded"),
        ("System", e(" · ".join(str(x) for x in (m.get("os"), m.get("kernel") and f"Linux {m['kernel']}",
                                                 m.get("memory_bytes") and size(int(m["memory_bytes"]))) if x)) or "-"),
        ("Toolchain", e(" · ".join(str(x) for x in (m.get("compiler"), m.get("build_type"), m.get("cxx_flags"),
                                                    m.get("go_version")) if x)) or "-"),
    ]
    if m.get("restriction"):
        machinefacts.append(("Restricted to", e(str(m["restriction"]))))
    out = ['<header id="run" class="run"><p class="eyebrow">nugo · a run of scripts/reproduce.sh</p>',
           f"<h1>{e(title(run))}</h1>"]
    out += [f'<div class="banner {k}">{e(text)}</div>' for k, text in banners]
    out.append('<div class="facts"><section class="card"><h2 class="card-title">The run</h2>' + dl(runfacts)
               + '</section><section class="card"><h2 class="card-title">The machine</h2>' + dl(machinefacts))
    topologies = m.get("topologies") or {}
    if topologies:
        rows = "".join(
            f"<tr><td><code>{e(name)}</code></td><td>{e(str(t.get('spec', '')))}</td>"
            f"<td>{badge(*topology_kind(t))}</td>"
            f"<td>{e(str(t.get('clock', 'real')))}</td><td class=num>{e(str(t.get('pus', '')))}</td>"
            f"<td class=num>{e(str(t.get('nodes_with_cpus', '')))}</td></tr>"
            for name, t in topologies.items())
        out.append(f"<details><summary>Topologies of this run ({len(topologies)})</summary>"
                   '<div class="table-wrap"><table><thead><tr><th>name</th><th>spec</th><th>kind</th>'
                   "<th>clock</th><th class=num>PUs</th><th class=num>nodes</th></tr></thead>"
                   f"<tbody>{rows}</tbody></table></div></details>")
    out.append("</section></div></header>")
    return "\n".join(out)


def topology_kind(t: dict) -> tuple[str, str]:
    kind = "virtual" if t.get("clock") == "virtual" else "emulated" if t.get("emulated") else "real"
    return kind, kind


def title(run: Run) -> str:
    return f"Results of run {run.dir.resolve().name}"


def stamp(parsed: datetime | None, raw) -> str:
    """A time as a reader wants it: UTC spelled out; anything unparsable as it was written."""
    if parsed is None:
        return str(raw) if raw else "-"
    if parsed.utcoffset() == timedelta(0):
        return parsed.strftime("%Y-%m-%d %H:%M:%S UTC")
    return parsed.isoformat(sep=" ")


def dl(facts: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


def part_claims(run: Run) -> str:
    out = ['<section id="claims"><h2>Claims</h2>']
    if run.claims is None:
        out.append('<p class="missing">No <code>claims.json</code> in this run: its claims were not judged '
                   "(scripts/pipeline/claims.py did not run, or the run predates it).</p></section>")
        return "\n".join(out)
    claims = [c for c in run.claims.get("claims", []) if isinstance(c, dict)]
    counts = dict(run.claims.get("counts") or {})
    if not counts:
        for c in claims:
            counts[c.get("verdict", "?")] = counts.get(c.get("verdict", "?"), 0) + 1
    # The four verdicts always (a zero is news too), then anything else claims.py counted when
    # it is not zero ("missing": a number the run should have had).
    shown = [*VERDICTS, *(v for v in counts if v not in VERDICTS and counts[v])]
    out.append('<p class="counts">' + " ".join(
        f'<span class="count {VERDICT_CLASS.get(v, "na")}"><b>{e(str(counts.get(v, 0)))}</b> {e(v)}</span>'
        for v in shown) + f' <span class="muted">of {len(claims)} claims'
        + (f', judged against <code>{e(Path(str(run.claims["catalogue"])).name)}</code>' if run.claims.get("catalogue") else "")
        + "</span></p>")
    if not claims:
        out.append('<p class="missing">claims.json lists no claims.</p></section>')
        return "\n".join(out)
    rows = []
    for c in claims:
        verdict = str(c.get("verdict", "?"))
        where = str(c.get("applies") or c.get("where") or "")
        kind = where.split("-")[0].upper()  # "real-multinode" is REAL hardware too
        numbers = "".join(f'<li><span class="muted">{e(str(n.get("name", "")))}</span> '
                          f'<span class="number">{e(str(n.get("text", n.get("value", ""))))}</span></li>'
                          for n in c.get("numbers") or [] if isinstance(n, dict))
        source = str(c.get("source") or "")
        if source and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", source) and in_run(run, run.dir / source):
            path = run.dir / source
            source_html = f'<a href="{href(run, path)}"><code>{e(source)}</code></a>'
        elif source:
            source_html = f'<code>{e(source)}</code> (not in this run)'
        else:
            source_html = ""
        meta = [f"<code>{e(str(c.get('id', '')))}</code>"]
        if where:
            meta.append("applies to " + (badge(where, kind.lower()) if kind in dict(PROVENANCE) else e(where)))
        if c.get("step"):
            meta.append(f"step {e(str(c['step']))}")
        if source_html:
            meta.append("judged from " + source_html)
        rows.append(
            f'<tr id="claim-{e(slug(str(c.get("id", ""))))}" class="claim {VERDICT_CLASS.get(verdict, "na")}">'
            f'<td>{badge(verdict, VERDICT_CLASS.get(verdict, "na"))}</td>'
            f'<td><p class="sentence">{e(str(c.get("sentence", "")))}</p>'
            + (f'<p class="reason">{e(str(c["reason"]))}</p>' if c.get("reason") else "")
            + f'<p class="muted small">{" · ".join(meta)}</p></td><td><ul class="numbers">{numbers}</ul></td>'
            f'<td class="small">{e(str(c.get("condition") or "-"))}</td></tr>')
    out.append('<div class="table-wrap"><table class="claims"><colgroup><col class="c-verdict"><col class="c-claim">'
               '<col class="c-numbers"><col class="c-condition"></colgroup>'
               '<thead><tr><th>verdict</th><th>claim</th>'
               "<th>numbers (95% interval)</th><th>condition</th></tr></thead><tbody>"
               + "\n".join(rows) + "</tbody></table></div></section>")
    return "\n".join(out)


def part_steps(run: Run) -> str:
    out = ['<section id="steps"><h2>Steps</h2>']
    log = run.dir / "reproduce.log"
    log_link = f'<a href="{href(run, log)}">reproduce.log</a>' if log.is_file() else "reproduce.log (not in this run)"
    r = run.manifest
    failed = [str(x) for x in (r or {}).get("failed") or []]
    if r is None:
        # Without run.json the log's last word is what is known: reproduce.sh ends with
        # "reproduce.sh: FAILED: a b (see DIR/reproduce.log)" when a step failed.
        text = log.read_text(errors="replace") if log.is_file() else ""
        m = re.findall(r"^reproduce\.sh: FAILED: ([^(\n]*)", text, re.M)
        failed = m[-1].split() if m else []
        out.append(f'<p class="missing">No <code>run.json</code>: the steps were not recorded. {log_link} '
                   + (f"says these failed: <b class=bad-text>{e(', '.join(failed))}</b>." if failed
                      else "names no failed step." if text else "is missing too.") + "</p>")
    else:
        steps = [s for s in r.get("steps") or [] if isinstance(s, dict)]
        total = sum(float(s.get("seconds") or 0) for s in steps) or 1.0
        rows = []
        for s in steps:
            status, name = str(s.get("status", "?")), str(s.get("name", ""))
            seconds = s.get("seconds")
            shown = status + (": writing this page" if name == "report" and status in ("running", "pending") else "")
            share = 100 * float(seconds or 0) / total
            rows.append(
                f'<tr class="step {STATUSES.get(status, "na")}"><td>{e(str(s.get("title") or STEP_TITLES.get(name, name)))}'
                f' <code class="muted">{e(name)}</code></td>'
                f'<td>{badge(shown, STATUSES.get(status, "na"))}</td>'
                f'<td class=num>{e(explib.clock(float(seconds))) if seconds is not None else "-"}</td>'
                f'<td class="bar-cell"><span class="bar" style="width:{share:.1f}%"></span></td></tr>')
        if failed:
            out.append(f'<div class="banner bad">Failed: {e(", ".join(failed))}. What they printed is in '
                       f'{log_link}' + (" and in each step's logs/ directory" if (run.dir / "logs").is_dir() else "")
                       + ".</div>")
        out.append('<div class="table-wrap"><table class="steps"><thead><tr><th>step</th><th>status</th>'
                   '<th class=num>time</th><th>share of the run</th></tr></thead><tbody>'
                   + "\n".join(rows) + "</tbody></table></div>")
    if failed and log.is_file():
        lines = log.read_text(errors="replace").splitlines()
        hits = [x for x in lines if re.search(r"FAIL|[Ee]rror|Traceback", x)][-30:]
        if hits:
            out.append(f"<details><summary>The lines of reproduce.log that report a failure ({len(hits)})</summary>"
                       f"<pre>{e(chr(10).join(hits))}</pre></details>")
    out.append("</section>")
    return "\n".join(out)


def figure_list(run: Run) -> list[tuple[str, list[tuple[str, str, Path]]]]:
    """(group title, [(name, caption, png)]) in results.md's order, then any figure it does not
    show; every PNG of figures/ appears once."""
    figures_dir = run.dir / "figures"
    pngs = {p.stem: p for p in sorted(figures_dir.glob("*.png"))}
    groups, seen = [], set()
    if run.results_md:
        for section in results_sections(run.results_md)[1]:
            items = []
            for name, caption in section.figures:
                if name in pngs and name not in seen:
                    seen.add(name)
                    items.append((name, caption or run.captions.get(caption_key(name), ""), pngs[name]))
            if items:
                groups.append((section.title, items))
    rest = [(n, run.captions.get(caption_key(n), ""), p) for n, p in pngs.items() if n not in seen]
    if rest:
        groups.append(("Other figures" if groups else "Figures", rest))
    return groups


def part_figures(run: Run, groups) -> str:
    out = ['<section id="figures"><h2>Figures</h2>']
    if not groups:
        out.append('<p class="missing">No figures: <code>figures/</code> is empty or missing '
                   "(scripts/pipeline/plot.py writes them).</p></section>")
        return "\n".join(out)
    if not run.results_md:
        out.append('<p class="missing">No <code>generated/results.md</code>: the figures are in name order, '
                   "their captions from captions.tex where it has them.</p>")
    legend = {"REAL": "timed on this machine", "EMULATED": "an emulated topology: scheduler decisions, "
              "not hardware timings", "MODEL": "a projection under the memory latency model",
              "VIRTUAL": "virtual time: the cost model's clock, not hardware"}
    out.append('<p class="legend">' + " ".join(f'{badge(k, k.lower())} {e(v)}' for k, v in legend.items()) + "</p>")
    chips = []
    for _, items in groups:
        for name, caption, _ in items:
            labels = provenance(caption)
            chips.append(f'<a class="chip" href="#fig-{e(slug(name))}">{e(name)}'
                         + "".join(f'<i class="dot {x.lower()}" title="{x}"></i>' for x in labels) + "</a>")
    out.append('<nav class="chips" aria-label="figures">' + "".join(chips) + "</nav>")
    md = Markdown(run, run.dir / "generated" / "results.md")
    for group, items in groups:
        out.append(f'<h3 class="group">{e(group)}</h3>')
        for name, caption, png in items:
            data = png.read_bytes()
            dims = png_size(data)
            wh = f' width="{dims[0]}" height="{dims[1]}"' if dims else ""
            labels = provenance(caption)
            badges = "".join(badge(x, x.lower()) for x in labels) or badge("no provenance in its caption", "warn")
            caption_html = md.inline(caption) if caption else '<span class="muted">No caption.</span>'
            out.append(
                f'<figure id="fig-{e(slug(name))}" class="figure"><div class="figure-head"><h4>{e(name)}</h4>'
                f'<span class="badges">{badges}</span><a class="small" href="{href(run, png)}">{e(png.name)}</a></div>'
                f'<img alt="{e(name)}: {e(caption[:200])}"{wh} '
                f'src="data:image/png;base64,{base64.b64encode(data).decode()}">'
                f"<figcaption>{caption_html}</figcaption></figure>")
    out.append("</section>")
    return "\n".join(out)


def summary_files(run: Run) -> list[Path]:
    """The experiments' .md files: SECTION_FILES' order, then the others, by path."""
    found: list[Path] = []
    for pattern in SECTION_FILES:
        for p in sorted(run.dir.glob(pattern)):
            if p.is_file() and p not in found:
                found.append(p)
    for p in sorted(run.dir.rglob("*.md")):
        rel = p.relative_to(run.dir)
        if p not in found and rel.parts[0] not in NOT_SUMMARIES and rel.as_posix() not in SHOWN_ELSEWHERE:
            found.append(p)
    return found


def part_tables(run: Run, groups) -> str:
    out = ['<section id="tables"><h2>Summary tables</h2>',
           '<p class="muted">Every number with its interval, as the experiments wrote it. Open a section to '
           'read it; <button type="button" class="linkish" data-toggle-details>open all</button>.</p>']
    anchors = {name: f"fig-{slug(name)}" for _, items in groups for name, _, _ in items}
    if run.results_md is not None:
        source = run.dir / "generated" / "results.md"
        md = Markdown(run, source, shift=2, figures=anchors)
        preamble, sections = results_sections(run.results_md)
        out.append(f'<h3 class="group">The numbers the paper quotes <a class="small" href="{href(run, source)}">'
                   "generated/results.md</a></h3>")
        out.append(f'<div class="prose small">{md.render(chr(10).join(preamble))}</div>')
        for s in sections:
            figs = [n for n, _ in s.figures if n in anchors]
            body = md.render("\n".join(s.body))
            if not body and not figs:
                continue
            note = ("<p class=small>Figures: " + ", ".join(f'<a href="#{anchors[n]}">{e(n)}</a>' for n in figs)
                    + "</p>") if figs else ""
            out.append(f'<details id="numbers-{slug(s.title)}"><summary>{md.inline(s.title)}</summary>'
                       f'<div class="details-body">{note}{body}</div></details>')
    else:
        out.append('<p class="missing">No <code>generated/results.md</code> (scripts/pipeline/plot.py writes it).</p>')
    files = summary_files(run)
    if files:
        out.append('<h3 class="group">The experiments\' summaries</h3>')
    for p in files:
        text = p.read_text(errors="replace")
        lines = text.splitlines()
        # The file's own title heads its section; the rest is its body.
        first = next((k for k, x in enumerate(lines) if x.strip()), None)
        if first is not None and (m := re.match(r"^#\s+(.*)$", lines[first])):
            heading, body = m.group(1), "\n".join(lines[first + 1:])
        else:
            heading, body = p.stem, text
        md = Markdown(run, p, shift=2, figures=anchors)
        rel = p.relative_to(run.dir).as_posix()
        out.append(f'<details id="md-{slug(rel)}"><summary>{md.inline(heading)} <span class="path">{e(rel)}</span>'
                   f'</summary><div class="details-body"><p class="small"><a href="{href(run, p)}">{e(rel)}</a></p>'
                   f"{md.render(body)}</div></details>")
    out.append("</section>")
    return "\n".join(out)


def part_files(run: Run) -> str:
    out = ['<section id="files"><h2>Files of the run</h2>',
           '<p class="muted">Relative links: they open when this page sits in the run\'s directory.</p>']
    first = [run.dir / x for x in ("results.csv", "reproduce.log", "run.json", "claims.json", "machine.json")]
    paper = [p for p in (run.dir / "paper" / "paper.pdf", run.dir / "paper.pdf") if p.is_file()]
    others = sorted(p for p in run.dir.rglob("*") if p.is_file() and p.suffix in (".json", ".md")
                    and p.relative_to(run.dir).parts[0] not in NOT_SUMMARIES and p not in first)
    by_dir: dict[str, list[Path]] = {}
    for p in [*[p for p in first if p.is_file()], *paper, *others]:
        parent = p.parent.relative_to(run.dir).as_posix()
        by_dir.setdefault("the run" if parent == "." else parent + "/", []).append(p)
    out.append('<div class="files">')
    for d, paths in by_dir.items():
        items = "".join(f'<li><a href="{href(run, p)}">{e(p.name)}</a> <span class="muted">{size(p.stat().st_size)}</span></li>'
                        for p in paths)
        out.append(f'<div class="filegroup"><h3>{e(d)}</h3><ul>{items}</ul></div>')
    out.append("</div>")
    if (run.dir / "logs").is_dir():
        out.append(f'<p class="small">Every run\'s output: <a href="{href(run, run.dir / "logs")}/">logs/</a> '
                   "(and each experiment's own logs/).</p>")
    if not paper:
        out.append('<p class="small muted">No paper PDF in this run (reproduce.sh builds paper/paper.pdf where TeX is installed).</p>')
    out.append("</section>")
    return "\n".join(out)


# ---- the page ----

CSS = """
:root { color-scheme: light; --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --accent:#0969da;
  --ok:#1a7f37; --ok-bg:#dafbe1; --bad:#cf222e; --bad-bg:#ffebe9; --warn:#9a6700; --warn-bg:#fff8c5;
  --na:#59636e; --na-bg:#eff2f5; --real:#0550ae; --real-bg:#ddf4ff; --emulated:#8250df; --emulated-bg:#fbefff;
  --model:#bc4c00; --model-bg:#fff1e5; --virtual:#1b7c83; --virtual-bg:#d8f5f2; }
* { box-sizing: border-box; }
html { scroll-padding-top: 4rem; }
body { margin: 0; color: var(--fg); background: #fff; font: 15px/1.55 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, "Noto Sans", "Liberation Sans", sans-serif; }
code, pre, .number, .path { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas,
  "Liberation Mono", "DejaVu Sans Mono", monospace; font-size: .86em; }
code { background: var(--soft); padding: .1em .3em; border-radius: 4px; }
pre { background: var(--soft); padding: .8rem 1rem; border-radius: 6px; overflow-x: auto; font-size: .8rem; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
.topnav { position: sticky; top: 0; z-index: 10; background: rgba(255,255,255,.94); backdrop-filter: blur(6px);
  border-bottom: 1px solid var(--line); }
.topnav .inner { max-width: 1200px; margin: 0 auto; padding: .55rem 1.25rem; display: flex; gap: 1.1rem;
  align-items: center; overflow-x: auto; white-space: nowrap; }
.topnav .brand { font-weight: 650; margin-right: auto; color: var(--fg); }
.topnav a:not(.brand) { color: var(--muted); font-size: .92rem; } .topnav a:not(.brand):hover { color: var(--accent); }
main { max-width: 1200px; margin: 0 auto; padding: 0 1.25rem 3rem; }
h1 { font-size: 1.9rem; line-height: 1.2; margin: .2rem 0 1rem; letter-spacing: -.01em; }
h2 { font-size: 1.4rem; margin: 2.6rem 0 .9rem; padding-bottom: .35rem; border-bottom: 1px solid var(--line); }
h3.group { font-size: 1.08rem; margin: 1.8rem 0 .6rem; color: var(--fg); }
h4 { font-size: 1rem; margin: 1.2rem 0 .4rem; } h5, h6 { font-size: .95rem; margin: 1rem 0 .3rem; }
.eyebrow { margin: 1.6rem 0 0; color: var(--muted); font-size: .85rem; text-transform: uppercase; letter-spacing: .06em; }
.muted { color: var(--muted); } .small { font-size: .86rem; } .bad-text { color: var(--bad); } .missing { color: var(--muted); font-style: italic; }
.banner { border-radius: 8px; padding: .7rem 1rem; margin: .6rem 0; font-weight: 600; border: 1px solid; }
.banner.bad { background: var(--bad-bg); color: #82071e; border-color: #ff8182; font-size: 1.02rem; }
.banner.warn { background: var(--warn-bg); color: #7d4e00; border-color: #d4a72c; }
.banner.na { background: var(--na-bg); color: var(--muted); border-color: var(--line); font-weight: 500; }
.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 1rem; margin-top: 1rem; }
.card { border: 1px solid var(--line); border-radius: 10px; padding: .9rem 1.1rem; background: #fff; }
.card-title { font-size: .8rem; text-transform: uppercase; letter-spacing: .06em; color: var(--muted);
  border: 0; margin: 0 0 .5rem; padding: 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: .08rem .5rem; border-radius: 999px; font-size: .76rem; font-weight: 650;
  letter-spacing: .02em; white-space: nowrap; border: 1px solid transparent; vertical-align: .08em; }
.badge.ok { background: var(--ok-bg); color: var(--ok); border-color: #aceebb; }
.badge.bad { background: var(--bad-bg); color: var(--bad); border-color: #ffcecb; }
.badge.warn { background: var(--warn-bg); color: var(--warn); border-color: #f5e0a0; }
.badge.na { background: var(--na-bg); color: var(--na); border-color: var(--line); }
.badge.run { background: var(--real-bg); color: var(--real); border-color: #b6e3ff; }
.badge.real { background: var(--real-bg); color: var(--real); } .badge.emulated { background: var(--emulated-bg); color: var(--emulated); }
.badge.model { background: var(--model-bg); color: var(--model); } .badge.virtual { background: var(--virtual-bg); color: var(--virtual); }
.counts { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.count { border-radius: 8px; padding: .35rem .75rem; font-size: .92rem; }
.count b { font-size: 1.15rem; margin-right: .2rem; }
.count.ok { background: var(--ok-bg); color: var(--ok); } .count.bad { background: var(--bad-bg); color: var(--bad); }
.count.warn { background: var(--warn-bg); color: var(--warn); } .count.na { background: var(--na-bg); color: var(--na); }
.table-wrap { overflow-x: auto; margin: .6rem 0 1rem; border: 1px solid var(--line); border-radius: 8px; }
table { border-collapse: collapse; width: 100%; font-size: .86rem; font-variant-numeric: tabular-nums; }
th, td { padding: .38rem .65rem; text-align: left; vertical-align: top; border-bottom: 1px solid #eaeef2; }
th { background: var(--soft); font-weight: 600; position: sticky; top: 0; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; } tbody tr:hover { background: #f0f6ff; }
tbody tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; white-space: nowrap; } td.num.wrap { white-space: normal; min-width: 14rem; }
td:first-child { min-width: 9rem; }
table.claims td:first-child { white-space: nowrap; } table.claims .sentence { margin: 0 0 .2rem; font-weight: 550; }
table.claims p { margin: .1rem 0; } .reason { color: var(--fg); font-size: .86rem; }
tr.claim.bad td:first-child { box-shadow: inset 3px 0 var(--bad); } tr.claim.ok td:first-child { box-shadow: inset 3px 0 var(--ok); }
tr.claim.warn td:first-child { box-shadow: inset 3px 0 #d4a72c; }
table.claims { table-layout: fixed; min-width: 880px; } table.claims td { overflow-wrap: anywhere; }
col.c-verdict { width: 9.5rem; } col.c-claim { width: 46%; } col.c-numbers { width: 27%; } col.c-condition { width: 27%; }
ul.numbers { list-style: none; margin: 0; padding: 0; } ul.numbers li { margin-bottom: .15rem; }
.number { font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.step.bad { background: var(--bad-bg) !important; } tr.step.bad td { color: #82071e; font-weight: 600; }
.bar-cell { width: 30%; } .bar { display: block; height: .55rem; margin-top: .45rem; background: #8c959f; border-radius: 3px; min-width: 1px; }
tr.step.bad .bar { background: var(--bad); }
.legend { font-size: .84rem; color: var(--muted); display: flex; flex-wrap: wrap; gap: .3rem 1rem; align-items: center; }
.chips { display: flex; flex-wrap: wrap; gap: .4rem; margin: .8rem 0 .4rem; }
.chip { border: 1px solid var(--line); border-radius: 999px; padding: .12rem .65rem; font-size: .82rem; color: var(--fg); background: #fff; }
.chip:hover { border-color: var(--accent); text-decoration: none; }
.dot { display: inline-block; width: .5rem; height: .5rem; border-radius: 50%; margin-left: .3rem; vertical-align: .05em; }
.dot.real { background: var(--real); } .dot.emulated { background: var(--emulated); } .dot.model { background: var(--model); } .dot.virtual { background: var(--virtual); }
.figure { margin: 1.2rem 0 2.2rem; padding: 1rem 1.1rem 1.1rem; border: 1px solid var(--line); border-radius: 10px; break-inside: avoid; }
.figure-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem; margin-bottom: .6rem; }
.figure-head h4 { margin: 0; font-size: 1.05rem; } .figure-head .badges { display: inline-flex; gap: .3rem; flex-wrap: wrap; }
.figure-head a { margin-left: auto; }
.figure img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { margin-top: .7rem; font-size: .88rem; color: #31373d; max-width: 78ch; }
details { border: 1px solid var(--line); border-radius: 8px; margin: .5rem 0; background: #fff; }
details > summary { cursor: pointer; padding: .55rem .9rem; font-weight: 600; list-style-position: inside; }
details[open] > summary { border-bottom: 1px solid var(--line); background: var(--soft); border-radius: 8px 8px 0 0; }
details .details-body { padding: .2rem 1rem .6rem; } details .details-body > p { max-width: 90ch; }
.path { color: var(--muted); font-weight: 400; margin-left: .4rem; font-size: .8rem; }
.prose p { max-width: 90ch; }
.linkish { background: none; border: 0; padding: 0; color: var(--accent); font: inherit; cursor: pointer; }
.files { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: .4rem 1.5rem; }
.filegroup h3 { font-size: .9rem; margin: .8rem 0 .2rem; } .filegroup ul { margin: 0; padding-left: 1.1rem; font-size: .88rem; }
footer { max-width: 1200px; margin: 0 auto; padding: 1.5rem 1.25rem 2.5rem; color: var(--muted); font-size: .8rem;
  border-top: 1px solid var(--line); }
.url { font-family: ui-monospace, monospace; font-size: .85em; color: var(--muted); }
@media (max-width: 640px) { body { font-size: 14px; } h1 { font-size: 1.45rem; } dl { grid-template-columns: 1fr; }
  dt { font-weight: 600; margin-top: .3rem; } .bar-cell { display: none; } }
@media print {
  .topnav, .chips, .linkish, [data-toggle-details] { display: none !important; }
  body { font-size: 10.5pt; } main { max-width: none; padding: 0; }
  h2 { break-after: avoid; } .figure, tr, .card { break-inside: avoid; }
  details { border: 0; } details > summary { background: none !important; padding-left: 0; }
  .table-wrap { overflow: visible; border: 0; } th { position: static; }
  a { color: inherit; } .banner { border-width: 2px; }
}
"""

# In <head>, before anything that could fail: every error the page raises (a script's throw, a
# rejected promise, an image that does not load: resource errors do not bubble, so capture) is
# kept and written into #page-errors once the body exists.
HEAD_SCRIPT = """
(function () {
  var errors = window.__pageErrors = [];
  function note(text) {
    errors.push(text);
    var pre = document.getElementById('page-errors');
    if (pre) pre.textContent = errors.join('\\n');
  }
  window.addEventListener('error', function (ev) {
    var t = ev.target;
    if (t && t !== window && t.tagName) {
      note('failed to load <' + t.tagName.toLowerCase() + '> ' + (t.alt || '').slice(0, 60));
    } else {
      note((ev.message || 'error') + ' (' + (ev.filename || '?') + ':' + (ev.lineno || 0) + ')');
    }
  }, true);
  window.addEventListener('unhandledrejection', function (ev) { note('unhandled rejection: ' + ev.reason); });
})();
"""

# At the end of <body>: the figures that loaded, for tests/report_test.sh; "open all" for the
# summaries; and every section open when printing, so that paper copies lose nothing.
BODY_SCRIPT = """
(function () {
  var pre = document.getElementById('page-errors');
  pre.textContent = window.__pageErrors.join('\\n');
  window.addEventListener('load', function () {
    var imgs = document.images, loaded = 0;
    for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) loaded++;
    document.body.setAttribute('data-figures-loaded', String(loaded));
    document.body.setAttribute('data-figures-total', String(imgs.length));
  });
  function all(open) { document.querySelectorAll('details').forEach(function (d) { d.open = open; }); }
  document.querySelectorAll('[data-toggle-details]').forEach(function (b) {
    b.addEventListener('click', function () {
      var open = b.textContent === 'open all';
      all(open);
      b.textContent = open ? 'close all' : 'open all';
    });
  });
  window.addEventListener('beforeprint', function () { all(true); });
})();
"""


def render(run: Run) -> str:
    groups = figure_list(run)
    nav = "".join(f'<a href="#{k}">{v}</a>' for k, v in (("run", "Run"), ("claims", "Claims"), ("steps", "Steps"),
                                                        ("figures", "Figures"), ("tables", "Tables"), ("files", "Files")))
    rehearsal = " · REHEARSAL" if run.machine.get("rehearsal") else ""
    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # Nothing may load from elsewhere: the policy makes a stray external reference fail here,
        # not silently phone out when a reader opens the page.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        f"<title>nugo · {e(title(run))}{rehearsal}</title>",
        f"<script>{HEAD_SCRIPT}</script>",
        f"<style>{CSS}</style></head>",
        "<body>",
        f'<div class="topnav"><div class="inner"><a class="brand" href="#run">nugo · {e(run.dir.resolve().name)}'
        f"{e(rehearsal)}</a>{nav}</div></div>",
        "<main>",
        part_header(run),
        part_claims(run),
        part_steps(run),
        part_figures(run, groups),
        part_tables(run, groups),
        part_files(run),
        "</main>",
        f"<footer>Made by <code>scripts/pipeline/report.py</code> on {made} from the files of this run. "
        "One self-contained file: the figures are embedded and nothing loads from the network.</footer>",
        '<pre id="page-errors" hidden></pre>',
        f"<script>{BODY_SCRIPT}</script>",
        "</body></html>",
        "",
    ])


def write(run_dir: Path) -> Path:
    """Writes run_dir/index.html and returns its path; BadRun when run_dir is not a run."""
    run = load(Path(run_dir))
    path = run.dir / PAGE
    tmp = path.with_name(PAGE + ".tmp")
    tmp.write_text(render(run))
    tmp.replace(path)  # a reader never opens half a page
    return path


def main() -> int:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a results directory of scripts/reproduce.sh")
    args = p.parse_args()  # exits with status 2 on a bad command line, as the other scripts do
    try:
        path = write(args.run_dir)
    except BadRun as err:
        return explib.bad_input(PROG, str(err))
    except OSError as err:
        return explib.bad_input(PROG, f"{args.run_dir}: {err}")
    print(f"{PROG}: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
