// `sonde run` (run.cpp): called by main() as sonde_cli_run(argc - 1, argv + 1). Runs a program
// with libsonde-instrument.so preloaded and the given clients in SONDE_CLIENTS. Returns only on
// failure: 2 bad usage, 127 the program or the instrumentation library could not be found.
#pragma once

int sonde_cli_run(int argc, char **argv);
