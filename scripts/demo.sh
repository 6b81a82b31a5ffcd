#!/usr/bin/env bash
# Demo: installs missing Debian packages (as root), builds Sonde, then runs the example
# consumer: a session, four threads emitting, the callback's view and the buffer statistics.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
sonde_install_deps
if [ -d build ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
ninja -C build >/dev/null

echo "== Sessions and buffers: examples/consumer.c"
build/examples/consumer
