// `sonde analyze` (analyze.cpp): called by main() as sonde_cli_analyze(argc - 1, argv + 1), so
// argv[0] is "analyze". Returns the process exit status: 0 success, 1 analysis or input error,
// 2 bad usage.
#pragma once

int sonde_cli_analyze(int argc, char **argv);
