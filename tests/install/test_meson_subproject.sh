#!/usr/bin/env bash
# A meson project that has Sonde as a subproject gets it with dependency('sonde') (the
# subproject's meson.override_dependency), without Sonde's tests, examples and benchmarks, and
# builds and runs a program against it (without debug information: only building and linking
# are checked, and the library is compiled once more).
set -euo pipefail
src=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
mkdir -p "$dest/parent/subprojects"
ln -s "$src" "$dest/parent/subprojects/sonde"
cp "$src/examples/consumer.c" "$dest/parent/"
cat > "$dest/parent/meson.build" <<'MESON'
project('parent', 'c', default_options : ['c_std=c11'])
subproject('sonde', default_options : ['tests=false', 'examples=false', 'bench=false', 'docs=disabled'])
sonde = dependency('sonde')
executable('consumer', 'consumer.c', dependencies : sonde)
MESON
meson setup -Ddebug=false "$dest/build" "$dest/parent" >"$dest/setup.log" 2>&1 || { cat "$dest/setup.log"; exit 1; }
# Only the program and what it needs (libsonde): the test stays short.
ninja -C "$dest/build" -j "${SONDE_JOBS:-2}" consumer >"$dest/ninja.log" 2>&1 || { tail -30 "$dest/ninja.log"; exit 1; }
"$dest/build/consumer" | grep -q "buffer stats" || { echo "the consumer built in the parent project did not run"; exit 1; }
# Sonde's own tests, examples and benchmarks are not even configured.
if ninja -C "$dest/build" -t targets all | grep -Eq '(^|/)(tests|examples|bench)/'; then
  echo "the subproject configured its tests, examples or benchmarks"; exit 1
fi
echo "1 passed, 0 failed"
