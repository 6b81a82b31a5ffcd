// Fuzz target: what `sonde run` checks of a client plugin's ELF file before it starts the
// program (src/cli/client_check.cpp, through elfutils' libelf). A client is named by the user,
// and the check reads the file, so whatever its bytes: the check returns (no crash, hang or
// undefined behaviour) and its answer is "" (the file passes) or a sentence that names the file.
// The bytes are written to a memfd and the check is given its /proc/self/fd path, a regular
// file as a plugin on disk is.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/client_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz_client", MFD_CLOEXEC);
        if (fd < 0) {
            std::perror("memfd_create");
            std::abort();
        }
    }
    if (ftruncate(fd, 0) != 0 || (size != 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))) {
        std::perror("fuzz_client_check: writing the input");
        std::abort();
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const std::string answer = sonde::cli::check_client_plugin(path);
    if (!answer.empty() && answer.find("'" + path + "'") == std::string::npos) {
        std::fprintf(stderr, "fuzz_client_check: an answer that does not name the file: %s\n",
                     answer.c_str());
        std::abort();
    }
    return 0;
}
