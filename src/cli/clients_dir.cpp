// Finding clients by bare name (see clients_dir.h).
#include "cli/clients_dir.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

namespace sonde::cli {

namespace {

std::string self_dir() {
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return "";
    const std::string self(exe, static_cast<size_t>(n));
    const size_t slash = self.rfind('/');
    return slash == std::string::npos ? "" : self.substr(0, slash);
}

bool readable_file(const std::string &p) { return access(p.c_str(), R_OK) == 0; }

}  // namespace

std::vector<std::string> client_dirs() {
    std::vector<std::string> dirs;
    const char *env = getenv("SONDE_CLIENT_PATH");
    if (env != nullptr) {
        std::string list = env;
        size_t start = 0;
        while (start <= list.size()) {
            const size_t colon = list.find(':', start);
            const std::string d =
                list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
            if (!d.empty()) dirs.push_back(d);
            if (colon == std::string::npos) break;
            start = colon + 1;
        }
    }
    const std::string here = self_dir();
    const std::string build_root = SONDE_BUILD_ROOT;
    if (!here.empty() && here.compare(0, build_root.size() + 1, build_root + "/") == 0)
        dirs.push_back(build_root + "/examples");
    if (!here.empty()) dirs.push_back(here + "/../" SONDE_LIBDIR "/sonde/clients");
    dirs.push_back(SONDE_CLIENTS_INSTALL_DIR);
    return dirs;
}

std::string find_client(const std::string &name, std::string *searched) {
    searched->clear();
    for (const std::string &d : client_dirs()) {
        for (const std::string &candidate : {d + "/" + name + ".so", d + "/" + name})
            if (readable_file(candidate)) {
                char abs[PATH_MAX];
                return realpath(candidate.c_str(), abs) != nullptr ? std::string(abs) : candidate;
            }
        if (!searched->empty()) *searched += ", ";
        *searched += d;
    }
    return "";
}

}  // namespace sonde::cli
