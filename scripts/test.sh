#!/usr/bin/env bash
# The whole suite: installs missing Debian packages (as root), speedscope and koffi (npm, into
# node_modules/), then builds and tests
#   build/        gcc, -Werror, every test (cmocka, Python, Node, ABI guards, examples)
#   build-asan/   gcc, AddressSanitizer + UndefinedBehaviorSanitizer, every C test
#   build-tsan/   gcc, ThreadSanitizer, the concurrency tests (suite 'stress'; only they are built)
#   build-clang/  clang, -Werror, libFuzzer targets run briefly (suite 'fuzz')
# The sanitizer builds are compiled at -O1 with line tables only (-g1), which symbolised
# reports need, in less than half the compile time of -O2 -g (the C++ files with CLI11 and
# nlohmann/json dominate it; a sanitizer build compiles the CLI's own files at -O0, see
# src/cli/meson.build); the clang build, which runs only the fuzz targets, at -O0 (its fuzz
# targets and their library at -O1, see tests/meson.build); the gcc build keeps -O2 -g: its
# library's full debug information is what abidiff checks the ABI with.
# Any failure stops the script with a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
sonde_install_deps
sonde_install_npm

JOBS=${SONDE_JOBS:-$(nproc)}
setup() {  # dir, options...
  local dir=$1; shift
  if [ -d "$dir" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null
  else meson setup "$dir" "$@" >/dev/null; fi
}
section() { printf '\n=== %s (%ds) ===\n' "$*" "$SECONDS"; }
LEAN=(-Doptimization=1 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1)

section "gcc -Werror: full suite"
setup build -Dwerror=true
ninja -C build -j "$JOBS"
meson test -C build --no-rebuild --print-errorlogs --num-processes "$JOBS"

section "AddressSanitizer + UBSan"
setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false "${LEAN[@]}"
ninja -C build-asan -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes "$JOBS" --no-suite abi

section "ThreadSanitizer: concurrency tests"
setup build-tsan -Dwerror=true -Db_sanitize=thread -Db_lundef=false -Dbench=false "${LEAN[@]}"
# Only what the suite needs: the library and the concurrency tests (scripts/suite_targets.py).
ninja -C build-tsan -j "$JOBS" $(python3 scripts/suite_targets.py build-tsan stress)
# Timeouts x3, a margin: on 2 cores side by side, stackdist_parallel takes ~64 s of its 120 and
# analyzer_decode ~130 s of its 600 under TSan (their TSan runs are smaller: tests/common/sanitizer.h);
# before that stackdist_parallel ran past 120 s there.
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp \
  meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes "$JOBS" --timeout-multiplier 3 --suite stress

if command -v clang >/dev/null; then
  section "clang -Werror: build and fuzz targets"
  CC=clang CXX=clang++ setup build-clang -Dwerror=true -Dbench=false -Dfuzz=enabled \
    -Doptimization=0 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1
  ninja -C build-clang -j "$JOBS"
  meson test -C build-clang --no-rebuild --print-errorlogs --num-processes "$JOBS" --suite fuzz
fi

section "all suites passed"
