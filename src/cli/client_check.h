// What `sonde run` checks of a client plugin before it starts the program (client_check.cpp).
//
// The check reads the plugin's ELF file with elfutils' libelf; no code of the plugin runs in
// the launcher. It is the file-level half of what the library's loader (src/core/plugin.cpp,
// src/client/loader.cpp) does inside the program with dlopen: the file exists and is readable,
// it is an ELF shared object of the launcher's class and machine, whole (its header places
// nothing past the end of the file, and it has a segment to load), its own dynamic symbol table
// defines sonde_client_instantiate (a definition that only a dependency has does not count, as
// for the loader), and the sonde_client_required_abi_version it defines, if any, is one this
// Sonde provides. What only dlopen can tell (a dependency that cannot be found, a symbol that
// does not resolve) is still reported by the loader inside the program.
#pragma once

#include <string>

namespace sonde::cli {

// Returns "" when the plugin at `path` passes, else why not (a sentence naming the file).
std::string check_client_plugin(const std::string &path);

}  // namespace sonde::cli
