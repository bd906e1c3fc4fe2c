#!/usr/bin/env bash
# Bootstraps, configures, builds and runs the whole test suite with ctest.
#   scripts/test.sh                      RelWithDebInfo build in build/
#   scripts/test.sh --sanitize=address   ASan + UBSan build in build-address/
#   scripts/test.sh --sanitize=thread    TSan build in build-thread/ (the tests TSan can run:
#                                        tests/CMakeLists.txt says which and why)
#   scripts/test.sh --thread-safety      clang build of the runtime in build-clang/ with its lock
#                                        rules as errors (-Wthread-safety, core/src/base/tsa.hpp)
#   scripts/test.sh --build-type=TYPE    the suite in another CMake build type (Debug, Release,
#                                        MinSizeRel) in build-TYPE/; Release is what
#                                        reproduce.sh and most library users build
#   scripts/test.sh --virtual            the virtual-time build (Release, -DNUGO_VIRTUAL_TIME=ON)
#                                        in build-virtual/, and its tests (label virtual: the
#                                        mode's own, and the scheduler suites in virtual time)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: scripts/test.sh [--sanitize=address|thread | --thread-safety | --virtual | --build-type=TYPE]" >&2; exit 2; }

sanitize=""
thread_safety=""
virtual=""
build_type=RelWithDebInfo
for arg in "$@"; do
  case "$arg" in
    --build-type=Debug|--build-type=Release|--build-type=RelWithDebInfo|--build-type=MinSizeRel)
      build_type=${arg#--build-type=} ;;
    --build-type=*) echo "test.sh: unknown build type '${arg#--build-type=}' (Debug, Release, RelWithDebInfo, MinSizeRel)" >&2; exit 2 ;;
    --thread-safety) thread_safety=1 ;;
    --virtual) virtual=1 ;;
    --sanitize=address) sanitize=address ;;
    --sanitize=thread) sanitize=thread ;;
    --sanitize=*) echo "test.sh: unsupported sanitizer '${arg#--sanitize=}' (supported: address, thread)" >&2; exit 2 ;;
    -h|--help) usage ;;
    *) echo "test.sh: unknown argument '$arg'" >&2; usage ;;
  esac
done

if [ -n "$thread_safety" ]; then
  # The annotations are on the runtime's locks and lists (core/); compiling it is the check.
  bash scripts/bootstrap.sh --checks
  CC=clang CXX=clang++ cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE="$build_type" \
    -DNUGO_THREAD_SAFETY=ON -DNUGO_BUILD_TESTS=OFF -DNUGO_BUILD_EXPERIMENTS=OFF
  cmake --build build-clang -j "$(nproc)" --target nugo_core
  echo "test.sh: the runtime's lock rules hold (clang -Wthread-safety)"
  exit 0
fi

bash scripts/bootstrap.sh

if [ -n "$virtual" ]; then
  [ -n "$sanitize" ] && { echo "test.sh: --virtual with a sanitizer is not a configuration CI runs" >&2; exit 2; }
  cmake -S . -B build-virtual -G Ninja -DCMAKE_BUILD_TYPE=Release -DNUGO_VIRTUAL_TIME=ON
  cmake --build build-virtual -j "$(nproc)"
  ctest --test-dir build-virtual --output-on-failure -j "$(nproc)" -L virtual
  exit 0
fi

build=build
[ "$build_type" != RelWithDebInfo ] && build=build-$build_type
[ -n "$sanitize" ] && build=build-$sanitize
[ -n "$sanitize" ] && [ "$build_type" != RelWithDebInfo ] && build=build-$sanitize-$build_type
jobs=$(nproc)

# The sanitizer build runs the tests only; benchmarks under ASan would measure ASan.
experiments=ON
[ -n "$sanitize" ] && experiments=OFF
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DNUGO_SANITIZE="$sanitize" \
      -DNUGO_BUILD_EXPERIMENTS="$experiments"
cmake --build "$build" -j "$jobs"

if [ -n "$sanitize" ]; then
  # Leak checking stays on; hwloc's own known leak on a failed XML load is suppressed.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # TSan: every report fails its test (exit 66); suppressions, each justified, in tests/tsan.supp.
  export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:second_deadlock_stack=1:halt_on_error=0:exitcode=66"
fi
filter=()
# TSan runs the scheduler suite at 2 Ps and on 2 emulated nodes, not also at 1 and 8 Ps and on
# 4 nodes: the same tests again, at TSan's 5-15x cost, would double CI's time for little.
[ "$sanitize" = thread ] && filter=(-E 'NUGO_PROCS=1\)|NUGO_PROCS=8\)|4nodes')
ctest --test-dir "$build" --output-on-failure -j "$jobs" "${filter[@]}"
