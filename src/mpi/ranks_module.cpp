// The ranks of `sonde analyze --mpi` in a build with MPI: start() loads the module sonde-mpi.so
// (ranks_mpi.cpp, which links MPI) and asks it for the Ranks. The `sonde` program itself does not
// link MPI: Open MPI's libraries (libmpi, open-rte, open-pal, hwloc, libevent) took 2.6 ms of
// every command's start on a 2-vCPU VM, for the one option that uses them.
//
// The module is looked for as the instrumentation library is (cli/instrumented.cpp): the build
// tree's when this program runs from the build tree, else beside this program's library
// directory (bin/../<libdir>/sonde/sonde-mpi.so, so that a moved prefix or a copied bundle uses
// its own), else at the configured prefix. It is loaded with RTLD_GLOBAL, because Open MPI's own
// components, which it loads in turn, resolve MPI's symbols globally, and never unloaded (the
// Ranks it makes run its code until the process ends).
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "mpi/ranks.h"

namespace sonde::mpi {

namespace {

// Where the module is, in the order above; empty when none of them is readable.
std::string module_path(std::string *looked) {
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const std::string self = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
    const std::string build_root = SONDE_BUILD_ROOT;
    std::string candidates[3];
    size_t count = 0;
    if (self.compare(0, build_root.size() + 1, build_root + "/") == 0)
        candidates[count++] = SONDE_MPI_MODULE_BUILD_PATH;
    const size_t slash = self.rfind('/');
    if (slash != std::string::npos)
        candidates[count++] = self.substr(0, slash) + "/../" SONDE_LIBDIR "/sonde/sonde-mpi.so";
    candidates[count++] = SONDE_MPI_MODULE_INSTALL_PATH;
    for (size_t i = 0; i < count; ++i) {
        if (access(candidates[i].c_str(), R_OK) == 0) return candidates[i];
        *looked += (looked->empty() ? "" : ", ") + candidates[i];
    }
    return "";
}

}  // namespace

bool available() { return true; }

std::unique_ptr<Ranks> start(uint64_t hash, std::string *why) {
    std::string looked;
    const std::string path = module_path(&looked);
    if (path.empty()) {
        *why = "this build's MPI module sonde-mpi.so is not installed (looked for " + looked + ")";
        return nullptr;
    }
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
        const char *e = dlerror();
        *why = "cannot load this build's MPI module: " + std::string(e != nullptr ? e : path);
        return nullptr;
    }
    using Start = Ranks *(*)(uint64_t);
    const auto fn = reinterpret_cast<Start>(dlsym(h, "sonde_mpi_module_start"));
    if (fn == nullptr) {
        *why = path + " is not sonde's MPI module (it has no sonde_mpi_module_start)";
        return nullptr;
    }
    std::unique_ptr<Ranks> ranks(fn(hash));
    if (!ranks) *why = "sonde's MPI module could not start (out of memory)";
    return ranks;
}

}  // namespace sonde::mpi
