// `sonde convert`: turns a lackey text trace or raw64 addresses (or a Sonde trace) into a
// Sonde trace file. It uses only the public API of sonde/trace.h, so it is compiled into the
// program that calls it (the `sonde` executable, src/cli/meson.build), not into libsonde.
//
// How the CLI calls it: when argv[1] is "convert", main() returns
//     sonde_cli_convert(argc - 1, argv + 1);
// i.e. argv[0] is "convert" and the rest are its options:
//     convert INPUT [--format auto|sonde|lackey|raw64] -o OUTPUT.sonde [--level N] [--chunk-records N]
//             [--force] [--strict] [--version]
// It prints one summary line on stdout, warnings and errors (file and offset) on stderr, and
// returns the process exit status: 0 on success, 1 on a read or write error (the output is then
// not written), 2 on bad usage (nothing read or written): options out of range, a missing input,
// an output that is the input, or that exists without --force.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif
int sonde_cli_convert(int argc, char **argv);
#ifdef __cplusplus
}
#endif
