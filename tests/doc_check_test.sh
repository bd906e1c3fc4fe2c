#!/usr/bin/env bash
# scripts/check/doc_check.py on the committed documents, then on copies with one planted fault each: a
# result typed into README.md, a hand edit of paper/generated/results.md, a document naming a file
# the repository does not have. Each must be caught and named.
#   tests/doc_check_test.sh REPO WORK
set -u
root=$1 work=$2/doc-check
fail() { echo "doc_check_test: $*" >&2; exit 1; }
py=python3
$py "$root/scripts/check/doc_check.py" "$root" || fail "the committed documents break the rules"

plant() {  # a fresh copy of what doc_check.py reads
  rm -rf "$work" && mkdir -p "$work/paper" "$work/docs"
  cp "$root/README.md" "$work/" && cp -r "$root/paper/generated" "$root/paper/constants.tex" "$work/paper/"
  cp "$root"/docs/*.md "$work/docs/"
  for d in topology core numa experiments scripts tests examples .ci; do ln -s "$root/$d" "$work/$d"; done
  ln -s "$root/paper/figures" "$work/paper/figures"; ln -s "$root/paper/README.md" "$work/paper/README.md"
  ln -s "$root/paper/paper.tex" "$work/paper/paper.tex"
}
expect() {  # WHAT: the run must fail and say WHAT
  out=$($py "$root/scripts/check/doc_check.py" "$work" 2>&1); rc=$?
  [ $rc -eq 1 ] || fail "a planted fault passed (exit $rc): $1"
  echo "$out" | grep -qF "$1" || fail "doc_check.py did not say: $1 (it said: $out)"
}
plant; echo "NUMA mode is 1.37x faster on triad." >> "$work/README.md"; expect "the number '1.37x' is typed"
plant; echo "Skynet takes 31% less time." >> "$work/README.md"; expect "the number '31%' is typed"
plant; sed -i '0,/| sweep runs | [^|]*|/s//| sweep runs | 9,999 |/' "$work/paper/generated/results.md"
expect "not what scripts/pipeline/results_md.py renders"
plant; echo 'See `results/issue29/ab/ab.md`.' >> "$work/docs/library.md"; expect "names results/issue29/ab/ab.md"
plant; echo 'See `core/src/sched/nowhere.cpp`.' >> "$work/README.md"; expect "names core/src/sched/nowhere.cpp"
$py "$root/scripts/check/doc_check.py" /nonexistent >/dev/null 2>&1; [ $? -eq 2 ] || fail "a missing repository did not exit 2"
echo "doc_check.py: the documents hold its rules, and it catches each planted fault"
