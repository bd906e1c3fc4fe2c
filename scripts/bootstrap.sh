#!/usr/bin/env bash
# Installs the Debian packages nugo's build needs, only those missing. Idempotent.
#   scripts/bootstrap.sh              the build and the tests (the real-library tests' SQLite,
#                                     zstd, OpenSSL, LevelDB, jemalloc, tcmalloc, mimalloc too,
#                                     and Chromium, in which the report's test opens index.html)
#   scripts/bootstrap.sh --baselines  also Go 1.19, Boost.Fiber, oneTBB (with libtbbbind, for its
#                                     NUMA arenas) and wrk, for the baseline twins (GCC's
#                                     OpenMP comes with g++)
#   scripts/bootstrap.sh --vm         also QEMU, Debian's kernel and busybox, for
#                                     scripts/dev/numa-check.sh --vm (a real multi-node kernel)
#   scripts/bootstrap.sh --checks     also clang (with libFuzzer) and SPIN, for the lock rules
#                                     clang checks (scripts/test.sh --thread-safety), the
#                                     fuzzer (scripts/dev/fuzz.sh) and the protocol models
#                                     (scripts/dev/models.sh)
#   scripts/bootstrap.sh --paper      also TeX (latexmk and the LaTeX base), for paper/paper.pdf
# Runs apt-get as root, or through sudo.
set -euo pipefail

usage() { echo "usage: scripts/bootstrap.sh [--baselines] [--vm] [--checks] [--paper]" >&2; exit 2; }

packages=(cmake ninja-build g++ pkg-config libhwloc-dev libnuma-dev libboost-context-dev
          catch2 libbenchmark-dev hwloc numactl python3 python3-matplotlib python3-numpy python3-tabulate
          # the real-library tests (tests/libraries.cpp): libraries and allocators people link
          libsqlite3-dev libzstd-dev libssl-dev libleveldb-dev libjemalloc-dev
          libgoogle-perftools-dev libmimalloc-dev
          # a real browser for the run's report (tests/report_test.sh)
          chromium)
for arg in "$@"; do
  case "$arg" in
    --baselines) packages+=(golang-go libboost-fiber-dev libtbb-dev libtbbbind-2-5 wrk) ;;
    --vm) packages+=(qemu-system-x86 linux-image-amd64 busybox-static cpio) ;;
    --checks) packages+=(clang libclang-rt-14-dev spin) ;;
    --paper) packages+=(latexmk texlive-latex-base texlive-latex-recommended texlive-fonts-recommended
                        texlive-publishers texlive-pictures) ;;  # acmart; TikZ for the design figure
    -h|--help) usage ;;
    *) echo "bootstrap.sh: unknown argument '$arg'" >&2; usage ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "bootstrap.sh: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
echo "bootstrap.sh: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
