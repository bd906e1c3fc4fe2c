#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds and runs tests/install_consumer against
# it with find_package(nugo): the installed CMake package must be usable from outside.
set -euo pipefail
build=$1 source=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source/tests/install_consumer" -B "$scratch/consumer" -G Ninja \
      -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/consumer" >/dev/null
NUGO_PROCS=2 "$scratch/consumer/consumer" | grep -qx "sum=5050"
echo "installed package works"
