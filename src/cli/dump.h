// `sonde dump`: prints the records of a trace as text, one line per record (DynamoRIO
// drcachesim's `view` tool). It uses only the public API of sonde/trace.h and
// sonde/trace_events.h, so it is compiled into the `sonde` executable, not into libsonde.
//
// How the CLI calls it: when argv[1] is "dump", main() returns
//     sonde_cli_dump(argc - 1, argv + 1);
// i.e. argv[0] is "dump" and the rest are its options:
//     dump INPUT [--format auto|sonde|lackey|raw64|drmemtrace] [--shard N] [--limit N] [--events]
// INPUT "-" is standard input. Records go to stdout as they are read (bounded memory); a reader
// that goes away (EPIPE, `sonde dump big.sonde | head`) ends the dump quietly with status 0.
// Returns the process exit status: 0 success, 1 the input cannot be read (the message names the
// file and offset) or a shard that the input does not have, 2 bad usage.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif
int sonde_cli_dump(int argc, char **argv);
#ifdef __cplusplus
}
#endif
