#!/usr/bin/env bash
# The walls between core/src's rooms (core/README.md, "The rooms"), as far as the compiler
# cannot see them. Each room's object library has only the include directories of the rooms
# it may see, so `#include "sched.hpp"` in lib/ does not compile. A path relative to the file
# gets past that; this test allows exactly the relative includes the design has and fails on
# any other, naming the file and the line.
#
#   sched/ headers may include obs/ headers (../obs/...)
#   lib/ reaches the scheduler through link.hpp alone
#   obs/ includes no scheduler header, nor do numa/plan (below the scheduler) and numa/src
#   (nugo::numa: on base's node view, and the public API)
#
# Then the closure, with the compiler's own dependency list (-MM): a lib/ file, and numa's
# allocator, compiled with their room's include path must reach no scheduler header but
# link.hpp and no obs/ header, through any chain of includes (link.hpp is the seam: what it
# includes, they see); an obs/ file must reach no scheduler header at all (what obs needs of
# the scheduler it declares in obs/views.hpp, and the scheduler defines).
#
# usage: tests/walls_test.sh [SOURCE_DIR [CXX]]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cxx=${2:-${CXX:-g++}}
cd "$root"
status=0
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  include=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$rest")
  case "$file:$include" in
    core/src/sched/*.hpp:../obs/*.hpp) ;;
    core/src/lib/*.cpp:../sched/link.hpp) ;;
    *)
      echo "walls_test: $file:$line includes \"$include\", across a wall of core/src's rooms" >&2
      status=1 ;;
  esac
done < <(grep -rnE '#include "\.\./' core/src numa/src numa/plan || true)
# Every file of core/src sits in a room.
for f in core/src/*; do
  [ -d "$f" ] || { echo "walls_test: $f is outside every room (base, vtime, sched, lib, obs)" >&2; status=1; }
done
for d in core/src/*/; do
  case "$(basename "$d")" in
    base|vtime|sched|lib|obs) ;;
    *) echo "walls_test: $d is not a room of core/README.md" >&2; status=1 ;;
  esac
done
# base/ includes only base/ headers: its include path has nothing else, and the relative
# includes above are the only way around that.
# The headers the scheduler includes from below or beside it are leaves with respect to it:
# obs/'s recording headers and numa/src's plan and memory name no scheduler header, so the
# arrows between files point one way (sched -> obs/*.hpp, obs/*.cpp -> sched) although the
# two folders see each other.
for h in core/src/obs/*.hpp numa/src/*.hpp numa/plan/*.hpp; do
  while IFS= read -r inc; do
    if [ -e "core/src/sched/$inc" ]; then
      echo "walls_test: $h includes the scheduler's \"$inc\": the headers the scheduler includes must not include it back" >&2
      status=1
    fi
  done < <(sed -nE 's/^#include "([^"]+)".*/\1/p' "$h")
done
# The closure of what library code, obs, numa and vtime include.
public="-Icore/src/vtime -Icore/include -Inuma/include -Itopology/include"
for f in core/src/lib/*.cpp core/src/obs/*.cpp core/src/obs/*.hpp numa/src/*.cpp numa/plan/*.cpp core/src/vtime/*.cpp core/src/vtime/*.hpp; do
  case "$f" in
    core/src/lib/*) flags="-Icore/src/lib -Icore/src/base $public" ;;
    numa/src/*) flags="-Inuma/src -Icore/src/base $public" ;;
    numa/plan/*) flags="-Inuma/plan -Icore/src/base $public" ;;
    core/src/obs/*) flags="-Icore/src/obs -Icore/src/base $public -DNUGO_BACKTRACE_H=<cstddef>" ;;
    core/src/vtime/*) flags="$public -DNUGO_VIRTUAL_TIME=1" ;;
  esac
  deps=$("$cxx" -std=c++20 -MM $flags "$f" | tr ' \\' '\n\n' | sed '/^$/d' | tail -n +2) ||
    { echo "walls_test: $cxx -MM $f failed" >&2; status=1; continue; }
  for d in $deps; do
    rel=$(realpath --relative-to="$root" "$d")
    case "$f:$rel" in
      core/src/obs/*:core/src/sched/*)
        echo "walls_test: $f sees $rel through its includes: obs declares what it needs of the scheduler in core/src/obs/views.hpp and includes no scheduler header" >&2
        status=1 ;;
      numa/*:core/src/sched/* | numa/*:core/src/obs/*)
        echo "walls_test: $f sees $rel through its includes: numa's plan lies below the scheduler and its allocator beside lib/, on base alone" >&2
        status=1 ;;
      core/src/vtime/*:core/src/vtime/*) ;;
      core/src/vtime/*:core/src/*)
        echo "walls_test: $f sees $rel through its includes: vtime/ is the ground floor and includes nothing of core/src" >&2
        status=1 ;;
      core/src/obs/*:* | numa/*:* | core/src/vtime/*:*) ;;
      *:core/src/sched/link.hpp) ;;
      *:core/src/sched/* | *:core/src/obs/*)
        echo "walls_test: $f sees $rel through its includes: library code reaches the scheduler through core/src/sched/link.hpp alone, and link.hpp must include nothing of the scheduler's" >&2
        status=1 ;;
    esac
  done
done
[ "$status" -eq 0 ] && echo "walls_test: every include across a wall goes where the design allows"
exit "$status"
