// The threads of one rank of `sonde analyze --mpi` when --jobs does not say (ranks.h). It
// needs no MPI: the launcher's environment and the process's CPU affinity tell it.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "mpi/ranks.h"

namespace sonde::mpi {

namespace {

// The ranks on this node, as the launcher says (Open MPI's mpirun; MPICH's Hydra), else 1.
uint32_t local_ranks() {
    for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
        const char *v = std::getenv(name);
        if (v == nullptr || *v == '\0') continue;
        char *end = nullptr;
        const unsigned long n = std::strtoul(v, &end, 10);
        if (*end == '\0' && n >= 1 && n <= 1u << 20) return static_cast<uint32_t>(n);
    }
    return 1;
}

// The node's online CPUs.
uint32_t online_cpus() {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<uint32_t>(online) : 1;
}

}  // namespace

uint32_t usable_cpus() {
    const uint32_t total = online_cpus();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return std::max<uint32_t>(1, std::min(total, static_cast<uint32_t>(CPU_COUNT(&set))));
    return total;
}

uint32_t merge_threads() { return usable_cpus(); }

uint32_t threads_per_rank() {
    return std::max<uint32_t>(1, std::min(usable_cpus(), online_cpus() / local_ranks()));
}

}  // namespace sonde::mpi
