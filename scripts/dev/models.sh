#!/usr/bin/env bash
# Checks the Promela models of the scheduler's protocols with SPIN (Debian's spin), the way
# CI does: every model must hold, exhaustively, for 2 and 3 Ps, and each mutant (the model
# with one rule of the C++ taken out) must fail, which shows that the model can see the bug
# that rule prevents.
#   scripts/dev/models.sh            all models
# Models live beside the code they model (core/src/sched/models/); each says what it checks.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/bootstrap.sh --checks

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# model file, Ps, defines, expected result (hold | fail)
check() {
  local model=$1 ps=$2 defines=$3 expect=$4
  local label="$(basename "$model") with $ps Ps${defines:+ ($defines)}"
  cp "$model" "$work/model.pml"
  (cd "$work" && spin -a -DNP="$ps" $defines model.pml >/dev/null &&
     gcc -O2 -DSAFETY -DCOLLAPSE -w -o pan pan.c && ./pan -m2000000 > pan.out 2>&1) || true
  local errors states
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/pan.out" | head -1)
  states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$work/pan.out" | head -1)
  if [ -z "$errors" ]; then
    echo "FAIL  $label: SPIN did not run"; cat "$work/pan.out"; failed=1; return
  fi
  if grep -q "Search not completed" "$work/pan.out" && [ "$errors" = 0 ]; then
    echo "FAIL  $label: the search did not complete"; failed=1; return
  fi
  case "$expect/$errors" in
    hold/0) echo "ok    $label: holds ($states states, exhaustive)" ;;
    fail/0) echo "FAIL  $label: the mutant was expected to fail and did not"; failed=1 ;;
    fail/*)
      if grep -q "assertion violated" "$work/pan.out"; then
        echo "ok    $label: the mutant fails, as it must ($(grep -m1 -o 'assertion violated.*' "$work/pan.out" | cut -c1-80))"
      else
        echo "FAIL  $label: the mutant fails, but not by the property: $(grep -m1 'pan:' "$work/pan.out")"; failed=1
      fi ;;
    *) echo "FAIL  $label: $(grep -m1 'assertion violated\|invalid end state' "$work/pan.out")"; failed=1 ;;
  esac
}

spinning=core/src/sched/models/spinning.pml
for ps in 2 3; do check "$spinning" "$ps" "" hold; done
check "$spinning" 3 "-DMUTANT_NO_RECHECK" fail
check "$spinning" 3 "-DMUTANT_UNDO_OUTSIDE_LOCK" fail

runq=core/src/sched/models/runq.pml  # 3 Ps: a remote thief too (36 million states, ~45 s, 2 GB)
for ps in 2 3; do check "$runq" "$ps" "" hold; done
for mutant in MUTANT_GET_NO_CAS MUTANT_RUNNEXT_NO_CAS MUTANT_PUTSLOW_NO_CAS; do
  check "$runq" 2 "-D$mutant" fail
done
exit "$failed"
