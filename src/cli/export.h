// `sonde export FILE --format chrome|folded|csv -o OUT [--force]`: the calls of a trace for
// other viewers (Perfetto UI, speedscope, flamegraph.pl, spreadsheets). Called by main() as
// sonde_cli_export(argc - 1, argv + 1), argv[0] being "export"; returns the exit status: 0, 1
// on a read or write error or an existing OUT without --force, 2 on bad usage.
#pragma once

int sonde_cli_export(int argc, char **argv);
