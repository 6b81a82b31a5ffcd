// The ranks of `sonde analyze --mpi` over MPI (Open MPI); see ranks.h for the protocol. Bytes
// travel point to point (states to rank 0, routes between every pair) in pieces of at most
// 1 GiB (MPI counts are ints).
#include "mpi/ranks.h"

// The C API only: the deprecated C++ bindings that mpi.h would pull in do not build with -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <time.h>

#include <algorithm>
#include <climits>
#include <cstdio>

namespace sonde::mpi {

namespace {

constexpr size_t kPiece = size_t{1} << 30;
constexpr int kStateTag = 17;
constexpr int kRouteTag = 18;

// Waits for `request` without spinning: MPI's blocking calls poll at full speed, and a rank that
// waits for rank 0's merge would take a core from it (ranks often share a node's cores, and
// mpirun --oversubscribe puts several on one). A short spin, then 200 us sleeps.
void wait(MPI_Request *request) {
    int done = 0;
    for (int spin = 0; spin < 1000; ++spin) {
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (done) return;
    }
    const timespec pause{0, 200000};
    while (!done) {
        nanosleep(&pause, nullptr);
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
    }
}

// Waits for every request the same way (MPI_Testall between the sleeps).
void wait_all(std::vector<MPI_Request> *requests) {
    if (requests->empty()) return;
    const int n = static_cast<int>(requests->size());
    int done = 0;
    for (int spin = 0; spin < 1000; ++spin) {
        MPI_Testall(n, requests->data(), &done, MPI_STATUSES_IGNORE);
        if (done) return;
    }
    const timespec pause{0, 200000};
    while (!done) {
        nanosleep(&pause, nullptr);
        MPI_Testall(n, requests->data(), &done, MPI_STATUSES_IGNORE);
    }
}

class MpiRanks final : public Ranks {
public:
    MpiRanks() {
        int r = 0, n = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        rank_ = static_cast<uint32_t>(r);
        size_ = static_cast<uint32_t>(n);
    }
    ~MpiRanks() override { MPI_Finalize(); }
    uint32_t rank() const override { return rank_; }
    uint32_t size() const override { return size_; }

    bool agree(uint64_t hash, std::string *why) override {
        std::vector<uint64_t> all(size_);
        MPI_Request r;
        MPI_Iallgather(&hash, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &r);
        wait(&r);
        for (uint32_t r = 1; r < size_; ++r) {
            if (all[r] == all[0]) continue;
            *why = "rank " + std::to_string(r) +
                   " was started with other options or inputs than rank 0 (hash " + hex(all[r]) +
                   ", rank 0: " + hex(all[0]) + "); every rank must run the same command";
            return false;
        }
        return true;
    }

    bool route(int code, const std::string &message, const std::vector<std::string> &sends,
               std::vector<std::string> *received, int *first_code, std::string *why) override {
        if (!all_succeeded(code, message, first_code, why)) return false;
        std::vector<uint64_t> out(size_, 0), in(size_, 0);
        for (uint32_t k = 0; k < size_ && k < sends.size(); ++k) out[k] = k == rank_ ? 0 : sends[k].size();
        MPI_Request r;
        MPI_Ialltoall(out.data(), 1, MPI_UINT64_T, in.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &r);
        wait(&r);
        received->assign(size_, std::string());
        std::vector<MPI_Request> requests;
        for (uint32_t k = 0; k < size_; ++k) {
            if (k == rank_) continue;
            std::string &got = (*received)[k];
            got.resize(static_cast<size_t>(in[k]));
            for (size_t off = 0; off < got.size(); off += kPiece) {
                requests.emplace_back();
                MPI_Irecv(&got[off], static_cast<int>(std::min(kPiece, got.size() - off)), MPI_BYTE,
                          static_cast<int>(k), kRouteTag, MPI_COMM_WORLD, &requests.back());
            }
            for (size_t off = 0; off < out[k]; off += kPiece) {
                requests.emplace_back();
                MPI_Isend(sends[k].data() + off, static_cast<int>(std::min<uint64_t>(kPiece, out[k] - off)),
                          MPI_BYTE, static_cast<int>(k), kRouteTag, MPI_COMM_WORLD, &requests.back());
            }
        }
        wait_all(&requests);
        return true;
    }

    bool exchange(int code, const std::string &message, const std::string &state,
                  std::vector<std::string> *states, int *first_code, std::string *why) override {
        if (!all_succeeded(code, message, first_code, why)) return false;
        MPI_Request r;
        uint64_t mine = state.size();
        std::vector<uint64_t> sizes(size_);
        MPI_Igather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &r);
        wait(&r);
        states->clear();
        if (rank_ != 0) {
            for (size_t off = 0; off < state.size(); off += kPiece) {
                const int n = static_cast<int>(std::min(kPiece, state.size() - off));
                MPI_Isend(state.data() + off, n, MPI_BYTE, 0, kStateTag, MPI_COMM_WORLD, &r);
                wait(&r);
            }
            return true;
        }
        states->resize(size_);
        (*states)[0] = state;
        for (uint32_t k = 1; k < size_; ++k) {
            std::string &s = (*states)[k];
            s.resize(static_cast<size_t>(sizes[k]));
            for (size_t off = 0; off < s.size(); off += kPiece) {
                const int n = static_cast<int>(std::min(kPiece, s.size() - off));
                MPI_Irecv(&s[off], n, MPI_BYTE, static_cast<int>(k), kStateTag, MPI_COMM_WORLD, &r);
                wait(&r);
            }
        }
        return true;
    }

    // Collective: every rank's exit code to every rank; false with the first failing rank's
    // code and message (broadcast from it) when one is not 0.
    bool all_succeeded(int code, const std::string &message, int *first_code, std::string *why) {
        std::vector<int> codes(size_);
        MPI_Request r;
        MPI_Iallgather(&code, 1, MPI_INT, codes.data(), 1, MPI_INT, MPI_COMM_WORLD, &r);
        wait(&r);
        const auto failed = std::find_if(codes.begin(), codes.end(), [](int c) { return c != 0; });
        if (failed == codes.end()) return true;
        const int f = static_cast<int>(failed - codes.begin());
        // The failing rank's message, to every rank.
        std::string text = rank_ == static_cast<uint32_t>(f) ? message : std::string();
        int len = static_cast<int>(std::min<size_t>(text.size(), 4096));
        MPI_Ibcast(&len, 1, MPI_INT, f, MPI_COMM_WORLD, &r);
        wait(&r);
        text.resize(static_cast<size_t>(len) + 1);  // room for one byte when empty
        MPI_Ibcast(&text[0], len, MPI_CHAR, f, MPI_COMM_WORLD, &r);
        wait(&r);
        text.resize(static_cast<size_t>(len));
        *first_code = *failed;
        *why = "rank " + std::to_string(f) + ": " + (text.empty() ? "failed" : text);
        return false;
    }

    int finish(int code) override {
        MPI_Request r;
        MPI_Ibcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD, &r);
        wait(&r);
        return code;
    }

private:
    static std::string hex(uint64_t v) {
        char text[24];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
        return text;
    }
    uint32_t rank_ = 0;
    uint32_t size_ = 1;
};

}  // namespace

bool available() { return true; }

std::unique_ptr<Ranks> start(std::string *why) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        *why = "MPI_Init failed";
        return nullptr;
    }
    return std::make_unique<MpiRanks>();
}

}  // namespace sonde::mpi
