#!/usr/bin/env bash
# NUGO_VIRTUAL's bad input (tests/CMakeLists.txt via experiments/CMakeLists.txt):
#   virtual_errors.sh off NUGO_WORKLOAD          a build without the mode refuses NUGO_VIRTUAL=on
#                                                 with status 2, saying how to build it
#   virtual_errors.sh on NUGO_WORKLOAD NUGO_ECHO  the virtual-time build refuses bad settings
#                                                 naming the variable, and stops a network program
#                                                 with a message that says why
set -uo pipefail
fail() { echo "virtual_errors.sh: $*" >&2; exit 1; }

expect() {  # expect STATUS TEXT ENV... -- COMMAND...
  local status=$1 text=$2; shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local out rc
  out=$(env "${envs[@]}" "$@" 2>&1); rc=$?
  if [ "$status" = nonzero ]; then [ $rc -ne 0 ] || fail "$* with ${envs[*]}: status 0, expected non-zero"
  else [ $rc -eq "$status" ] || fail "$* with ${envs[*]}: status $rc, expected $status"; fi
  grep -qF -- "$text" <<<"$out" || fail "$* with ${envs[*]}: no '$text' in: $out"
}

case "${1:-}" in
  off)
    expect 2 'NUGO_VIRTUAL="on": this build has no virtual-time mode (configure with -DNUGO_VIRTUAL_TIME=ON' \
      NUGO_VIRTUAL=on -- "$2" fib --size tiny
    ;;
  on)
    expect 2 'NUGO_VIRTUAL="quantum=1ns": unknown setting' NUGO_VIRTUAL=quantum=1ns -- "$2" fib --size tiny
    expect 2 'NUGO_VIRTUAL="wake=2s": unknown setting' NUGO_VIRTUAL=wake=2s -- "$2" fib --size tiny
    expect 2 'NUGO_VIRTUAL="bogus": unknown setting' NUGO_VIRTUAL=bogus -- "$2" fib --size tiny
    expect 2 'NUGO_VIRTUAL="line=1ms": unknown setting' NUGO_VIRTUAL=line=1ms -- "$2" fib --size tiny
    expect 2 'NUGO_VIRTUAL="costs=on": unknown setting' NUGO_VIRTUAL=costs=on -- "$2" fib --size tiny
    expect 2 'remote_line must be at least line' NUGO_VIRTUAL=line=100ns,remote_line=50ns -- "$2" fib --size tiny
    # The cost model's settings, as the statistics report them.
    stats=$(mktemp)
    trap 'rm -f "$stats"' EXIT
    expect 0 '"ok": true' NUGO_VIRTUAL=line=10ns,remote_line=5us NUGO_STATS="$stats" -- "$2" fib --size tiny
    grep -qF '"line_ns": 10, "remote_line_ns": 5000' "$stats" || fail "no line costs in: $(cat "$stats")"
    expect 0 '"ok": true' NUGO_VIRTUAL=costs=off,line=10ns NUGO_STATS="$stats" -- "$2" fib --size tiny
    grep -qF '"line_ns": 0, "remote_line_ns": 0, "charged_ns": {"steal": 0, "queue": 0, "migrate": 0, "wake": 0, "program": 0}' "$stats" ||
      fail "costs=off charged: $(cat "$stats")"
    expect nonzero 'NUGO_VIRTUAL: the network poller does not run in virtual time' \
      NUGO_VIRTUAL=on -- "$3" server --port 0
    # And off means off: the same program, on the real clock.
    expect 0 '"ok": true' NUGO_VIRTUAL=off -- "$2" fib --size tiny
    ;;
  *) fail "usage: virtual_errors.sh off NUGO_WORKLOAD | on NUGO_WORKLOAD NUGO_ECHO" ;;
esac
echo "virtual_errors.sh: OK"
