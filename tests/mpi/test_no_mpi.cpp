// The ranks of a build without MPI (src/mpi/ranks_none.cpp), compiled into this test in every
// build: `sonde analyze --mpi` must then answer that this build has no MPI, never run as if it
// had. tests/mpi/check_mpi.py checks the CLI's answer (exit 2) in such a build.
#include <cstdio>
#include <string>

#include "mpi/ranks.h"

int main() {
    std::string why;
    if (sonde::mpi::available()) {
        std::fprintf(stderr, "available() is true in the no-MPI ranks\n");
        return 1;
    }
    if (sonde::mpi::start(0, &why) != nullptr) {
        std::fprintf(stderr, "start() gave ranks without MPI\n");
        return 1;
    }
    if (why.find("this build of sonde has no MPI") == std::string::npos) {
        std::fprintf(stderr, "unexpected message: %s\n", why.c_str());
        return 1;
    }
    return 0;
}
