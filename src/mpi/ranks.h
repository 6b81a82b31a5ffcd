// The ranks of `sonde analyze --mpi` (src/mpi): what the command needs from MPI, behind an
// interface free of MPI's headers, so that the command (src/cli/analyze.cpp) and the library
// stay MPI-free. ranks_mpi.cpp implements it over Open MPI when the build has MPI (meson feature
// `mpi`), in the module sonde-mpi.so that ranks_module.cpp loads on start(); ranks_none.cpp is
// the build without it, where start() says so.
//
// Protocol (every rank calls the same collectives in the same order, so one rank's failure
// never leaves the others waiting): start() (MPI_Init and an agreement on a hash of the command
// line, made while the command goes on), agreed() before the first collective, then route(): every rank's exit code and message go to every rank; when all are 0, every rank
// sends every other its routes (the records a byte-range run sends the ranks that need them,
// often none); then exchange(): the exit codes again and, when all are 0, every rank's state
// bytes to rank 0, whose final exit code, returned by finish(), reaches every rank. A rank that
// fails before route() enters it with its exit code, one that fails after it enters exchange().
//
// Threads: one Ranks per process, used by one thread of the command; its MPI calls are made by
// a thread of its own (MPI_THREAD_FUNNELED), and the analyzer's workers never call MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sonde::mpi {

class Ranks {
public:
    virtual ~Ranks() = default;
    // This rank and the rank count: from the launcher's environment when it gives them (so
    // that the command need not wait for MPI to start), else MPI's, once it has started.
    virtual uint32_t rank() const = 0;
    virtual uint32_t size() const = 0;
    // Waits for MPI to start and for the agreement that start() began: true when every rank's
    // command-line hash equals rank 0's and every rank's environment gave it MPI's rank and
    // size; else false with *why (MPI did not start, or naming a rank that differs), the same
    // on every rank, and no rank makes another collective.
    virtual bool agreed(std::string *why) = 0;
    // Collective: every rank's `code` (0 = success) and `message`, as in exchange(). When all
    // are 0, sends sends[r] to rank r (sends has one entry per rank; this rank's is ignored) and
    // returns true with *received one entry per rank, rank r's bytes for this rank (this rank's
    // empty).
    virtual bool route(int code, const std::string &message, const std::vector<std::string> &sends,
                       std::vector<std::string> *received, int *first_code, std::string *why) = 0;
    // Collective: every rank's `code` (0 = success) and `message`. When some rank failed,
    // returns false with *first_code the first failing rank's code and *why
    // "rank R: MESSAGE". Else gathers `state` at rank 0 into *states (one per rank, in rank
    // order; empty on other ranks) and returns true.
    virtual bool exchange(int code, const std::string &message, const std::string &state,
                          std::vector<std::string> *states, int *first_code, std::string *why) = 0;
    // Collective, after a successful exchange: rank 0's `code` becomes every rank's answer.
    virtual int finish(int code) = 0;
};

// Whether this build has MPI.
bool available();
// The CPUs this process may run on: its CPU affinity, at most the node's online CPUs, at least
// 1. Needs no MPI (threads.cpp is in every build); `sonde analyze` also splits --jobs by it.
uint32_t usable_cpus();
// The threads one rank should use when the command does not say (--jobs): the cores this
// process may run on, shared with the other ranks of its node. A rank bound to cores of its
// own (mpirun --bind-to core) has them in its CPU affinity; an unbound rank sees every core of
// the node and takes its share, the node's cores divided by the ranks on it (which Open MPI's
// and MPICH's launchers name in the environment). At least 1. Without it, every rank of a
// node would start a thread per core of the node, and N ranks would run N times too many.
uint32_t threads_per_rank();
// The threads rank 0 may use to merge the ranks' partial results (reuse_distance's slices):
// every core of this process's CPU affinity, not a share, because the merge runs once the other
// ranks have finished their parts and wait.
uint32_t merge_threads();
// Starts MPI for this process (mpirun's rank, or one rank when started without mpirun) and the
// agreement of the ranks on `hash`, the command line's, in the background. nullptr with *why
// set when the build has no MPI or its module cannot be loaded (available() then says which);
// MPI failing to start is agreed()'s answer.
std::unique_ptr<Ranks> start(uint64_t hash, std::string *why);

}  // namespace sonde::mpi
