// The ranks of `sonde analyze --mpi` (src/mpi): what the command needs from MPI, behind an
// interface free of MPI's headers, so that the command (src/cli/analyze.cpp) and the library
// stay MPI-free. ranks_mpi.cpp implements it over Open MPI when the build has MPI (meson feature
// `mpi`); ranks_none.cpp is the build without it, where start() says so.
//
// Protocol (every rank calls the same collectives in the same order, so one rank's failure
// never leaves the others waiting): start() (MPI_Init), agree() on a hash of the command line,
// then route(): every rank's exit code and message go to every rank; when all are 0, every rank
// sends every other its routes (the records a byte-range run sends the ranks that need them,
// often none); then exchange(): the exit codes again and, when all are 0, every rank's state
// bytes to rank 0, whose final exit code, returned by finish(), reaches every rank. A rank that
// fails before route() enters it with its exit code, one that fails after it enters exchange().
//
// Threads: one Ranks per process, used by the main thread only (MPI_THREAD_FUNNELED); the
// analyzer's workers never call MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sonde::mpi {

class Ranks {
public:
    virtual ~Ranks() = default;
    virtual uint32_t rank() const = 0;
    virtual uint32_t size() const = 0;
    // Collective: true when every rank's `hash` equals rank 0's; else false with *why naming a
    // rank that differs.
    virtual bool agree(uint64_t hash, std::string *why) = 0;
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
// Initialises MPI for this process (mpirun's rank, or one rank when started without mpirun).
// nullptr with *why set when the build has no MPI or MPI cannot start.
std::unique_ptr<Ranks> start(std::string *why);

}  // namespace sonde::mpi
