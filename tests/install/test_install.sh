#!/usr/bin/env bash
# Installs the build into a temporary DESTDIR, then builds a C program against the installed
# headers and library with nothing but `cc prog.c $(pkg-config --cflags --libs sonde)` and runs it;
# then runs the installed `sonde` without LD_LIBRARY_PATH (RUNPATH) with an installed client
# (and, when clang is there, records the memory references of a program linked through the
# installed sonde-instrument.pc)
# given by bare name, before and after moving the whole prefix elsewhere (everything is found
# relative to the executable, nothing through the configured prefix). The manual pages land in
# share/man/man1 and man finds them there.
set -euo pipefail
build=$1 src=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
pc=$(find "$dest" -name sonde.pc | head -n1)
[ -n "$pc" ] || { echo "sonde.pc was not installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --define-variable=prefix="$dest$prefix" --cflags --libs sonde)
for h in sonde.h defs.h status.h session.h buffer.h record.h; do
  [ -f "$dest$prefix/include/sonde/$h" ] || { echo "missing installed header sonde/$h"; exit 1; }
done
cc -std=c99 -Wall -Werror "$src/examples/consumer.c" $flags -pthread -o "$dest/consumer"
libdir=$(pkg-config --define-variable=prefix="$dest$prefix" --variable=libdir sonde)
[ -e "$libdir/libsonde.so.1" ] || { echo "libsonde.so.1 not installed in $libdir"; exit 1; }
LD_LIBRARY_PATH="$libdir" "$dest/consumer"
if command -v doxygen >/dev/null; then
  [ -f "$dest$prefix/share/doc/sonde/api/html/index.html" ] || { echo "the API reference is not installed"; exit 1; }
fi
for page in sonde sonde-analyze sonde-annotate sonde-convert sonde-dump sonde-export sonde-record sonde-report sonde-run; do
  [ -f "$dest$prefix/share/man/man1/$page.1" ] || { echo "the manual page $page(1) is not installed in share/man/man1"; exit 1; }
done
grep -q "^\.TH SONDE 1 .*Sonde $(sed -n "s/^ *version : '\(.*\)',/\1/p" "$src/meson.build" | head -n1)" \
  "$dest$prefix/share/man/man1/sonde.1" || { echo "sonde.1 does not carry the project's version"; exit 1; }
if command -v man >/dev/null; then
  # Into a file first: grep -q stopping at its match could end man by SIGPIPE (pipefail).
  MANPATH="$dest$prefix/share/man" man -P cat sonde-analyze > "$dest/man.txt" 2>/dev/null || true
  grep -q -- "--reuse-model" "$dest/man.txt" || { echo "man sonde-analyze does not find the installed page"; exit 1; }
fi
for c in call_counter class_filter thread_module_logger api_logger; do
  [ -f "$libdir/sonde/clients/$c.so" ] || { echo "client $c not installed in $libdir/sonde/clients"; exit 1; }
done
bindir=$(dirname "$(find "$dest" -type f -name sonde -perm -u+x | head -n1)")
# The installed program starts with no LD_LIBRARY_PATH (its RUNPATH is $ORIGIN/../<libdir>) and
# finds its own libsonde-instrument.so and clients, here and after the prefix is moved.
env -u LD_LIBRARY_PATH -u SONDE_INSTRUMENT_LIBRARY "$bindir/sonde" --help >/dev/null \
  || { echo "the installed sonde does not start without LD_LIBRARY_PATH"; exit 1; }
out="$dest/counts.txt"
env -u LD_LIBRARY_PATH -u SONDE_INSTRUMENT_LIBRARY \
  "$bindir/sonde" run --client "call_counter=out=$out" -- "$build/examples/calls" 10 >/dev/null
grep -q "$(printf '\tfib')$" "$out" || { echo "the installed call_counter, given by name, counted nothing"; exit 1; }
# A build with MPI installs its module (<libdir>/sonde/sonde-mpi.so), which the installed program
# loads for --mpi from beside its own library directory: one rank, without mpirun.
if [ -f "$libdir/sonde/sonde-mpi.so" ]; then
  env -u LD_LIBRARY_PATH "$bindir/sonde" analyze --mpi "$src/tests/data/gzip-gpl3.lackey.zst" --format lackey \
    >"$dest/mpi.txt" 2>&1 || { echo "the installed sonde analyze --mpi failed:"; cat "$dest/mpi.txt"; exit 1; }
  grep -q "distinct lines" "$dest/mpi.txt" || { echo "the installed sonde analyze --mpi printed no counts:"; cat "$dest/mpi.txt"; exit 1; }
fi
# Memory references: a program built with clang's sanitizer coverage and nothing but the installed
# `pkg-config --libs sonde-instrument`, recorded by the installed sonde.
if command -v clang >/dev/null; then
  mflags=$(pkg-config --define-variable=prefix="$dest$prefix" --libs sonde-instrument)
  clang -O1 -fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores "$src/tests/memtrace/fill_sum.c" \
    $mflags -Wl,-rpath,"$libdir" -o "$dest/fill_sum"
  env -u LD_LIBRARY_PATH "$bindir/sonde" record --memory -o "$dest/mem.trace" -- "$dest/fill_sum" \
    2>"$dest/mem.txt" >/dev/null
  grep -q "^sonde record: 2097152 memory references, 1 threads," "$dest/mem.txt" \
    || { echo "the installed sonde-instrument.pc: sonde record --memory failed:"; cat "$dest/mem.txt"; exit 1; }
fi
moved="$dest/moved"
mv "$dest$prefix" "$moved"
rel_bin=${bindir#"$dest$prefix"}
rm -f "$out"
env -u LD_LIBRARY_PATH -u SONDE_INSTRUMENT_LIBRARY \
  "$moved$rel_bin/sonde" run --client "call_counter=out=$out" -- "$build/examples/calls" 10 >/dev/null
grep -q "$(printf '\tfib')$" "$out" || { echo "a moved prefix: sonde run with an installed client failed"; exit 1; }
echo "3 passed, 0 failed"
