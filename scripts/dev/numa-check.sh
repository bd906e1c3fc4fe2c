#!/usr/bin/env bash
# Runs nugo's NUMA check programs on a real multi-node Linux kernel: Debian's kernel booted
# under QEMU (software emulation, TCG) with 2 or 4 NUMA nodes of 2 CPUs each and a distance
# matrix, or natively on this machine.
#   scripts/dev/numa-check.sh                      natively (this machine: usually one node)
#   scripts/dev/numa-check.sh --vm 2               a 2-node guest, distances 10/21
#   scripts/dev/numa-check.sh --vm 4               a 4-node guest: 10 local, 16 to the other node of
#                                              its pair (0-1, 2-3), 32 to the nodes of the other pair
#   scripts/dev/numa-check.sh --vm 2 --memory-node a 2-node guest plus a memory-only node (no CPUs),
#                                              distance 31 from the others
#   scripts/dev/numa-check.sh --vm 4 --reproduce   the users' command rehearsed in the 4-node guest:
#                                              scripts/reproduce.sh --quick on the guest's whole
#                                              machine and again under taskset on the CPUs of
#                                              its odd-numbered nodes, then its results checked
#                                              (scripts/check/rehearsal_check.py); see "The rehearsal"
# Options: --build-dir DIR (default build), --timeout SECONDS (whole guest run, default 240;
#          1200 with --reproduce),
#          --node-mem MIB (memory per node, default 1024), --log FILE (console log; default
#          DIR/numa-check/vm-N.log, or native.log), --extra PROG (one more check program: it
#          passes when it exits 0; repeatable), --console (stream the whole console), --keep
#          (keep the initramfs staging directory), --kernel FILE (default: the newest
#          /boot/vmlinuz-*), --append ARGS (more kernel command line, e.g. "mitigations=off").
#          With --reproduce: --out DIR (the rehearsal's results; default DIR/numa-check/
#          rehearsal-vm-N, emptied first), --only W,... (default fib,triad,fanin: a fork-join, a
#          memory-bound and a communication workload; triad must be among them).
#
# The check programs: BUILD/topology/nugo-topo (required), BUILD/tests/nugo_numa_check (when
# it exists) and, in a guest, BUILD/tests/nugo_sched_tests_p2 (the scheduler suite, in NUMA
# mode there). In the guest they run from an initramfs built here (busybox, the programs, the
# shared libraries ldd names and the loader) whose /init runs the checks, prints one line per
# check, "NUGO-CHECK <name> PASS|FAIL|SKIP <detail>" (SKIP: cannot apply to this machine, e.g.
# a memory-only node where there is none), then "NUGO-CHECK-DONE passed=N failed=M skipped=K",
# and powers off. The checks:
#   cpu-xsave     /proc/cpuinfo shows xsave (the preemption signal saves vector state with it)
#   kernel-numa   /sys/devices/system/node: every online CPU in one node, a 10 on each diagonal;
#                 in a guest, exactly the nodes, CPUs and distances given to QEMU
#   nugo-topo     exits 0, says "this machine", not emulated, and shows the kernel's nodes, CPUs
#                 and distance matrix
#   <program>     every other program: exits 0 (within 180 s); each "NUGO-CHECK" line it prints
#                 is a check of its own (nugo_numa_check: binding, go_on, stacks, nugo::numa)
# Exit status: 0 when the done line says failed=0 with at least one check; 1 when a check
# failed or the guest did not finish; 2 for bad arguments; 3 when something needed is missing
# (QEMU, the kernel image, busybox, nugo-topo), or 1 with NUGO_REQUIRE_VM=1 (CI).
# Needs: qemu-system-x86 linux-image-amd64 busybox-static cpio (scripts/bootstrap.sh --vm).
#
# The rehearsal (--reproduce). The guest's kernel loads virtio, 9p and overlayfs from this
# machine's /lib/modules, mounts this machine's whole file system read-only over 9p (virtio),
# lays a tmpfs over it with overlayfs (so the pipeline may write anywhere, and nothing reaches
# this machine), and chroots into it: Python, matplotlib, TeX, Go and the build are this
# machine's own, nothing is copied. Only the results directory is a second, writable 9p share.
# Inside, /nugo-out/rehearse.sh runs (each step a NUGO-STEP line on the console):
#   1. nugo-workload with no NUGO_MODE, on the whole guest and under the taskset mask: the
#      runtime's own choice of mode and binding;
#   2. scripts/reproduce.sh --quick --build-dir BUILD --only W --modes flat,numa,go,go_numactl,
#      tbb,omp,fiber --procs 2N --rehearsal WHY: the sweep on topology `machine` (the guest's
#      real nodes) with the peers that are built, the figures, numbers.tex and, where TeX is
#      installed, the PDF;
#   3. under taskset -c (the CPUs of nodes 1 and 3 of 4, or node 1 of 2), as numactl
#      --cpunodebind would run it: the runtime's choice, nugo-topo's placement and the sweep on
#      triad (the part of the pipeline that places work, on the workload that places data;
#      figures and paper do not depend on the CPUs);
#   4. in a cgroup v2 cpuset of the same nodes' CPUs and memory, as a container runs it: the
#      same.
# Then scripts/check/rehearsal_check.py checks what it wrote against the guest's nodes, CPUs and
# distances (NUGO-CHECK lines, as the other checks). The timings of a TCG guest mean nothing:
# every file says REHEARSAL, and nothing of it is published or quoted.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
me=numa-check.sh

usage() {
  cat >&2 <<'EOF'
usage: scripts/dev/numa-check.sh [--vm 2|4 [--memory-node | --reproduce [--out DIR] [--only W,...]]]
                             [--build-dir DIR] [--timeout SECONDS] [--node-mem MIB]
                             [--log FILE] [--extra PROG]... [--console] [--keep]
                             [--kernel FILE] [--append KERNEL-ARGS]
EOF
  exit 2
}
die() { echo "$me: $*" >&2; exit 1; }
# Something needed is not installed: exit 3, which ctest counts as skipped; with
# NUGO_REQUIRE_VM=1 (CI, which installs it all) a failure instead, so that a skip cannot hide.
missing() {
  echo "$me: $*" >&2
  [ "${NUGO_REQUIRE_VM:-0}" = 1 ] && { echo "$me: NUGO_REQUIRE_VM=1: failing instead of skipping" >&2; exit 1; }
  exit 3
}

vm=""
memory_node=0
build=""
limit=240  # 1200 with --reproduce
limit_given=0
node_mem=1024  # MiB per node; TCG commits only what the guest touches
log=""
console=0
keep=0
extras=()
kernel=""
append=""
reproduce=0
rehearsal_out=""
rehearsal_only=fib,triad,fanin
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "$me: $1 needs a value" >&2; usage; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --vm) need_value "$@"; vm=$2; shift 2 ;;
    --vm=*) vm=${1#*=}; shift ;;
    --build-dir) need_value "$@"; build=$2; shift 2 ;;
    --build-dir=*) build=${1#*=}; shift ;;
    --timeout) need_value "$@"; limit=$2; limit_given=1; shift 2 ;;
    --timeout=*) limit=${1#*=}; limit_given=1; shift ;;
    --node-mem) need_value "$@"; node_mem=$2; shift 2 ;;
    --node-mem=*) node_mem=${1#*=}; shift ;;
    --log) need_value "$@"; log=$2; shift 2 ;;
    --log=*) log=${1#*=}; shift ;;
    --extra) need_value "$@"; extras+=("$2"); shift 2 ;;
    --extra=*) extras+=("${1#*=}"); shift ;;
    --kernel) need_value "$@"; kernel=$2; shift 2 ;;
    --kernel=*) kernel=${1#*=}; shift ;;
    --append) need_value "$@"; append=$2; shift 2 ;;
    --append=*) append=${1#*=}; shift ;;
    --console) console=1; shift ;;
    --memory-node) memory_node=1; shift ;;
    --reproduce) reproduce=1; shift ;;
    --out) need_value "$@"; rehearsal_out=$2; shift 2 ;;
    --out=*) rehearsal_out=${1#*=}; shift ;;
    --only) need_value "$@"; rehearsal_only=$2; shift 2 ;;
    --only=*) rehearsal_only=${1#*=}; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage ;;
    *) echo "$me: unknown argument '$1'" >&2; usage ;;
  esac
done
case "$vm" in
  ""|2|4) ;;
  *) echo "$me: --vm takes 2 or 4 (NUMA nodes), not '$vm'" >&2; usage ;;
esac
[ "$memory_node" = 0 ] || [ -n "$vm" ] || { echo "$me: --memory-node goes with --vm" >&2; usage; }
if [ "$reproduce" = 1 ]; then
  [ -n "$vm" ] || { echo "$me: --reproduce goes with --vm 2 or --vm 4" >&2; usage; }
  [ "$limit_given" = 1 ] || limit=1200
  [ "$memory_node" = 0 ] || { echo "$me: --reproduce and --memory-node exclude each other" >&2; usage; }
  [ ${#extras[@]} -eq 0 ] || { echo "$me: --reproduce runs the pipeline, not --extra programs" >&2; usage; }
  [[ "$rehearsal_only" =~ ^[a-z_]+(,[a-z_]+)*$ ]] ||
    { echo "$me: --only takes workload names separated by commas, not '$rehearsal_only'" >&2; usage; }
  [[ ",$rehearsal_only," == *,triad,* ]] ||
    { echo "$me: --only must include triad (the confined runs sweep it), not '$rehearsal_only'" >&2; usage; }
else
  [ -z "$rehearsal_out" ] || { echo "$me: --out goes with --reproduce" >&2; usage; }
fi
[[ "$limit" =~ ^[0-9]+$ ]] && [ "$limit" -ge 10 ] ||
  { echo "$me: --timeout takes whole seconds, at least 10, not '$limit'" >&2; usage; }
[[ "$node_mem" =~ ^[0-9]+$ ]] && [ "$node_mem" -ge 128 ] ||
  { echo "$me: --node-mem takes MiB, at least 128, not '$node_mem'" >&2; usage; }

# The check programs.
[ -n "$build" ] || build=$root/build
[ -d "$build" ] || missing "no build directory '$build' (build first: scripts/test.sh, or pass --build-dir)"
build=$(cd "$build" && pwd)
topo=$build/topology/nugo-topo
[ -x "$topo" ] || missing "no $topo (build the project first: scripts/test.sh, or pass --build-dir)"
programs=("$topo")
[ -x "$build/tests/nugo_numa_check" ] && programs+=("$build/tests/nugo_numa_check")
# In the 2-node guest, also the scheduler's Catch2 suite (channels, select, sync, timers:
# 44 of its 47 cases), which runs in NUMA mode there because the kernel has two nodes. It
# takes about a minute under emulation, so the other guests leave it out; natively ctest
# runs it already.
if [ "$vm" = 2 ] && [ "$memory_node" = 0 ] && [ -x "$build/tests/nugo_sched_tests_p2" ]; then
  programs+=("$build/tests/nugo_sched_tests_p2")
fi
for p in ${extras[@]+"${extras[@]}"}; do
  [ -f "$p" ] && [ -x "$p" ] || die "--extra $p: not an executable file"
  programs+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done
names=" "
for p in "${programs[@]}"; do
  case "$(basename "$p")" in
    *[!A-Za-z0-9._-]*) die "$p: a check program's name may hold only letters, digits, '.', '_', '-'" ;;
  esac
  case "$names" in *" $(basename "$p") "*) die "two check programs are named $(basename "$p")" ;; esac
  names="$names$(basename "$p") "
done

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

work=$(mktemp -d "${TMPDIR:-/tmp}/nugo-numa-check.XXXXXX")
qemu_pid=""
cleanup() {
  [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "$me: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# checks.sh: the checks themselves, in POSIX sh and awk, so that they run the same under the
# guest's busybox and natively.  usage: checks.sh [--expect FILE] PROGRAM...
# An expect file has a line "NODE|CPULIST|DISTANCES" per node, as /sys shows them.
cat >"$work/checks.sh" <<'CHECKS'
#!/bin/sh
expect=""
if [ "${1:-}" = --expect ]; then expect=$2; shift 2; fi
out=${TMPDIR:-/tmp}/nugo-check.$$
passed=0
failed=0
skipped=0
check() {  # NAME PASS|FAIL DETAIL...
  name=$1; status=$2; shift 2
  echo "NUGO-CHECK $name $status $*"
  if [ "$status" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
# "NODE|CPULIST|DISTANCES" lines to a normal form: CPU lists expanded, single spaces, sorted.
normal() {
  awk -F'|' '
    function expand(l,   parts, n, i, r, a, b, k, s) {
      s = ""; n = split(l, parts, ",")
      for (i = 1; i <= n; i++) {
        if (parts[i] == "") continue
        if (split(parts[i], r, "-") == 2) { a = r[1] + 0; b = r[2] + 0 } else { a = parts[i] + 0; b = a }
        for (k = a; k <= b; k++) s = s (s == "" ? "" : ",") k
      }
      return s
    }
    NF >= 3 { d = $3; gsub(/[ \t\r]+/, " ", d); sub(/^ /, "", d); sub(/ $/, "", d)
              print ($1 + 0) "|" expand($2) "|" d }' | sort -t'|' -k1,1n
}
# The normal form, readable: "node 0: CPUs 0,1, distances 10 21; ..."
readable() { awk -F'|' '{ printf "%snode %s: CPUs %s, distances %s", (NR > 1 ? "; " : ""), $1, ($2 == "" ? "none" : $2), $3 }'; }

# cpu-xsave
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
have=""
for f in xsave xsaveopt xsavec avx avx2 avx512f; do
  case " $flags " in *" $f "*) have="$have $f" ;; esac
done
case " $flags " in
  *" xsave "*) check cpu-xsave PASS "/proc/cpuinfo flags:$have" ;;
  *) check cpu-xsave FAIL "no xsave in /proc/cpuinfo flags (found:${have:- none of xsave avx avx2 avx512f})" ;;
esac

# kernel-numa: what the kernel shows, in normal form
sysnode=/sys/devices/system/node
if [ -d $sysnode/node0 ]; then
  kernel=$(for d in $sysnode/node[0-9]*; do
             echo "${d##*/node}|$(cat "$d/cpulist")|$(cat "$d/distance")"
           done | normal)
else
  kernel=$(echo "0|$(cat /sys/devices/system/cpu/online)|10" | normal)
fi
nodes=$(echo "$kernel" | grep -c .)
online=$(echo "0|$(cat /sys/devices/system/cpu/online)|0" | normal | cut -d'|' -f2)
# What this process may use of it (taskset, numactl, a cgroup cpuset), as nugo-topo shows it: the
# allowed CPUs, the nodes that keep one or never had one, and their rows and columns of distances.
allowed=$(echo "0|$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)|0" | normal | cut -d'|' -f2)
usable=$(echo "$kernel" | awk -F'|' -v allowed="$allowed" '
  BEGIN { m = split(allowed, a, ","); for (i = 1; i <= m; i++) ok[a[i]] = 1 }
  { node[NR] = $1; dist[NR] = $3; c = ""; k = split($2, p, ",")
    for (i = 1; i <= k; i++) if (p[i] in ok) c = c (c == "" ? "" : ",") p[i]
    cpus[NR] = c; keep[NR] = (c != "" || $2 == "") }
  END { for (r = 1; r <= NR; r++) if (keep[r]) {
          split(dist[r], dd, " "); d = ""
          for (j = 1; j <= NR; j++) if (keep[j]) d = d (d == "" ? "" : " ") dd[j]
          print node[r] "|" cpus[r] "|" d } }')
usable_nodes=$(echo "$usable" | grep -c .)
problem=$(echo "$kernel" | awk -F'|' -v online="$online" -v nodes="$nodes" '
  { n = split($3, d, " "); if (n != nodes) print "node " $1 " has " n " distances for " nodes " nodes"
    idx = NR; if (d[idx] != 10) print "node " $1 " has distance " d[idx] " to itself"
    m = split($2, c, ","); for (i = 1; i <= m; i++) { if (c[i] in seen) print "CPU " c[i] " in two nodes"; seen[c[i]] = 1 } }
  END { m = split(online, c, ","); for (i = 1; i <= m; i++) if (!(c[i] in seen)) print "online CPU " c[i] " in no node" }' |
  head -3 | tr '\n' ';')
if [ -n "$expect" ]; then
  want=$(normal <"$expect")
  if [ -n "$problem" ]; then
    check kernel-numa FAIL "$problem"
  elif [ "$kernel" = "$want" ]; then
    check kernel-numa PASS "$nodes nodes as given to QEMU: $(echo "$kernel" | readable)"
  else
    check kernel-numa FAIL "expected $(echo "$want" | readable) | the kernel shows $(echo "$kernel" | readable)"
  fi
else
  if [ -n "$problem" ]; then
    check kernel-numa FAIL "$problem"
  elif [ "$nodes" -eq 1 ]; then
    echo "NUGO-NOTE this machine has one NUMA node: no remote distance to check here (scripts/dev/numa-check.sh --vm 2 or --vm 4 boots a multi-node kernel)"
    check kernel-numa PASS "1 node: $(echo "$kernel" | readable)"
  else
    check kernel-numa PASS "$nodes nodes: $(echo "$kernel" | readable)"
  fi
fi

# The programs: nugo-topo is compared with the kernel; every other one passes when it exits 0.
for prog in "$@"; do
  name=${prog##*/}
  echo "--- $name ---"
  if [ "$name" = nugo-topo ]; then
    timeout 60 "$prog" >"$out" 2>&1; rc=$?
  elif [ "$name" = nugo_sched_tests_p2 ]; then
    # At 2 Ps, as ctest runs it. The cases tagged [realtime] measure against real time
    # (deadline order 10 ms apart; CPU over a 400 ms sleep that starting 1000 goroutines
    # outlasts at TCG speed): meaningless under emulation, left out.
    echo "(NUGO_PROCS=2; left out under emulation: the cases tagged [realtime])"
    NUGO_PROCS=2 timeout 180 "$prog" '~[realtime]' >"$out" 2>&1; rc=$?
  else
    timeout 180 "$prog" >"$out" 2>&1; rc=$?
  fi
  cat "$out"
  echo "--- end of $name: exit status $rc ---"
  if [ "$name" != nugo-topo ]; then
    # Its own checks count one by one (they were printed above), and then its exit status.
    passed=$((passed + $(grep -c '^NUGO-CHECK [^ ]* PASS' "$out" || true)))
    failed=$((failed + $(grep -c '^NUGO-CHECK [^ ]* FAIL' "$out" || true)))
    skipped=$((skipped + $(grep -c '^NUGO-CHECK [^ ]* SKIP' "$out" || true)))
    last=$(grep . "$out" | tail -n 1 | cut -c1-160)
    last=${last:-no output}
    if [ $rc -eq 0 ]; then check "$name" PASS "exit status 0: $last"
    elif [ $rc -eq 124 ] || [ $rc -eq 143 ]; then check "$name" FAIL "timed out after 180 s: $last"
    else check "$name" FAIL "exit status $rc: $last"; fi
    continue
  fi
  seen=$(awk '
    /^node [0-9]+/ {
      n = $2; sub(/:$/, "", n)
      if (match($0, /\(OS node [0-9]+\)/)) { n = substr($0, RSTART + 9, RLENGTH - 10) }
      cpus[n] = ""; if (match($0, /PUs [0-9][0-9,-]*/)) cpus[n] = substr($0, RSTART + 4, RLENGTH - 4)
      order[++count] = n; next }
    /^distances/ { indist = 1; header = 1; next }
    indist && header { header = 0; next }
    indist && /^ *[0-9]+( +[0-9]+)+ *$/ { r = $1; $1 = ""; dist[r] = $0; next }
    indist { indist = 0 }
    END { for (i = 1; i <= count; i++) { n = order[i]; print n "|" cpus[n] "|" dist[i - 1] } }' "$out" | normal)
  said=$(sed -n 's/.* \([0-9][0-9]*\) NUMA nodes*$/\1/p' "$out" | head -n 1)
  if [ $rc -ne 0 ]; then
    check nugo-topo FAIL "exit status $rc: $(grep . "$out" | tail -n 1 | cut -c1-160)"
  elif grep -q emulated "$out"; then
    check nugo-topo FAIL "says emulated: $(grep -m1 emulated "$out")"
  elif ! grep -q '^topology: this machine' "$out"; then
    check nugo-topo FAIL "not this machine's topology: $(head -n 1 "$out")"
  elif [ "$said" != "$usable_nodes" ]; then
    check nugo-topo FAIL "says ${said:-no count of} NUMA nodes, the kernel shows $usable_nodes this process may use"
  elif [ "$seen" != "$usable" ]; then
    check nugo-topo FAIL "shows $(echo "$seen" | readable) | the kernel shows, of what this process may use, $(echo "$usable" | readable)"
  else
    check nugo-topo PASS "this machine, not emulated, $said NUMA node(s), their CPUs and distances as the kernel's ($(sed -n 's/^distances (\(.*\)):$/\1/p' "$out"))"
  fi
done
rm -f "$out"
echo "NUGO-CHECK-DONE passed=$passed failed=$failed skipped=$skipped"
CHECKS

# ---------------------------------------------------------------------------------------------
# Native: the same checks on this machine.
if [ -z "$vm" ]; then
  [ -n "$log" ] || { mkdir -p "$build/numa-check"; log=$build/numa-check/native.log; }
  echo "$me: running the checks natively on this machine ($(nproc) CPUs), log $log"
  start=$(now)
  env -u NUGO_TOPOLOGY -u HWLOC_XMLFILE -u HWLOC_SYNTHETIC -u NUGO_PROCS TMPDIR="$work" \
    sh "$work/checks.sh" "${programs[@]}" 2>&1 | tee "$log"
  summary=$(grep -a '^NUGO-CHECK-DONE' "$log" | tail -n 1 || true)
  echo "$me: native checks took $(since "$start") s"
  [[ "$summary" =~ passed=([0-9]+)\ failed=([0-9]+) ]] || die "the checks ended without a summary line"
  if [ "${BASH_REMATCH[2]}" -eq 0 ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
    echo "$me: PASS: ${BASH_REMATCH[1]} checks passed"; exit 0
  fi
  echo "$me: FAIL: ${BASH_REMATCH[2]} of $((BASH_REMATCH[1] + BASH_REMATCH[2])) checks failed" >&2
  exit 1
fi

# ---------------------------------------------------------------------------------------------
# A guest.
qemu=$(command -v qemu-system-x86_64 || true)
[ -n "$qemu" ] || missing "no qemu-system-x86_64: install the Debian package qemu-system-x86 (scripts/bootstrap.sh --vm)"
if [ -n "$kernel" ]; then
  [ -f "$kernel" ] && [ -r "$kernel" ] || missing "--kernel $kernel: no such readable file"
else
  # Debian's generic kernel (what linux-image-amd64 pulls in) before any other flavour.
  kernel=$(ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$kernel" ] || kernel=$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$kernel" ] ||
    missing "no kernel image /boot/vmlinuz-*: install the Debian package linux-image-amd64 (scripts/bootstrap.sh --vm)"
  [ -r "$kernel" ] || missing "$kernel is not readable by $(id -un): run as root, or pass --kernel FILE"
fi
busybox=""
for b in /bin/busybox /usr/bin/busybox; do [ -x "$b" ] && { busybox=$b; break; }; done
[ -n "$busybox" ] || missing "no busybox: install the Debian package busybox-static (scripts/bootstrap.sh --vm)"
if command -v cpio >/dev/null; then cpio=(cpio -o -H newc); else cpio=("$busybox" cpio -o -H newc); fi
command -v ldd >/dev/null || missing "no ldd (Debian package libc-bin)"
command -v gzip >/dev/null || missing "no gzip"

# The machine: nodes of 2 CPUs each; CPUs 2i and 2i+1 on node i, one socket per node.
nodes=$vm
cpus=$((2 * nodes))
dist() {  # SRC DST
  if [ "$1" -eq "$2" ]; then echo 10
  elif [ "$nodes" -eq 2 ]; then echo 21
  elif [ $(($1 / 2)) -eq $(($2 / 2)) ]; then echo 16
  else echo 32; fi
}
numa_args=()
: >"$work/expect"
for ((i = 0; i < nodes; i++)); do
  numa_args+=(-object "memory-backend-ram,id=m$i,size=${node_mem}M"
              -numa "node,nodeid=$i,cpus=$((2 * i))-$((2 * i + 1)),memdev=m$i")
  row=""
  for ((j = 0; j < nodes; j++)); do row="$row $(dist $i $j)"; done
  echo "$i|$((2 * i))-$((2 * i + 1))|${row# }" >>"$work/expect"
done
for ((i = 0; i < nodes; i++)); do
  for ((j = i + 1; j < nodes; j++)); do  # QEMU makes the matrix symmetric
    numa_args+=(-numa "dist,src=$i,dst=$j,val=$(dist $i $j)")
  done
done
if [ "$memory_node" = 1 ]; then  # node $nodes: memory, no CPUs (as HBM or CXL memory)
  numa_args+=(-object "memory-backend-ram,id=m$nodes,size=${node_mem}M" -numa "node,nodeid=$nodes,memdev=m$nodes")
  for ((i = 0; i < nodes; i++)); do numa_args+=(-numa "dist,src=$i,dst=$nodes,val=31"); done
  # The expected rows gain a distance to the memory node, and the memory node a row.
  awk -F'|' -v OFS='|' '{ $3 = $3 " 31"; print }' "$work/expect" >"$work/expect.new"
  row=""
  for ((j = 0; j < nodes; j++)); do row="$row 31"; done
  echo "$nodes||${row# } 10" >>"$work/expect.new"
  mv "$work/expect.new" "$work/expect"
fi

# ---------------------------------------------------------------------------------------------
# The rehearsal's preparation: the kernel modules the guest needs, the results directory, the
# build brought up to date here (under TCG, ninja would take hours to build anything), and the
# script the guest runs.
if [ "$reproduce" = 1 ]; then
  kver=$(basename "$kernel"); kver=${kver#vmlinuz-}
  moddir=/lib/modules/$kver
  [ -f "$moddir/modules.dep" ] ||
    missing "no $moddir/modules.dep: the rehearsal loads 9p and overlayfs from the kernel's modules (Debian package linux-image-$kver)"
  # Each module after the ones it needs, from modules.dep (no modprobe needed here).
  modules=()
  add_module() {  # PATH relative to $moddir
    local m=$1 dep
    case " ${modules[*]-} " in *" $m "*) return ;; esac
    local line; line=$(grep -m1 "^$m:" "$moddir/modules.dep") || die "$moddir/modules.dep has no $m"
    for dep in ${line#*:}; do add_module "$dep"; done
    modules+=("$m")
  }
  for name in virtio_pci 9pnet_virtio 9p overlay; do
    if grep -q "/$name\.ko\$" "$moddir/modules.builtin" 2>/dev/null; then continue; fi  # built in
    rel=$(grep -m1 -o "^[^:]*/$name\.ko[^:]*" "$moddir/modules.dep") ||
      missing "$kver has no module $name (the rehearsal needs virtio_pci, 9pnet_virtio, 9p and overlay)"
    add_module "$rel"
  done
  for m in ${modules[@]+"${modules[@]}"}; do
    case "$m" in
      *.ko) ;;
      *.ko.xz) command -v xz >/dev/null || missing "$moddir/$m is compressed: install xz-utils" ;;
      *.ko.zst) command -v zstd >/dev/null || missing "$moddir/$m is compressed: install zstd" ;;
      *) missing "$moddir/$m: a compression busybox insmod cannot load" ;;
    esac
  done

  [ -n "$rehearsal_out" ] || rehearsal_out=$build/numa-check/rehearsal-vm-$nodes
  rehearsal_out=$(realpath -m "$rehearsal_out")
  # It is emptied first: only a new or empty directory, or an earlier rehearsal's (rehearse.sh).
  if [ -e "$rehearsal_out" ] && [ -n "$(ls -A "$rehearsal_out" 2>/dev/null)" ] && [ ! -f "$rehearsal_out/rehearse.sh" ]; then
    echo "$me: --out $rehearsal_out: not empty and not an earlier rehearsal's results; it would be emptied, so give a new directory" >&2
    exit 2
  fi
  rm -rf "$rehearsal_out"
  mkdir -p "$rehearsal_out"

  # What the pipeline will run, built now. The twins exist where CMake found their runtimes.
  targets=(nugo-workload nugo-topo)
  available=$(cmake --build "$build" --target help 2>/dev/null) || die "$build: cmake --build --target help failed"
  for twin in tbb-workload omp-workload fiber-workload; do
    grep -q "^$twin:" <<<"$available" && targets+=("$twin")
  done
  echo "$me: building ${targets[*]} in $build"
  cmake --build "$build" --target "${targets[@]}" >"$work/build.log" 2>&1 || { tail -n 20 "$work/build.log" >&2; die "the build failed"; }
  if command -v go >/dev/null; then  # the Go twin too, so that the guest only finds it up to date
    PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$build" "$root" <<'PY' || die "the Go twin did not build"
import sys
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[2]) / "scripts"))
from pipeline import explib, sweep
sys.exit(0 if sweep.build_go_twin(Path(sys.argv[1]), explib.Runner(timeout_s=600, echo=False)) else 1)
PY
  fi

  # matplotlib's font cache, built here in a second if it is not there: under TCG, half a minute.
  /usr/bin/python3 -c 'import matplotlib.pyplot' 2>/dev/null || true

  # Node 1 of 2, or nodes 1 and 3 of 4 (not neighbours: distance 32): the odd-numbered nodes.
  masked_nodes=""
  masked_cpus=""
  for ((i = 1; i < nodes; i += 2)); do
    masked_nodes="$masked_nodes${masked_nodes:+,}$i"
    masked_cpus="$masked_cpus${masked_cpus:+,}$((2 * i)),$((2 * i + 1))"
  done
  why="a QEMU TCG guest with $nodes NUMA nodes (scripts/dev/numa-check.sh --vm $nodes --reproduce)"
  modes=flat,numa,go,go_numactl,tbb,omp,fiber
  {
    echo "#!/bin/bash"
    echo "# Written by scripts/dev/numa-check.sh --reproduce; runs in the guest, chrooted into this machine's"
    echo "# file system (read-only over 9p, with a tmpfs laid over it); writes to /nugo-out only."
    printf 'root=%q build=%q only=%q modes=%q why=%q masked_cpus=%q masked_nodes=%q nodes=%q home=%q\n' \
      "$root" "$build" "$rehearsal_only" "$modes" "$why" "$masked_cpus" "$masked_nodes" "$nodes" "${HOME:-/root}"
    cat <<'GUEST'
set -u
out=/nugo-out
# This machine's HOME (its matplotlib font cache; writes stay in the guest's overlay).
export HOME=$home LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for v in $(compgen -v NUGO_); do unset "$v"; done
cd "$root" || { echo "NUGO-STEP cannot enter $root"; exit 1; }
step() { echo "NUGO-STEP $*"; }
status() { echo "$2" >"$out/$1.status"; step "$1: exit status $2"; }
# The runtime's own choices: no NUGO_MODE, no NUGO_BIND.
default_run() {  # NAME [taskset -c CPUS]
  local name=$1; shift
  NUGO_STATS=$out/$name.stats.json "$@" "$build/experiments/nugo-workload" triad --size tiny \
    >"$out/$name.json" 2>"$out/$name.err"
  status "$name" $?
}
step "nugo-workload triad with no NUGO_MODE, on the whole guest"
default_run default-mode
"$build/topology/nugo-topo" --procs "$((2 * nodes))" >"$out/topo.txt" 2>&1
# Two Ps per node, every CPU of the guest: smaller counts would add minutes of emulation and
# nothing a multi-node kernel must show.
step "scripts/reproduce.sh --quick --only $only --procs $((2 * nodes)) on the whole guest"
scripts/reproduce.sh --quick --build-dir "$build" --only "$only" --modes "$modes" --procs "$((2 * nodes))" --topology machine \
  --out "$out/whole" --rehearsal "$why" 2>&1 | sed -u 's/^/  whole | /'
status whole "${PIPESTATUS[0]}"
# Under the mask, the part of the pipeline that places work: the sweep, on the memory-bound
# workload, whose data is placed per node (figures and the paper were drawn and built above,
# and nothing in them depends on the CPUs).
masked=$(tr "," "\n" <<<"$masked_cpus" | grep -c .)
step "scripts/pipeline/sweep.py --quick --only triad --procs $masked under taskset -c $masked_cpus"
default_run masked-default-mode taskset -c "$masked_cpus"
taskset -c "$masked_cpus" "$build/topology/nugo-topo" --procs "$masked" >"$out/masked-topo.txt" 2>&1
taskset -c "$masked_cpus" /usr/bin/python3 scripts/pipeline/sweep.py --quick --build-dir "$build" --only triad \
  --modes "$modes" --procs "$masked" --topology machine --out "$out/masked" \
  --rehearsal "$why, under taskset -c $masked_cpus" 2>&1 | sed -u 's/^/  masked | /'
status masked "${PIPESTATUS[0]}"
# As a container runs it: a cgroup (v2) cpuset with the same nodes' CPUs and memory, which hwloc
# reads as its allowed sets. The sweep once more, on the memory-bound workload alone.
step "under a cgroup cpuset: cpus $masked_cpus, mems $masked_nodes"
cg=/sys/fs/cgroup
if { [ -f $cg/cgroup.controllers ] || mount -t cgroup2 cgroup2 $cg; } &&
   echo +cpuset >$cg/cgroup.subtree_control && mkdir -p $cg/nugo-rehearsal &&
   echo "$masked_cpus" >$cg/nugo-rehearsal/cpuset.cpus && echo "$masked_nodes" >$cg/nugo-rehearsal/cpuset.mems; then
  (
    echo "$BASHPID" >$cg/nugo-rehearsal/cgroup.procs || exit 1
    default_run cgroup-default-mode
    "$build/topology/nugo-topo" --procs "$masked" >"$out/cgroup-topo.txt" 2>&1
    /usr/bin/python3 scripts/pipeline/sweep.py --quick --build-dir "$build" --only triad --modes "$modes" \
      --procs "$masked" --topology machine --out "$out/cgroup" \
      --rehearsal "$why, in a cgroup cpuset (cpus $masked_cpus, mems $masked_nodes)" 2>&1 | sed -u 's/^/  cgroup | /'
    status cgroup "${PIPESTATUS[0]}"
  )
else
  step "cgroup: the guest cannot make a cpuset cgroup"
fi
echo "NUGO-REHEARSAL-DONE"
GUEST
  } >"$rehearsal_out/rehearse.sh"
  chmod +x "$rehearsal_out/rehearse.sh"
fi

# The initramfs.
echo "$me: building the initramfs in $work"
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,nugo/bin}
copy_with_libs() {  # FILE DEST: the file, and every shared library ldd names, at its own path
  cp -L "$1" "$rootfs$2"
  local lib
  { ldd "$1" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
    while read -r lib; do
      [ -e "$rootfs$lib" ] && continue
      mkdir -p "$rootfs$(dirname "$lib")"
      cp -L "$lib" "$rootfs$lib"
    done
  local deps
  deps=$(ldd "$1" 2>&1 || true)  # whole, then searched: grep -q on a pipe could cut ldd short
  if [[ "$deps" == *"not found"* ]]; then
    die "$1: ldd cannot find some of its libraries: $(grep 'not found' <<<"$deps" | tr -s ' \t\n' ' ')"
  fi
}
copy_with_libs "$busybox" /bin/busybox
for a in sh mount umount mkdir cat echo grep sed awk sort cut tr head tail tee uname nproc sleep \
         timeout poweroff rm ls dmesg date; do
  ln -s busybox "$rootfs/bin/$a"
done
run_args=()
for p in "${programs[@]}"; do
  [ "$reproduce" = 1 ] && break  # the rehearsal runs everything from this machine's file system
  copy_with_libs "$p" "/nugo/bin/$(basename "$p")"
  run_args+=("/nugo/bin/$(basename "$p")")
done
cp "$work/checks.sh" "$rootfs/nugo/checks.sh"
cp "$work/expect" "$rootfs/nugo/expect"
libdirs=$(cd "$rootfs" && find . -name '*.so*' -printf '/%h\n' | sed 's|^/\./|/|' | sort -u | tr '\n' ':')
if [ "$reproduce" = 1 ]; then
  mkdir -p "$rootfs/nugo/modules" "$rootfs"/{host,rw,newroot}
  loads=()  # busybox insmod loads plain .ko files: compressed ones are unpacked here
  for m in ${modules[@]+"${modules[@]}"}; do
    base=$(basename "$m")
    case "$m" in
      *.ko.xz) xz -dc "$moddir/$m" >"$rootfs/nugo/modules/${base%.xz}"; loads+=("${base%.xz}") ;;
      *.ko.zst) zstd -qdc "$moddir/$m" >"$rootfs/nugo/modules/${base%.zst}"; loads+=("${base%.zst}") ;;
      *) cp "$moddir/$m" "$rootfs/nugo/modules/"; loads+=("$base") ;;
    esac
  done
  cat >"$rootfs/init" <<INIT
#!/bin/sh
# nugo numa-check guest, the rehearsal: this machine's file system over 9p under a tmpfs
# overlay, the pipeline run in it (/nugo-out/rehearse.sh), and power off.
export PATH=/bin LD_LIBRARY_PATH=${libdirs%:}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
echo 4 4 1 7 >/proc/sys/kernel/printk
echo "NUGO-VM-START kernel \$(uname -r), \$(nproc) CPUs, expecting $nodes NUMA nodes with CPUs; the rehearsal"
fail() { echo "NUGO-STEP the guest cannot set up the rehearsal: \$*"; sleep 1; poweroff -f; }
for m in ${loads[*]-}; do insmod /nugo/modules/\$m || fail "insmod \$m"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot /host || fail "mount 9p hostroot"
mount -t tmpfs -o size=80% tmpfs /rw || fail "mount tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot || fail "mount overlay"
mount -t proc proc /newroot/proc && mount -t sysfs sysfs /newroot/sys && mount -t devtmpfs devtmpfs /newroot/dev ||
  fail "mount proc, sysfs, devtmpfs in the new root"
mkdir -p /newroot/dev/shm /newroot/dev/pts /newroot/nugo-out
mount -t tmpfs tmpfs /newroot/dev/shm
# What udev would make: bash's process substitution (reproduce.sh's log) opens /dev/fd/N.
ln -s /proc/self/fd /newroot/dev/fd
ln -s /proc/self/fd/0 /newroot/dev/stdin
ln -s /proc/self/fd/1 /newroot/dev/stdout
ln -s /proc/self/fd/2 /newroot/dev/stderr
# This machine's container markers are not the guest's: systemd-detect-virt would report them.
rm -f /newroot/.dockerenv /newroot/run/.containerenv
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 out /newroot/nugo-out || fail "mount 9p out"
chroot /newroot /bin/bash /nugo-out/rehearse.sh
sync
umount /newroot/nugo-out
sleep 1
poweroff -f
INIT
else
cat >"$rootfs/init" <<INIT
#!/bin/sh
# nugo numa-check guest: mounts, runs the checks, powers off.
export PATH=/bin LD_LIBRARY_PATH=${libdirs%:} TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1
echo 4 4 1 7 >/proc/sys/kernel/printk
echo "NUGO-VM-START kernel \$(uname -r), \$(nproc) CPUs, expecting $nodes NUMA nodes with CPUs$([ "$memory_node" = 1 ] && echo " and a memory-only node $nodes")"
sh /nugo/checks.sh --expect /nugo/expect ${run_args[*]}
sleep 1
poweroff -f
INIT
fi
chmod +x "$rootfs/init" "$rootfs/nugo/checks.sh"
(cd "$rootfs" && find . | "${cpio[@]}" 2>"$work/cpio.err" | gzip -1 >"$work/initramfs.gz") ||
  die "cpio failed: $(cat "$work/cpio.err")"
if [ "$reproduce" = 1 ]; then
  echo "$me: initramfs $(du -k "$work/initramfs.gz" | cut -f1) KiB: busybox and the modules ${loads[*]-(all built in)}"
else
  echo "$me: initramfs $(du -k "$work/initramfs.gz" | cut -f1) KiB: busybox, ${programs[*]##*/}, $(find "$rootfs" -name '*.so*' | wc -l) libraries"
fi

suffix=""
[ "$memory_node" = 1 ] && suffix=-memory-node
[ "$reproduce" = 1 ] && suffix=-rehearsal
[ -n "$log" ] || { mkdir -p "$build/numa-check"; log=$build/numa-check/vm-$nodes$suffix.log; }
mkdir -p "$(dirname "$log")"
cmd=("$qemu" -accel tcg -nographic -no-reboot -nodefaults -serial mon:stdio
     -M pc -cpu max -smp "$cpus,sockets=$nodes,cores=2,threads=1" -m "$(((nodes + memory_node) * node_mem))M"
     "${numa_args[@]}"
     -kernel "$kernel" -initrd "$work/initramfs.gz"
     -append "console=ttyS0 panic=-1 rdinit=/init${append:+ $append}")
if [ "$reproduce" = 1 ]; then
  cmd+=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
        -virtfs "local,path=$rehearsal_out,mount_tag=out,security_model=none,multidevs=remap")
fi
echo "$me: ${cmd[*]}"
echo "$me: booting a $nodes-node guest ($cpus CPUs, $(basename "$kernel"), time limit $limit s), console log $log"
report_progress() {
  if [ "$said_kernel" = 0 ] && grep -aq 'Linux version' "$log"; then
    said_kernel=1; echo "  [$(since "$start") s] kernel started"
  fi
  if [ "$said_init" = 0 ] && grep -aq '^NUGO-VM-START' "$log"; then
    said_init=1; echo "  [$(since "$start") s] /init started: $(grep -a -m1 '^NUGO-VM-START' "$log" | tr -d '\r')"
  fi
  if [ "$console" = 1 ]; then
    local total; total=$(wc -l <"$log")
    [ "$total" -gt "$shown" ] && sed -n "$((shown + 1)),${total}p" "$log" | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g; s/^/  | /'
    shown=$total
  else
    local lines; lines=$(grep -acE '^NUGO-(CHECK|STEP)' "$log" || true)
    [ "$lines" -gt "$shown" ] && grep -aE '^NUGO-(CHECK|STEP)' "$log" | tr -d '\r' | sed -n "$((shown + 1)),${lines}p" |
      sed "s/^/  [$(since "$start") s] /"
    shown=$lines
  fi
}
# A guest whose kernel hangs before /init (under TCG on a busy host: a soft lockup in its own
# boot, seen once in CI) ran nothing of nugo's: it is booted once more. Any later failure
# counts.
for attempt in 1 2; do
  start=$(now)
  timeout -k 5 "$limit" "${cmd[@]}" </dev/null >"$log" 2>&1 &
  qemu_pid=$!
  shown=0
  said_kernel=0
  said_init=0
  while kill -0 "$qemu_pid" 2>/dev/null; do
    sleep 1
    report_progress
  done
  rc=0
  wait "$qemu_pid" || rc=$?
  qemu_pid=""
  report_progress
  elapsed=$(since "$start")
  if [ "$attempt" = 1 ] && [ "$said_init" = 0 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } &&
     ! grep -aq 'Kernel panic' "$log"; then
    echo "$me: the guest's kernel did not reach /init within $limit s; booting it once more" >&2
    tail -n 5 "$log" | tr -d '\r' | sed 's/^/  | /' >&2
    continue
  fi
  break
done
tail20() { echo "$me: the last 20 console lines:" >&2; tail -n 20 "$log" | tr -d '\r' | sed 's/^/  | /' >&2; }
done_line=NUGO-CHECK-DONE
[ "$reproduce" = 1 ] && done_line=NUGO-REHEARSAL-DONE
summary=$(grep -a "^$done_line" "$log" | tr -d '\r' | tail -n 1 || true)
if grep -aq 'Kernel panic' "$log"; then
  echo "$me: the guest's kernel panicked after $elapsed s: $(grep -a -m1 'Kernel panic' "$log" | tr -d '\r')" >&2
  tail20; exit 1
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  if [ -n "$summary" ]; then
    echo "$me: the guest finished its checks but did not power off within $limit s" >&2
  elif [ "$said_init" = 1 ]; then
    echo "$me: the guest booted but its checks did not finish within $limit s" >&2
  elif [ "$said_kernel" = 1 ]; then
    echo "$me: the guest's kernel started but did not reach /init within $limit s" >&2
  else
    echo "$me: the guest did not boot within $limit s" >&2
  fi
  tail20; exit 1
fi
if [ "$rc" -ne 0 ]; then
  echo "$me: QEMU failed with exit status $rc after $elapsed s" >&2; tail20; exit 1
fi
if [ -z "$summary" ]; then
  echo "$me: the guest stopped after $elapsed s without the $done_line line" >&2; tail20; exit 1
fi
if [ "$reproduce" = 1 ]; then
  echo "$me: the rehearsal in the $nodes-node guest ran in $elapsed s; its results: $rehearsal_out"
  /usr/bin/python3 "$root/scripts/check/rehearsal_check.py" "$rehearsal_out" --expect "$work/expect" \
    --masked-nodes "$masked_nodes" --only "$rehearsal_only" --build-dir "$build" | tee "$rehearsal_out/checks.txt" || true
  summary=$(grep -a '^NUGO-CHECK-DONE' "$rehearsal_out/checks.txt" | tail -n 1 || true)
  [ -n "$summary" ] || die "scripts/check/rehearsal_check.py ended without a summary line"
fi
echo "$me: the $nodes-node guest ran in $elapsed s: $summary"
[[ "$summary" =~ passed=([0-9]+)\ failed=([0-9]+) ]] || die "malformed summary line: $summary"
if [ "${BASH_REMATCH[2]}" -eq 0 ] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
  echo "$me: PASS: ${BASH_REMATCH[1]} checks passed"; exit 0
fi
echo "$me: FAIL: ${BASH_REMATCH[2]} of $((BASH_REMATCH[1] + BASH_REMATCH[2])) checks failed (console log $log)" >&2
exit 1
