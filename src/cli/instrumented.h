// Whether a program calls the -finstrument-functions hooks (`sonde run` and `sonde record`
// warn when it does not: no call would be reported).
#pragma once

#include <string>

// The program's path as execvp would find it (PATH searched for a name without '/'), or "".
std::string find_program(const std::string &name);
// False only when `path` is an ELF file that neither imports nor defines
// __cyg_profile_func_enter; true when it does or when it cannot be told (a script, unreadable).
bool calls_instrument_hooks(const std::string &path);
// False only when `path` is an ELF file that neither imports nor defines a sanitizer-coverage
// load or store callback (__sanitizer_cov_load*, __sanitizer_cov_store*): it was not built with
// -fsanitize-coverage=trace-loads,trace-stores; true when it does or when it cannot be told.
bool calls_memtrace_callbacks(const std::string &path);
// Whether the program `path` defines __sanitizer_cov_trace_pc_guard itself (clang's own
// sanitizer runtime, linked by default, does): then its guard hits never reach
// libsonde-instrument.so. False when it cannot be told.
bool defines_guard_callback(const std::string &path);
// Why `sonde record --memory` and `sonde analyze --live` refuse `program` (found as execvp
// would): it has no sanitizer-coverage load and store callbacks (the message names the flags
// that build it), or, with `blocks`, it defines the guard callback itself (the message names
// -fno-sanitize-link-runtime). "" when it may run.
std::string memtrace_refusal(const std::string &program, bool blocks);
// Why LD_PRELOAD cannot bring Sonde into `path`: "is statically linked (no program
// interpreter), so LD_PRELOAD cannot load Sonde into it" for an ELF executable without
// PT_INTERP; "" when it can or when it cannot be told (a script, unreadable).
std::string preload_obstacle(const std::string &path);
// The warning both verbs print for a program without hooks.
void warn_uninstrumented(const char *verb, const std::string &program);
// libsonde-instrument.so, found in order: $SONDE_INSTRUMENT_LIBRARY; the build tree's copy
// when this executable runs from the build tree; the copy in the library directory beside this
// executable (bin/../<libdir>, a moved prefix included); the copy at the configured prefix. ""
// when none is readable.
std::string instrument_library_path();
