// Where `sonde run --client NAME` finds a client given by bare name (no '/').
//
// The directories searched, in order: each directory of $SONDE_CLIENT_PATH (colon-separated);
// the build tree's examples/ when this executable runs from the build tree; the installed
// clients directory, <libdir>/sonde/clients, found relative to this executable
// ($ORIGIN/../<libdir>/sonde/clients, so a moved prefix still finds its own clients) and at the
// configured prefix. In each, NAME.so and then NAME are tried. A name that is in none of them
// is an error that lists where Sonde looked; it is not left to the dynamic loader's own search,
// so that a misspelt client stops `sonde run` before the program starts.
#pragma once

#include <string>
#include <vector>

namespace sonde::cli {

// The directories searched for bare client names, in order (existing or not).
std::vector<std::string> client_dirs();

// The path of client `name`, or "" with *searched set to the directories looked in, separated
// by ", ".
std::string find_client(const std::string &name, std::string *searched);

}  // namespace sonde::cli
