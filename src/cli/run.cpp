// `sonde run --client PATH|NAME[=OPTIONS] ... [--api SPEC] -- PROGRAM ARGS`: sets LD_PRELOAD to
// libsonde-instrument.so (before any LD_PRELOAD already set), SONDE_CLIENTS to the clients and,
// with --api, SONDE_API (and SONDE_API_PROTOTYPES) to the library functions whose calls become
// the clients' API_CALL events (docs/api-tracing.md), then execs the program. Everything else
// (loading the clients, the events) happens inside the program, so what `sonde run` does can
// also be done by hand with the two variables.
//
// A client given by bare name (no '/') is an installed one, found by clients_dir.h. Before the
// exec, every client is checked (client_check.h): a client that does not exist, is not a
// whole, readable ELF shared object of the right class, or does not define sonde_client_instantiate
// itself stops `sonde run` with exit status 2, and the program does not run. Once exec'ed, the
// process is the program: its exit status is `sonde run`'s.
//
// The instrumentation library is found by instrument_library_path() (instrumented.h).
#include "cli/run.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client_check.h"
#include "cli/clients_dir.h"
#include "cli/instrumented.h"
#include "cli/options.h"

namespace {

namespace cli = sonde::cli;

constexpr const char *kCommand = "sonde run";

// A client given with a directory part is made absolute, so it still resolves after the
// program changes directory; a bare name is left to the loader's search path.
std::string client_spec(const std::string &spec) {
    const size_t eq = spec.find('=');
    std::string path = spec.substr(0, eq);
    if (path.find('/') != std::string::npos) {
        char abs[PATH_MAX];
        if (realpath(path.c_str(), abs) != nullptr) path = abs;
    }
    return eq == std::string::npos ? path : path + spec.substr(eq);
}

}  // namespace

int sonde_cli_run(int argc, char **argv) {
    int split = argc;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            split = i;
            break;
        }
    CLI::App app{
        "Run a program built with -finstrument-functions under Sonde clients.\n"
        "A client given by NAME is looked up in $SONDE_CLIENT_PATH, then in Sonde's clients\n"
        "directory (<libdir>/sonde/clients).\n"
        "A client given as a path (with a '/') must be a readable ELF shared object that defines\n"
        "sonde_client_instantiate itself, else the program does not run (exit 2).\n"
        "Exit status: the program's; 127 when it cannot be started; 2 on bad usage; 125 with\n"
        "--strict when a client fails to load inside the program (which then does not run), and\n"
        "2 from inside it when --api tracing cannot start.",
        kCommand};
    std::vector<std::string> clients;
    bool strict = false;
    cli::add_version(app);
    cli::set_usage(
        app,
        "sonde run [OPTIONS] --client PATH|NAME[=OPTIONS] ... [--api SPEC [--api-prototypes FILE]] -- "
        "PROGRAM [ARGS...]");
    app.add_option("--client", clients,
                   "Client plugin and its options, PATH[=OPTIONS] or NAME[=OPTIONS] (an installed client, "
                   "e.g. call_counter); repeatable; no ';'")
        ->required()
        ->allow_extra_args(false);
    std::string api, prototypes;
    cli::add_api_options(app, &api, &prototypes,
                         "trace calls into shared-library functions for the clients' API_CALL events");
    app.add_flag("--strict", strict,
                 "Run the program only with every client loaded: a client that fails to load inside it "
                 "ends it before main (exit 125), and a program Sonde cannot be loaded into is refused");
    const int parsed = cli::parse(app, split, argv);
    if (parsed >= 0) return parsed;
    if (split + 1 >= argc) return cli::usage_error(kCommand, "no program given (put it after --)");
    if (!prototypes.empty() && api.empty())
        return cli::usage_error(kCommand, "--api-prototypes: needs --api");
    std::string list;
    for (const std::string &c : clients) {
        if (c.find(';') != std::string::npos)
            return cli::usage_error(kCommand, "--client: a client and its options cannot contain ';': " + c);
        const std::string path = c.substr(0, c.find('='));
        if (path.empty()) return cli::usage_error(kCommand, "--client: no plugin path in '" + c + "'");
        std::string spec = c;
        if (path.find('/') == std::string::npos) {  // a bare name: an installed client
            std::string searched;
            const std::string found = cli::find_client(path, &searched);
            if (found.empty())
                return cli::usage_error(kCommand, "--client: no client named '" + path + "' (looked in " +
                                                      searched + "; give a path to use another)");
            spec = found + c.substr(path.size());
        }
        const std::string why = cli::check_client_plugin(spec.substr(0, spec.find('=')));
        if (!why.empty()) return cli::usage_error(kCommand, "--client: " + why);
        if (!list.empty()) list += ';';
        list += client_spec(spec);
    }
    const std::string lib = instrument_library_path();
    if (lib.empty()) {
        std::fprintf(stderr, "%s: libsonde-instrument.so not found (set SONDE_INSTRUMENT_LIBRARY)\n",
                     kCommand);
        return 127;
    }
    std::string preload = lib;
    const char *old = getenv("LD_PRELOAD");
    if (old != nullptr && *old != '\0') preload += std::string(":") + old;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("SONDE_CLIENTS", list.c_str(), 1);
    if (strict) setenv("SONDE_CLIENTS_STRICT", "1", 1);
    if (!api.empty()) {
        setenv("SONDE_API", api.c_str(), 1);
        char abs[PATH_MAX];
        if (!prototypes.empty())
            setenv("SONDE_API_PROTOTYPES",
                   realpath(prototypes.c_str(), abs) != nullptr ? abs : prototypes.c_str(), 1);
    }
    const std::string program = find_program(argv[split + 1]);
    // A program the dynamic loader does not load Sonde into would run without any client.
    const std::string obstacle = preload_obstacle(program);
    if (!obstacle.empty()) {
        if (strict)
            return cli::usage_error(kCommand, std::string(argv[split + 1]) + " " + obstacle + " (--strict)");
        std::fprintf(stderr, "%s: warning: %s %s; no client runs\n", kCommand, argv[split + 1],
                     obstacle.c_str());
    } else if (api.empty() && !program.empty() && !calls_instrument_hooks(program)) {
        // With --api an uninstrumented program is expected: its library calls are the events.
        warn_uninstrumented("sonde run", argv[split + 1]);
    }
    execvp(argv[split + 1], argv + split + 1);
    std::fprintf(stderr, "%s: cannot run '%s': %s\n", kCommand, argv[split + 1], std::strerror(errno));
    return 127;
}
