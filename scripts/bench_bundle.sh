#!/usr/bin/env bash
# Packs the benchmarks of a build into one folder that runs on another x86-64 Linux machine
# without Sonde's build dependencies: a server with many cores but no compiler, no Debian
# packages or no network, where bench/scale's figures are wanted (docs/performance.md,
# "Measuring on another machine").
#
#   scripts/bench_bundle.sh [BUILD_DIR] [OUT_DIR]     (defaults: the source tree's build/, ./sonde-bench)
#   OUT_DIR/run.sh [scale|quick|producers|reuse|shards|json|callgraph|emit|discard|all|smoke]...   there
#
# OUT_DIR holds bin/ (the `sonde` command and every bench program of BUILD_DIR), lib/ (libsonde,
# libsonde-instrument, the example clients the benches load, libzip, which libsonde loads for
# .zip inputs, every shared library these link except the C library's own, found with ldd, and,
# when the build has MPI, the module `sonde analyze --mpi` loads, in lib/<libdir>/sonde), data/ (tests/data: the gzip lackey trace and the
# other inputs the benches read), uftrace/ (uftrace and its libmcount, when uftrace is
# installed: the anchor of bench/callgraph) and run.sh, which points the benches at them
# (LD_LIBRARY_PATH, SONDE_BENCH_SONDE, SONDE_BENCH_SORT, SONDE_SHARED_DATA,
# SONDE_INSTRUMENT_LIBRARY) and writes each figure table to results/NAME.txt as well as stdout.
# Debug information is stripped from the copies. The other machine needs a C library at least
# as new as this one's (glibc 2.36 on Debian 12). Any failure stops the script.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}  # BUILD_DIR and OUT_DIR as given: relative to the current directory
out=${2:-sonde-bench}
[ -f "$build/build.ninja" ] || { echo "bench_bundle: $build is not a meson build directory" >&2; exit 2; }
[ -x "$build/src/cli/sonde" ] || { echo "bench_bundle: $build/src/cli/sonde is missing (run ninja -C $build)" >&2; exit 2; }
[ -d "$build/bench" ] || { echo "bench_bundle: $build was configured with -Dbench=false" >&2; exit 2; }
# A folder that is there already is replaced only when it is an earlier bundle.
if [ -e "$out" ] && { [ ! -d "$out" ] || [ -n "$(ls -A "$out")" ]; } && [ ! -f "$out/run.sh" ]; then
  echo "bench_bundle: $out exists and is not a bundle; give another folder" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/data"

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# Programs: the command and every bench executable (not the object folders, not scripts).
cp "$build/src/cli/sonde" "$out/bin/"
while IFS= read -r f; do
  if is_elf "$f" && [ -x "$f" ]; then
    case "$f" in *.so | *.so.*) cp "$f" "$out/lib/" ;; *) cp "$f" "$out/bin/" ;; esac
  fi
done < <(find "$build/bench" -type f \( -perm -u+x -o -name '*.so' \) -not -path '*.p/*')
# Libraries of the build: libsonde by its soname, the instrumentation library, the clients.
cp "$build/libsonde.so.1" "$out/lib/libsonde.so.1"
cp "$build/src/instrument/libsonde-instrument.so" "$out/lib/"
for c in call_counter class_filter; do
  if [ -f "$build/examples/$c.so" ]; then cp "$build/examples/$c.so" "$out/lib/"; fi
done
cp -r "$src/tests/data/." "$out/data/"
# The MPI module that `sonde analyze --mpi` loads, where the copied program looks for it
# (bin/../<libdir>/sonde), when the build has MPI.
mpi_module=
if [ -f "$build/src/mpi/sonde-mpi.so" ]; then
  libdir=$(meson introspect "$build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
  mkdir -p "$out/$libdir/sonde"
  mpi_module="$out/$libdir/sonde/sonde-mpi.so"
  cp "$build/src/mpi/sonde-mpi.so" "$mpi_module"
fi
# libzip, which libsonde loads when a drmemtrace .zip is opened (not in ldd's list). awk reads
# the whole list: stopping at the first match could end ldconfig by SIGPIPE, which pipefail
# makes this script's failure.
libzip=$(ldconfig -p | awk '/libzip\.so\.[0-9]+ .*x86-64/ && !found {print $NF; found = 1}')
if [ -n "$libzip" ]; then cp -L "$libzip" "$out/lib/$(basename "$libzip")"; fi

# Every shared library the copies link (uftrace's too, copied below), except the C library's:
# the other machine has its own, and a copied one would not match its loader. Resolved against
# the bundle first, so a library of the build is never taken from the system.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
collect() {
  local added=1
  while [ $added -eq 1 ]; do
    added=0
    for f in "$out"/bin/* "$out"/lib/* "$out"/uftrace/libexec/* "$out"/uftrace/mcount/* $mpi_module; do
      [ -f "$f" ] && is_elf "$f" || continue
      while read -r name arrow path _; do
        [ "$arrow" = "=>" ] || continue
        [[ $name =~ $skip ]] && continue
        if [ "$path" = "not" ]; then
          echo "bench_bundle: $(basename "$f") needs $name, which is not installed here" >&2
          exit 1
        fi
        if [ ! -e "$out/lib/$name" ]; then
          cp -L "$path" "$out/lib/$name"
          added=1
        fi
      done < <(LD_LIBRARY_PATH="$out/lib" ldd "$f" 2>/dev/null || true)
    done
  done
}

# uftrace, the anchor of bench/callgraph: its binary, its libmcount variants and a wrapper that
# tells it where they are.
if command -v uftrace >/dev/null; then
  mkdir -p "$out/uftrace/libexec" "$out/uftrace/mcount"
  cp "$(command -v uftrace)" "$out/uftrace/libexec/uftrace"
  for d in /usr/lib/x86_64-linux-gnu/uftrace /usr/lib/uftrace /usr/local/lib/uftrace; do
    [ -d "$d" ] && cp "$d"/libmcount*.so "$out/uftrace/mcount/" 2>/dev/null || true
  done
  cat > "$out/uftrace/uftrace" <<'EOF'
#!/bin/sh
# uftrace with the libmcount libraries of this bundle.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/libexec/uftrace" --libmcount-path="$here/mcount" "$@"
EOF
  chmod +x "$out/uftrace/uftrace"
fi
collect

for f in "$out"/bin/* "$out"/lib/* "$out"/uftrace/libexec/* "$out"/uftrace/mcount/* $mpi_module; do
  [ -f "$f" ] && is_elf "$f" && { chmod u+w "$f"; strip --strip-debug "$f" 2>/dev/null || true; }
done

cat > "$out/run.sh" <<'EOF'
#!/bin/sh
# Runs the benchmarks of this bundle (scripts/bench_bundle.sh) on this machine.
#   run.sh [scale|quick|producers|reuse|shards|json|callgraph|emit|discard|all|smoke]...   (default: all)
# scale: bench_scale, every case; quick: every case on a quarter of the work; producers,
# shards, reuse, json: its cases 1-3, 4, 5a-5f and 5g alone (each a part of a machine's time);
# callgraph: bench_callgraph (fib(32), 11 rounds; uftrace is the anchor when bundled); emit and
# discard: bench_emit and bench_discard; all: scale, callgraph, emit, discard; smoke: a quick
# check that the bundle runs here. Each output is also written to results/NAME.txt (RESULTS_DIR
# sets the folder).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SONDE_BENCH_SONDE="$here/bin/sonde" SONDE_SHARED_DATA="$here/data"
export SONDE_INSTRUMENT_LIBRARY="$here/lib/libsonde-instrument.so"
if [ -x "$here/bin/bench_scale_sort" ]; then export SONDE_BENCH_SORT="$here/bin/bench_scale_sort"; fi
if [ -x "$here/uftrace/uftrace" ]; then export PATH="$here/uftrace:$PATH"; fi
results=${RESULTS_DIR:-$here/results}
mkdir -p "$results"
b="$here/bin"
callgraph() {
  "$b/bench_callgraph" "$b/bench_fib_plain" "$b/bench_fib_instrumented" "$here/lib/libsonde-instrument.so" \
    "$here/lib/call_counter.so" "$here/lib/class_filter.so" "$@"
}
run() {  # name, command...
  name=$1; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$results/$name.txt"
}
[ $# -gt 0 ] || set -- all
for what in "$@"; do
  case $what in
    scale) run scale "$b/bench_scale" ;;
    producers|reuse|shards|json|quick) run "scale-$what" env SONDE_BENCH_SCALE="$what" "$b/bench_scale" ;;
    callgraph) run callgraph callgraph ;;
    emit) run emit "$b/bench_emit" ;;
    discard) run discard "$b/bench_discard" ;;
    all) "$0" scale callgraph emit discard ;;
    smoke)
      run smoke-version "$b/sonde" --version
      run smoke-analyze "$b/sonde" analyze "$here/data/gzip-gpl3.lackey.zst" --tool basic_counts --jobs 2
      run smoke-callgraph callgraph 20 1 ;;
    *) echo "run.sh: unknown benchmark '$what' (scale, quick, producers, reuse, shards, json, callgraph, emit, discard, all, smoke)" >&2
       exit 2 ;;
  esac
done
EOF
chmod +x "$out/run.sh"
echo "bench_bundle: $out ($(du -sh "$out" | cut -f1)): copy it to the other machine and run $out/run.sh"
