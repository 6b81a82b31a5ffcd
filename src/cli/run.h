// `sonde run` (run.cpp): called by main() as sonde_cli_run(argc - 1, argv + 1). Checks the client
// plugins given as paths (client_check.h), then execs the program with libsonde-instrument.so
// preloaded and the clients in SONDE_CLIENTS. Returns only when the program does not run: 0 after
// --help or --version, 2 bad usage (a client that fails its check included), 127 the program or
// the instrumentation library could not be found or started.
#pragma once

int sonde_cli_run(int argc, char **argv);
