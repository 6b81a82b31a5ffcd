#!/usr/bin/env bash
# The test of scripts/bench_bundle.sh: packs BUILD_DIR's benchmarks into a temporary folder and
# checks that every program and library there finds each library it links inside the bundle
# (the C library's own excepted), that run.sh's smoke run works in an empty environment, and
# that a wrong build folder, an output folder that is not a bundle (left as it was) and an
# unknown benchmark name are refused with status 2, and that an earlier bundle is replaced.
#   bench/check_bundle.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$src/scripts/bench_bundle.sh" "$build" "$tmp/b" || { echo "FAIL: bench_bundle.sh failed"; exit 1; }
libc='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
elves=0
for f in "$tmp"/b/bin/* "$tmp"/b/lib/*; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  elves=$((elves + 1))
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $name =~ $libc ]] && continue
    case "$path" in
      "$tmp/b/lib/"*) ;;
      *) fail "$(basename "$f") takes $name from $path, not from the bundle" ;;
    esac
  done < <(LD_LIBRARY_PATH="$tmp/b/lib" ldd "$f" 2>&1)
done
[ "$elves" -ge 10 ] || fail "only $elves programs and libraries in the bundle"
for p in sonde bench_scale bench_callgraph bench_emit bench_discard; do
  [ -x "$tmp/b/bin/$p" ] || fail "bin/$p is missing"
done
[ -f "$tmp/b/data/gzip-gpl3.lackey.zst" ] || fail "data/gzip-gpl3.lackey.zst is missing"

env -i PATH=/usr/bin:/bin HOME="$tmp" RESULTS_DIR="$tmp/res" "$tmp/b/run.sh" smoke > "$tmp/smoke.txt" 2>&1 ||
  { cat "$tmp/smoke.txt"; fail "run.sh smoke failed"; }
grep -q "^sonde 1\." "$tmp/res/smoke-version.txt" 2>/dev/null || fail "smoke: sonde --version"
grep -q "distinct lines" "$tmp/res/smoke-analyze.txt" 2>/dev/null || fail "smoke: sonde analyze"
grep -q "^sonde record" "$tmp/res/smoke-callgraph.txt" 2>/dev/null || fail "smoke: bench_callgraph"

"$src/scripts/bench_bundle.sh" "$tmp/nowhere" "$tmp/c" > "$tmp/err.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "not a meson build directory" "$tmp/err.txt" || fail "a wrong build folder: status $rc, $(cat "$tmp/err.txt")"
mkdir "$tmp/keep" && echo data > "$tmp/keep/file"
"$src/scripts/bench_bundle.sh" "$build" "$tmp/keep" > "$tmp/err.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && [ -f "$tmp/keep/file" ] && grep -q "is not a bundle" "$tmp/err.txt" ||
  fail "a folder that is not a bundle: status $rc, $(cat "$tmp/err.txt")"
"$src/scripts/bench_bundle.sh" "$build" "$tmp/b" > "$tmp/again.txt" 2>&1 || fail "packing over an earlier bundle failed"
"$tmp/b/run.sh" nosuch > "$tmp/err.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "unknown benchmark 'nosuch'" "$tmp/err.txt" || fail "an unknown benchmark: status $rc"

echo "$elves programs and libraries checked, $failures failure(s)"
[ "$failures" -eq 0 ]
