#!/usr/bin/env bash
# Demo: installs missing Debian packages (as root), builds Sonde, then shows
#   1. sessions and buffers: four threads emitting, what the callback received, buffer stats;
#   2. trace analysis: a live session recorded to a Sonde trace, analysed by the built-in tools
#      and an external tool plugin; the real gzip trace through cachegrind's cache hierarchy and
#      through the exact reuse-distance tool (gem5 StackDistCalc semantics); DynamoRIO's own
#      drmemtrace test traces through drcachesim's categories, reuse distances and cache model;
#   3. client plugins on an instrumented program (installed clients given by name), then its
#      call graph recorded with `sonde record`, read back with Python ctypes, reported as text,
#      a call tree and an HTML page, and exported for Perfetto UI;
#   4. library calls of an uninstrumented program (zlib) traced with `sonde record --api`, and
#      observed by a client plugin with `sonde run --api`;
#   5. the loads and stores of a program built with clang's sanitizer coverage, recorded with
#      `sonde record --memory`, simulated through cachegrind's caches and annotated per function
#      and source line (`sonde annotate`), and analysed as it runs (`sonde analyze --live`); the
#      same sampled at the source (--sample-rate) for reuse distances.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
sonde_install_deps
sonde_install_npm
if [ -d build ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
ninja -C build >/dev/null
sonde=build/src/cli/sonde
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Runs a command (the demo stops if it fails) and shows the first N lines of its output; piping
# into head would end the command with SIGPIPE under pipefail once head has its lines.
show() {
  local n=$1
  shift
  "$@" >"$tmp/show.out"
  head -n "$n" "$tmp/show.out"
}

echo "== 1. Sessions and buffers: examples/consumer.c"
build/examples/consumer
echo "-- the same in pull mode, polled on the main thread: examples/poll_consumer.c"
build/examples/poll_consumer
if command -v node >/dev/null && [ -d node_modules/koffi ]; then
  echo "-- from Node (bindings/node over koffi), emitted and polled on the JavaScript thread"
  SONDE_LIBRARY="$PWD/build/libsonde.so.1" node -e '
    const sonde = require("./bindings/node");
    sonde.initialize();
    const session = new sonde.Session("demo");
    const buffer = session.createBuffer(1 << 20, { policy: "lossless" });
    session.start();
    for (let i = 0; i < 1000; ++i) buffer.emit(sonde.RecordKind.USER, `event ${i}`, true);
    const records = buffer.poll(100);
    console.log(`${records.length} records polled from JS, stats:`, buffer.stats());
    sonde.finalize();'
fi

echo
echo "== 2. Record a live session's memory references to a trace: examples/trace_record.c"
build/examples/trace_record "$tmp/demo.sonde"
"$sonde" dump "$tmp/demo.sonde" --limit 5   # its first records as text, one per line
echo
echo "== 3. Analyse it: built-in tools and the page_counts tool plugin (examples/tools/)"
"$sonde" analyze "$tmp/demo.sonde" --tool "basic_counts,cache_sim,$PWD/build/examples/page_counts.so" --json "$tmp/demo.json"
echo "(JSON results in $tmp/demo.json: $(wc -c < "$tmp/demo.json") bytes)"

data=tests/data/gzip-gpl3.lackey.zst
if [ -f "$data" ]; then
  echo
  echo "== 4. valgrind lackey trace of gzip, cachegrind's hierarchy (I1/D1 32K 8-way, LL 1M 16-way)"
  "$sonde" analyze "$data" --format lackey --cache I1:32K:8:64,D1:32K:8:64,LL:1M:16:64
  echo
  echo "== 5. The same trace: exact LRU reuse distances and the miss-ratio curve"
  "$sonde" analyze "$data" --format lackey --tool reuse_distance --line-size 64
  if command -v mpirun >/dev/null && ! "$sonde" analyze --mpi /dev/null 2>&1 | grep -q "has no MPI"; then
    echo
    echo "== 5b. The same, as two MPI ranks over the plain text: each reads its half of the bytes,"
    echo "       rank 0 merges (the same histogram); cache_sim's ranks split the sets and send each"
    echo "       reference to the rank that simulates it (the same counts as step 4); then SHARDS at"
    echo "       1% over the two ranks, which gives one process's estimate bit for bit"
    zstd -q -d -f "$data" -o "$tmp/gzip.lackey"
    mpirun --allow-run-as-root --oversubscribe -np 2 \
      "$sonde" analyze --mpi "$tmp/gzip.lackey" --format lackey --tool reuse_distance --line-size 64
    mpirun --allow-run-as-root --oversubscribe -np 2 \
      "$sonde" analyze --mpi "$tmp/gzip.lackey" --format lackey --cache I1:32K:8:64,D1:32K:8:64,LL:1M:16:64
    mpirun --allow-run-as-root --oversubscribe -np 2 \
      "$sonde" analyze --mpi "$tmp/gzip.lackey" --format lackey --tool reuse_distance --sample-rate 0.01
  fi
fi

dr=tests/data/drmemtrace
if [ -d "$dr" ]; then
  echo
  echo "== 6. A DynamoRIO drmemtrace trace (9 threads, zip chunks; tests/data/drmemtrace/core_serial):"
  echo "      drcachesim's basic_counts categories, then its reuse distances"
  show 5 "$sonde" analyze "$dr/core_serial/drmemtrace.threadsig.x64.tracedir" --tool basic_counts
  show 10 "$sonde" analyze "$dr/core_serial/drmemtrace.threadsig.x64.tracedir" --tool reuse_distance \
    --reuse-model drcachesim
  echo "   drcachesim's default cache simulator with -cpu_scheduling on its drcacheoff.cpu test trace"
  "$sonde" analyze "$dr/drcacheoff.cpu/drmemtrace.simple_app.trace.zip" --cache-model drcachesim
fi

echo
echo "== 7. Client plugins on a -finstrument-functions program (examples/clients/)"
"$sonde" run --client "call_counter=out=$tmp/calls.txt" \
  --client class_filter=class=geo::Circle -- build/examples/shapes 3
echo "calls per method (call_counter, first lines):"
head -n 5 "$tmp/calls.txt"

echo
echo "== 8. Record the call graph of the same program and read the trace back (docs/recording.md)"
"$sonde" record -o "$tmp/shapes.trace" -- build/examples/shapes 3
echo "calls per function, from the trace with Python ctypes (first lines):"
SONDE_LIBRARY=build/libsonde.so.1 show 5 python3 examples/python/sonde_trace.py "$tmp/shapes.trace"

echo
echo "== 9. Report it: functions by self time, the call tree, an HTML page and a chrome export"
show 8 "$sonde" report "$tmp/shapes.trace" --html "$tmp/shapes.html"
show 8 "$sonde" report "$tmp/shapes.trace" --tree --depth 3
"$sonde" export "$tmp/shapes.trace" --format chrome -o "$tmp/shapes.chrome.json"
echo "(open $tmp/shapes.html in a browser; load $tmp/shapes.chrome.json in Perfetto UI or speedscope)"

echo
echo "== 10. Trace zlib's functions in a program that is not instrumented (docs/api-tracing.md)"
cat > "$tmp/zlib.h" <<'EOF2'
typedef unsigned long uLong;
typedef unsigned int uInt;
typedef unsigned char Bytef;
uLong crc32(uLong crc, const Bytef *buf, uInt len);
int compress2(Bytef *dest, uLong *destLen, const Bytef *source, uLong sourceLen, int level);
int uncompress(Bytef *dest, uLong *destLen, const Bytef *source, uLong sourceLen);
EOF2
"$sonde" record -o "$tmp/zlib.trace" --api 'libz:crc32,compress2,uncompress' --api-prototypes "$tmp/zlib.h" \
  -- build/tests/apitrace/api_prog zlib 1000
show 6 "$sonde" report "$tmp/zlib.trace"
"$sonde" export "$tmp/zlib.trace" --format chrome -o "$tmp/zlib.chrome.json"
echo "the first two calls in the chrome export, with their arguments by name:"
grep -m 2 '"cat":"api:' "$tmp/zlib.chrome.json"
echo "the same calls as API_CALL events of a client plugin (api_logger), crc32 and uncompress only:"
"$sonde" run --api 'libz:crc32,compress2,uncompress' --api-prototypes "$tmp/zlib.h" \
  --client build/examples/api_logger.so=out="$tmp/zlib.calls.tsv",only=crc32:uncompress \
  -- build/tests/apitrace/api_prog zlib 1000 >/dev/null
grep -m 3 '^function' "$tmp/zlib.calls.tsv"
grep -m 2 '^leave' "$tmp/zlib.calls.tsv"
echo "($(grep -c '^leave' "$tmp/zlib.calls.tsv") calls observed)"
if command -v clang >/dev/null; then
  echo "== 11. Record a program's own loads and stores (docs/memory-traces.md)"
  clang -O1 -g -fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores -fno-sanitize-link-runtime \
    -o "$tmp/fill_sum" tests/memtrace/fill_sum.c \
    $(PKG_CONFIG_PATH="$PWD/build/meson-uninstalled" pkg-config --libs sonde-instrument) \
    -Wl,-rpath,"$PWD/build/src/instrument" -Wl,-rpath,"$PWD/build"
  "$sonde" record --memory -o "$tmp/fill_sum.trace" -- "$tmp/fill_sum"
  "$sonde" analyze "$tmp/fill_sum.trace" --tool basic_counts,cache_sim
  echo "== 11a. The same trace per function and source line, like cg_annotate (sonde annotate)"
  show 24 "$sonde" annotate "$tmp/fill_sum.trace" --limit 2
  echo "== 11b. The same program analysed as it runs, without a trace file (sonde analyze --live)"
  "$sonde" analyze --live --tool basic_counts,cache_sim -- "$tmp/fill_sum"
  echo "== 11b'. The same program per function and source line as it runs (sonde annotate --live)"
  show 12 "$sonde" annotate --live --limit 2 -- "$tmp/fill_sum"
  echo "== 11c. The same references sampled at the source (SHARDS, 1 line in 100): reuse distances"
  clang -O1 -fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores -fno-sanitize-link-runtime \
    -o "$tmp/mixed_reuse" tests/memtrace/mixed_reuse.c \
    $(PKG_CONFIG_PATH="$PWD/build/meson-uninstalled" pkg-config --libs sonde-instrument) \
    -Wl,-rpath,"$PWD/build/src/instrument" -Wl,-rpath,"$PWD/build"
  "$sonde" record --memory --sample-rate 0.01 -o "$tmp/mixed.trace" -- "$tmp/mixed_reuse" >/dev/null
  show 12 "$sonde" analyze "$tmp/mixed.trace" --tool reuse_distance
fi
