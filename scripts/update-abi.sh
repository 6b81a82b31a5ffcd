#!/usr/bin/env bash
# Regenerates abi/libsonde.abi, the baseline that tests/abi's abidiff test compares against.
# Run it only when a release adds to the ABI (a new SONDE_1.x node); never to hide a break.
# The baseline comes from the default build type (debugoptimized: debug info is needed).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
meson setup "$dir/build" -Dtests=false -Dbench=false -Ddocs=disabled >/dev/null
ninja -C "$dir/build" >/dev/null
lib=$(readlink -f "$dir/build/libsonde.so.1")
abidw --no-corpus-path --headers-dir include/sonde --out-file abi/libsonde.abi "$lib"
echo "abi/libsonde.abi updated"
