// The ranks of a build without MPI (meson -Dmpi=disabled, or no MPI found): `sonde analyze
// --mpi` answers that this build has no MPI. See ranks.h.
#include "mpi/ranks.h"

namespace sonde::mpi {

bool available() { return false; }

std::unique_ptr<Ranks> start(uint64_t hash, std::string *why) {
    (void)hash;
    *why =
        "this build of sonde has no MPI (build it with Open MPI: apt-get install libopenmpi-dev, then "
        "meson setup -Dmpi=enabled)";
    return nullptr;
}

}  // namespace sonde::mpi
