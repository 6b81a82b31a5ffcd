// The ranks of `sonde analyze --mpi` over MPI (Open MPI); see ranks.h for the protocol. Built as
// the module sonde-mpi.so, which the command loads only for --mpi (ranks_module.cpp), so that
// no other command pays for loading MPI's libraries. Bytes
// travel point to point (states to rank 0, routes between every pair) in pieces of at most
// 1 GiB (MPI counts are ints).
//
// One thread of its own makes every MPI call (MPI_THREAD_FUNNELED: the thread that initialised
// MPI): it starts MPI and makes the agreement while the command reads options and inputs and
// runs the analysis (MPI_Init takes a quarter of a second with Open MPI on one node, mostly
// waiting), then runs each collective the command asks for, one at a time, while the command's
// thread waits for it. The rank and size come from the launcher's environment when it gives
// them, so that the analysis need not wait for MPI; the agreement checks them against MPI's.
#include "mpi/ranks.h"

// The C API only: the deprecated C++ bindings that mpi.h would pull in do not build with -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <time.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

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

// The collectives, on the MPI thread only.
class Comm {
public:
    Comm() {
        int r = 0, n = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        rank_ = static_cast<uint32_t>(r);
        size_ = static_cast<uint32_t>(n);
    }
    uint32_t rank() const { return rank_; }
    uint32_t size() const { return size_; }

    // Every rank's command-line hash, and whether the rank and size it started with (from the
    // launcher's environment) are MPI's.
    bool agree(uint64_t hash, bool placed, std::string *why) {
        uint64_t mine[2] = {hash, placed ? 1u : 0u};
        std::vector<uint64_t> all(2 * size_);
        MPI_Request r;
        MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD, &r);
        wait(&r);
        for (uint32_t k = 0; k < size_; ++k) {
            if (all[2 * k + 1] == 0) {
                *why = "rank " + std::to_string(k) +
                       " found another rank or rank count in its environment than MPI gave it";
                return false;
            }
            if (all[2 * k] == all[0]) continue;
            *why = "rank " + std::to_string(k) +
                   " was started with other options or inputs than rank 0 (hash " + hex(all[2 * k]) +
                   ", rank 0: " + hex(all[0]) + "); every rank must run the same command";
            return false;
        }
        return true;
    }

    bool route(int code, const std::string &message, const std::vector<std::string> &sends,
               std::vector<std::string> *received, int *first_code, std::string *why) {
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
                  std::vector<std::string> *states, int *first_code, std::string *why) {
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

    int finish(int code) {
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

// The launcher's word for this process's rank and the rank count, when it gives it (Open MPI's
// mpirun, MPICH's Hydra and Slurm's PMI set these before the program starts).
bool launcher_placement(uint32_t *rank, uint32_t *size) {
    static const char *const kNames[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                            {"PMI_RANK", "PMI_SIZE"}};
    for (const auto &names : kNames) {
        const char *r = std::getenv(names[0]);
        const char *n = std::getenv(names[1]);
        if (r == nullptr || n == nullptr) continue;
        char *end_r = nullptr, *end_n = nullptr;
        const unsigned long rv = std::strtoul(r, &end_r, 10), nv = std::strtoul(n, &end_n, 10);
        if (*r == '\0' || *end_r != '\0' || *n == '\0' || *end_n != '\0' || nv == 0 || rv >= nv ||
            nv > UINT32_MAX)
            continue;
        *rank = static_cast<uint32_t>(rv);
        *size = static_cast<uint32_t>(nv);
        return true;
    }
    return false;
}

class MpiRanks final : public Ranks {
public:
    explicit MpiRanks(uint64_t hash) : hash_(hash) {
        placed_ = launcher_placement(&rank_, &size_);
        thread_ = std::thread([this] { serve(); });
    }
    ~MpiRanks() override {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    uint32_t rank() const override {
        wait_placed();
        return rank_;
    }
    uint32_t size() const override {
        wait_placed();
        return size_;
    }
    bool agreed(std::string *why) override {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return started_; });
        if (!agreed_) *why = why_;
        return agreed_;
    }
    bool route(int code, const std::string &message, const std::vector<std::string> &sends,
               std::vector<std::string> *received, int *first_code, std::string *why) override {
        bool ok = false;
        if (!call([&] { ok = comm_->route(code, message, sends, received, first_code, why); }, why))
            *first_code = 2;
        return ok;
    }
    bool exchange(int code, const std::string &message, const std::string &state,
                  std::vector<std::string> *states, int *first_code, std::string *why) override {
        bool ok = false;
        if (!call([&] { ok = comm_->exchange(code, message, state, states, first_code, why); }, why))
            *first_code = 2;
        return ok;
    }
    int finish(int code) override {
        int out = code;
        std::string ignored;
        call([&] { out = comm_->finish(code); }, &ignored);
        return out;
    }

private:
    // The MPI thread: starts MPI and agrees, then runs the calls it is given until the ranks
    // are destroyed, then finalises MPI.
    void serve() {
        int provided = 0;
        const bool up = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS;
        std::string why;
        bool agreed = false;
        if (up) {
            comm_ = std::make_unique<Comm>();
            const bool placed = !placed_ || (comm_->rank() == rank_ && comm_->size() == size_);
            agreed = comm_->agree(hash_, placed, &why);
        } else {
            why = "MPI_Init failed";
        }
        std::unique_lock<std::mutex> lk(mu_);
        if (comm_ && !placed_) {
            rank_ = comm_->rank();
            size_ = comm_->size();
        }
        started_ = true;
        agreed_ = agreed;
        why_ = why;
        cv_.notify_all();
        for (;;) {
            cv_.wait(lk, [&] { return stop_ || task_; });
            if (!task_) break;
            lk.unlock();
            task_();
            lk.lock();
            task_ = nullptr;
            cv_.notify_all();
        }
        lk.unlock();
        comm_.reset();
        if (up) MPI_Finalize();
    }
    // Runs `f` on the MPI thread and waits for it; false (with *why) without running it when
    // the ranks did not agree (then no rank makes another collective).
    bool call(const std::function<void()> &f, std::string *why) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return started_ && !task_; });
        if (!agreed_) {
            *why = why_;
            return false;
        }
        task_ = f;
        cv_.notify_all();
        cv_.wait(lk, [&] { return !task_; });
        return true;
    }
    void wait_placed() const {
        if (placed_) return;
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return started_; });
    }

    const uint64_t hash_;
    bool placed_ = false;  // rank_ and size_ came from the launcher's environment
    mutable std::mutex mu_;
    mutable std::condition_variable cv_;
    // Under mu_: set once by the MPI thread (started_), then the call it runs (task_).
    uint32_t rank_ = 0, size_ = 1;
    bool started_ = false, agreed_ = false, stop_ = false;
    std::string why_;
    std::function<void()> task_;
    std::unique_ptr<Comm> comm_;  // the MPI thread's
    std::thread thread_;
};

}  // namespace

}  // namespace sonde::mpi

// The module's one entry point (ranks_module.cpp loads it): a new Ranks for the command line's
// hash, or nullptr when it cannot be made. The caller owns it (its virtual destructor is the
// module's, which stays loaded).
extern "C" __attribute__((visibility("default"))) sonde::mpi::Ranks *sonde_mpi_module_start(
    uint64_t hash) noexcept {
    try {
        return new sonde::mpi::MpiRanks(hash);
    } catch (...) {
        return nullptr;
    }
}
