#!/usr/bin/env bash
# The planted fault of the real-library matrix (core/README.md, "What is preemptible"): with an
# allocator's text made preemptible again (NUGO_PREEMPTIBLE names it), goroutines that churn
# malloc at 20 us slices must fail: crash, or find a block's contents changed. Passes when each
# allocator's fault is found within five runs; fails, naming it, when one never is (the matrix
# would then not catch what it exists to catch).
#   usage: tests/libraries_fault.sh PROGRAM ALLOCATOR.so...
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: libraries_fault.sh PROGRAM ALLOCATOR.so..." >&2; exit 2; }
program=$1
shift
for lib in "$@"; do
  name=$(basename "$lib")
  name=${name%%.so*}
  found=""
  for attempt in 1 2 3 4 5; do
    if ! timeout -k 5 60 env LD_PRELOAD="$lib" NUGO_PREEMPTIBLE="$name" NUGO_PROCS=2 NUGO_TIMESLICE=20us \
         "$program" malloc string >/dev/null 2>&1; then
      found=$attempt
      break
    fi
  done
  if [ -z "$found" ]; then
    echo "libraries_fault.sh: $name preemptible again: five runs passed; the matrix does not see the fault" >&2
    exit 1
  fi
  echo "libraries_fault.sh: $name preemptible again: failed in run $found, as it must"
done
