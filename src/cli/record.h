// `sonde record`: runs a program with its call graph recorded into a Sonde trace.
#pragma once

int sonde_cli_record(int argc, char **argv);
