// `sonde report FILE`: functions (calls, total and self time), threads, the call tree, as text,
// JSON and one HTML page. Called by main() as sonde_cli_report(argc - 1, argv + 1), argv[0]
// being "report"; returns the exit status: 0, 1 on a read or write error, 2 on bad usage.
#pragma once

int sonde_cli_report(int argc, char **argv);
