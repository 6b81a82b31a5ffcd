#!/bin/sh
# Writes the seed corpus of fuzz_client_check (tests/client/corpus/elf): small ELF files of
# every kind the check tells apart, built with the system's gcc and stripped to a few KiB:
#   ok.so        a client that passes (its entry point and a required ABI version of 1)
#   v99.so       a client that requires client ABI version 99 (refused)
#   noentry.so   a shared object that refers to the entry point without defining it (refused)
#   data.so      an entry point that is not a function (refused)
#   object.o     a relocatable object (refused)
#   truncated.so the first 200 bytes of ok.so (refused)
# Run from the project root: sh tests/client/make_elf_seeds.sh
set -eu
out=tests/client/corpus/elf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
so() {  # so NAME SOURCE: a shared object without the C runtime, section headers kept
    printf '%s\n' "$2" > "$tmp/$1.c"
    gcc -shared -fPIC -nostdlib -Os -s -Wl,--build-id=none -Wl,-z,noseparate-code \
        -Wl,--hash-style=gnu -Wl,-z,norelro -o "$out/$1.so" "$tmp/$1.c"
}
so ok 'int sonde_client_instantiate(void *a, void *b) { (void)a; (void)b; return 0; }
const unsigned sonde_client_required_abi_version = 1;'
so v99 'int sonde_client_instantiate(void *a, void *b) { (void)a; (void)b; return 0; }
const unsigned sonde_client_required_abi_version = 99;'
so noentry 'extern int sonde_client_instantiate(void *, void *);
int call(void) { return sonde_client_instantiate(0, 0); }'
so data 'const int sonde_client_instantiate = 1;'
printf 'int sonde_client_instantiate(void *a, void *b) { (void)a; (void)b; return 0; }\n' > "$tmp/object.c"
gcc -c -Os -o "$out/object.o" "$tmp/object.c"
strip --strip-debug -R .comment -R .note.GNU-stack "$out/object.o"
head -c 200 "$out/ok.so" > "$out/truncated.so"
