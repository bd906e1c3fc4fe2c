#!/usr/bin/env bash
# scripts/pipeline/report.py's page, opened in a real browser (Debian's chromium, headless).
#
# The sample results (tests/data/sample-results) become a run: plot.py draws its figures and
# results.md, and a run.json and a claims.json are written beside them (claims.json by
# scripts/pipeline/claims.py when it exists). report.py writes index.html, and the test holds it
# to what the page promises:
#   - nothing loads from the network: no http(s) src or href, every image a data: URI;
#   - in the browser every figure of figures/ loads, the page raises no error (its script writes
#     them into #page-errors) and prints nothing to the console (chromium logs each console
#     message to stderr as "...:INFO:CONSOLE:<line>] ...", error or not, so any such line fails);
#   - the detector itself works: a copy with a broken image and a copy that throws must fail it;
#   - without run.json and claims.json the page is still written and says what is missing; a
#     rehearsal says so; a directory that is not a run, or an unreadable claims.json, exits 2;
#   - a screenshot, OUT/index.png (1280x2400), kept for a person to look at.
#
# usage: tests/report_test.sh OUT     (OUT keeps the run, the pages, the DOMs, the logs and the
#                                      screenshot)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
[ $# -eq 1 ] || { echo "usage: tests/report_test.sh OUT" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v chromium >/dev/null || fail "no chromium: install Debian's package chromium (scripts/bootstrap.sh)"

# ---- a run from the sample ----
run=$out/sample-run
rm -rf "$run" && mkdir -p "$run" && cp -r "$root/tests/data/sample-results/." "$run/"
$py "$root/scripts/pipeline/plot.py" "$run" >"$out/plot.log" 2>&1 || { cat "$out/plot.log" >&2; fail "plot.py failed"; }
pngs=$(find "$run/figures" -maxdepth 1 -name '*.png' | wc -l)
[ "$pngs" -gt 0 ] || fail "plot.py drew no figure"

# run.json as reproduce.sh keeps it (scripts/pipeline/manifest.py) while its report step runs: a
# dirty tree, two revisions, one failed step, an argument the page must escape.
cat >"$run/run.json" <<'EOF'
{"version": 1, "revision": "994ed22a1b2c3d4e5f60718293a4b5c6d7e8f901",
 "revisions": ["994ed22a1b2c3d4e5f60718293a4b5c6d7e8f901", "7462521aaaabbbbccccddddeeeeffff000011112"],
 "dirty": true, "changes": "5be2a1d0c3f4e789", "profile": "quick", "args": ["--quick", "--rehearsal", "<i>x</i>"],
 "build": {"dir": "/work/main/build-release", "type": "Release", "id": "3f9a0c1d2e3f4a5b"}, "virtual_build": null,
 "started": "2026-11-29T13:08:55Z", "finished": "2026-11-29T13:31:02Z", "estimate_seconds": 1200,
 "steps": [{"name": "sweep", "title": "workload sweep", "status": "done", "seconds": 523},
           {"name": "ablation", "status": "done", "seconds": 301},
           {"name": "micro", "status": "done", "seconds": 95},
           {"name": "preempt", "status": "done", "seconds": 120},
           {"name": "net", "status": "failed", "seconds": 12},
           {"name": "numa", "status": "done", "seconds": 60},
           {"name": "trace", "status": "done", "seconds": 40},
           {"name": "virtual", "status": "done", "seconds": 610},
           {"name": "plot", "status": "done", "seconds": 30},
           {"name": "claims", "status": "done", "seconds": 2},
           {"name": "paper", "status": "done", "seconds": 25},
           {"name": "report", "status": "running", "seconds": null}],
 "failed": ["net"]}
EOF
echo "reproduce.sh: FAILED: net (see $run/reproduce.log)" >"$run/reproduce.log"
if [ -f "$root/scripts/pipeline/claims.py" ]; then
  # Status 1 is a claim the sample cannot judge ("missing"): a finding about the sample, which
  # the page must show like any other; 2 is bad input.
  status=0
  $py "$root/scripts/pipeline/claims.py" "$run" --quiet >"$out/claims.log" 2>&1 || status=$?
  [ "$status" -le 1 ] && [ -f "$run/claims.json" ] ||
    { cat "$out/claims.log" >&2; fail "scripts/pipeline/claims.py $run: status $status, or no claims.json"; }
else
  # One claim of each verdict; the text has characters the page must escape.
  cat >"$run/claims.json" <<'EOF'
{"claims": [
 {"id": "hierarchy-distance-null", "sentence": "The distance order changes nothing on one remote tier.", "applies": "virtual",
  "verdict": "holds", "reason": "every interval holds 1", "condition": "v2x16 and v4x24",
  "numbers": [{"name": "geometric mean", "text": "1.01 [0.98, 1.04]"}], "source": "hierarchy/hierarchy.json"},
 {"id": "memory-speedup", "sentence": "NUMA mode is faster on memory-bound work <script>alert(1)</script>", "applies": "emulated",
  "verdict": "does not hold", "reason": "the interval is below 1", "condition": "2node & penalty 1.74",
  "numbers": [{"name": "speedup", "text": "0.93 [0.88, 0.99]"}], "source": "ablation/results.csv"},
 {"id": "micro-create", "sentence": "Creating a goroutine costs under 0.3x of Go's.", "applies": "real",
  "verdict": "inconclusive", "reason": "one repetition", "condition": "1 P",
  "numbers": [{"name": "nugo/Go", "text": "0.23x"}], "source": "micro/micro.json"},
 {"id": "http-throughput", "sentence": "nugo-http serves 1.2x Go raw's requests.", "applies": "real",
  "verdict": "not applicable", "reason": "net failed", "condition": "", "numbers": [], "source": "net/net.json"}],
 "counts": {"holds": 1, "does not hold": 1, "inconclusive": 1, "not applicable": 1}}
EOF
fi

$py "$root/scripts/pipeline/report.py" "$run" >"$out/report.log" 2>&1 || { cat "$out/report.log" >&2; fail "report.py failed"; }
page=$run/index.html
[ -s "$page" ] || fail "report.py wrote no $page"

# ---- nothing from the network ----
if grep -Eio "(src|href|action|poster|srcset)[[:space:]]*=[[:space:]]*[\"']?[[:space:]]*(https?:|//)[^\"' >]{0,60}" "$page"; then
  fail "the page references the network (above)"
fi
grep -Eiq "url\([\"']?(https?:|//)|@import" "$page" && fail "the page's CSS reaches for the network"
$py - "$page" "$pngs" "$run/generated/results.md" "$run/claims.json" <<'PY' || fail "the page's figures or claims are not as promised"
import html, json, re, sys
page, want, md = open(sys.argv[1]).read(), int(sys.argv[2]), open(sys.argv[3]).read()
srcs = re.findall(r'<img\b[^>]*\bsrc="([^"]*)"', page)
assert len(srcs) == want, f"{len(srcs)} <img> for {want} PNGs"
assert all(s.startswith("data:image/png;base64,") for s in srcs), "an <img> that is not a data: URI"
# The figures in results.md's order, each with its provenance from its caption.
order = re.findall(r'<figure id="fig-([a-z0-9-]+)"', page)
shown = re.findall(r"^!\[[^\]]*\]\(\.\./figures/([a-z0-9-]+)\.png\)", md, re.M)
assert order[:len(shown)] == shown, f"figures not in results.md's order: {order} against {shown}"
figures = dict(re.findall(r'<figure id="fig-([a-z0-9-]+)".*?<span class="badges">(.*?)</span><a', page))
for name, label in (("micro", "REAL"), ("timeline", "EMULATED"), ("ablation", "MODEL"), ("virtual", "VIRTUAL"),
                    ("hierarchy", "VIRTUAL")):
    assert f">{label}<" in figures[name], f"figure {name} is not labelled {label}: {figures[name]}"
for name, badges in figures.items():
    assert "no provenance" not in badges, f"figure {name}'s caption names no provenance"
for text in ("uncommitted changes", "made by more than one revision", 'class="step bad"',
             "HTTP under wrk and TCP echo", "running: writing this page", "&lt;i&gt;x&lt;/i&gt;"):
    assert text in page, f"the page does not show: {text}"
assert "<i>x</i>" not in page and "<script>alert" not in page, "text from the run's files is not escaped"
# Every claim, its verdict as its badge, its sentence; the counts above them.
claims = json.load(open(sys.argv[4]))
for c in claims["claims"]:
    anchor = re.sub(r"[^a-z0-9]+", "-", c["id"].lower()).strip("-")  # report.slug
    row = re.search(rf'<tr id="claim-{anchor}" class="claim \w+">(.*?)</tr>', page, re.S)
    assert row, f"claim {c['id']} is not on the page"
    assert f'">{c["verdict"]}</span>' in row.group(1), f"claim {c['id']}: no badge '{c['verdict']}'"
    assert html.escape(c["sentence"]) in row.group(1), f"claim {c['id']}: its sentence is not shown, escaped"
for verdict, n in claims["counts"].items():
    if n or verdict in ("holds", "does not hold", "inconclusive", "not applicable"):
        assert f"<b>{n}</b> {verdict}</span>" in page, f"the counts do not say {n} {verdict}"
PY

# ---- in the browser ----
# browse PAGE DOM LOG [flags]: headless chromium on PAGE, a fresh profile each time (nothing
# carries over between runs), virtual time so that the page's load event has fired when the
# DOM is dumped, whatever the machine's load.
browse() {
  local page=$1 dom=$2 log=$3 profile status=0
  shift 3
  profile=$(mktemp -d "$out/chromium-profile.XXXXXX")
  timeout 120 chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$profile" --enable-logging=stderr --v=0 --virtual-time-budget=5000 "$@" \
    "file://$page" >"$dom" 2>"$log" || status=$?
  rm -rf "$profile"
  return $status
}
# check_page NAME PAGE WANT: prints what is wrong with PAGE ("figures: ...", "page-errors: ...",
# "console: ...") into OUT/NAME.problems; status 0 when it loads WANT figures, raises nothing and
# prints nothing to the console.
check_page() {
  local name=$1 page=$2 want=$3 problems=$out/$1.problems status=0
  : >"$problems"
  browse "$page" "$out/$name.dom.html" "$out/$name.chromium.log" --dump-dom ||
    { echo "browser: chromium exited with status $? (see $out/$name.chromium.log)" >>"$problems"; return 1; }
  $py - "$out/$name.dom.html" "$want" >>"$problems" <<'PY' || status=1
import sys
from html.parser import HTMLParser
class Dom(HTMLParser):
    body, errors, inside, found = None, "", False, False
    def handle_starttag(self, tag, attrs):
        if tag == "body":
            self.body = dict(attrs)
        if tag == "pre" and dict(attrs).get("id") == "page-errors":
            self.inside = self.found = True
    def handle_endtag(self, tag):
        if tag == "pre":
            self.inside = False
    def handle_data(self, data):
        if self.inside:
            self.errors += data
dom = Dom()
dom.feed(open(sys.argv[1], errors="replace").read())
want, bad = int(sys.argv[2]), False
body = dom.body or {}
loaded, total = body.get("data-figures-loaded"), body.get("data-figures-total")
if not (loaded == total == str(want) and want > 0):
    print(f"figures: {loaded} of {total} loaded, {want} wanted (none counted: the page's script did not run)"
          if loaded is None else f"figures: {loaded} of {total} loaded, {want} wanted")
    bad = True
if not dom.found:
    print("page-errors: no <pre id=page-errors> in the page")
    bad = True
elif dom.errors.strip():
    print("page-errors: " + dom.errors.strip().replace("\n", " | "))
    bad = True
sys.exit(1 if bad else 0)
PY
  if grep -E 'CONSOLE[(:]' "$out/$name.chromium.log" | sed 's/^/console: /' >>"$problems"; then
    status=1
  fi
  return $status
}

check_page index "$page" "$pngs" || { cat "$out/index.problems" >&2; fail "the page does not load cleanly in chromium"; }

# The detector must catch what it is for: a figure that does not load, and a script that throws.
$py - "$page" "$out/broken-image.html" "$out/throws.html" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
# The first figure's data cut to a PNG header: it cannot decode.
broken = re.sub(r'src="data:image/png;base64,[^"]*"', 'src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="', page, count=1)
open(sys.argv[2], "w").write(broken)
open(sys.argv[3], "w").write(page.replace("</body>", '<script>throw new Error("deliberate failure")</script></body>'))
PY
if check_page broken-image "$out/broken-image.html" "$pngs"; then fail "a page with a broken figure passed the check"; fi
grep -q "^figures: $((pngs - 1)) of $pngs loaded" "$out/broken-image.problems" ||
  { cat "$out/broken-image.problems" >&2; fail "the broken figure was not counted as not loaded"; }
grep -q "^page-errors: .*failed to load <img>" "$out/broken-image.problems" ||
  { cat "$out/broken-image.problems" >&2; fail "the broken figure did not reach #page-errors"; }
if check_page throws "$out/throws.html" "$pngs"; then fail "a page that throws passed the check"; fi
grep -q "^page-errors: .*deliberate failure" "$out/throws.problems" ||
  { cat "$out/throws.problems" >&2; fail "the thrown error did not reach #page-errors"; }
grep -q "^console: .*deliberate failure" "$out/throws.problems" ||
  { cat "$out/throws.problems" >&2; fail "the console check did not see the thrown error"; }

# The screenshot, for a person to look at.
rm -f "$out/index.png"
browse "$page" /dev/null "$out/screenshot.chromium.log" --hide-scrollbars --window-size=1280,2400 \
  --screenshot="$out/index.png" || fail "chromium could not take the screenshot (see $out/screenshot.chromium.log)"
$py - "$out/index.png" <<'PY' || fail "the screenshot $out/index.png is missing or trivial"
import os, struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1280, 2400), f"{width}x{height}"
assert os.path.getsize(sys.argv[1]) > 50000, f"{os.path.getsize(sys.argv[1])} bytes: an empty page?"
PY

# ---- what is missing is said, not fatal ----
bare=$out/bare-run
rm -rf "$bare" && cp -r "$run" "$bare" && rm -f "$bare/run.json" "$bare/claims.json" "$bare/index.html"
$py - "$bare/machine.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["rehearsal"] = "a QEMU TCG guest"
json.dump(m, open(sys.argv[1], "w"))
PY
$py "$root/scripts/pipeline/report.py" "$bare" >/dev/null || fail "report.py failed without run.json and claims.json"
for text in "No <code>claims.json</code>" "No <code>run.json</code>" "REHEARSAL (a QEMU TCG guest)" \
            "says these failed: <b class=bad-text>net</b>"; do
  grep -qF "$text" "$bare/index.html" || fail "the page without run.json and claims.json does not say: $text"
done
check_page bare "$bare/index.html" "$pngs" || { cat "$out/bare.problems" >&2; fail "the page without run.json does not load cleanly"; }

# ---- bad input: exit 2, naming the problem ----
expect_2() {  # expect_2 WHAT DIR: report.py DIR exits 2 and says WHAT
  local status=0
  $py "$root/scripts/pipeline/report.py" "$2" >"$out/bad.out" 2>&1 || status=$?
  [ "$status" -eq 2 ] && grep -qF "$1" "$out/bad.out" || { cat "$out/bad.out" >&2; fail "report.py $2: status $status, not 2 saying '$1'"; }
}
expect_2 "no such directory" "$out/nowhere"
mkdir -p "$out/empty" && expect_2 "not a run's directory" "$out/empty"
cp -r "$bare" "$out/bad-claims" && echo '{"claims": [' >"$out/bad-claims/claims.json"
expect_2 "claims.json: cannot read the claims" "$out/bad-claims"
rm -rf "$out/bad-claims" "$out/empty"

echo "report.py: $pngs of $pngs figures load in chromium, no error, no console message, nothing from the network;" \
     "a broken figure and a throw are caught; screenshot $out/index.png"
