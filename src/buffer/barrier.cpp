// The process-wide memory barrier of the busy handshake (buffer.h): membarrier when the kernel
// has it, else an mprotect of a locked page, which makes the kernel interrupt every CPU running
// this process. Called only by destroy paths, never by producers.
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>

#include "buffer/buffer.h"

namespace sonde::buffer {

namespace {

enum class BarrierKind { kPrivateExpedited, kGlobal, kMprotect };
BarrierKind g_barrier = BarrierKind::kMprotect;
void *g_barrier_page = nullptr;
std::mutex g_barrier_mu;
bool g_reregister = false;  // set in a forked child; read by barrier_init (Runtime::mu held)

}  // namespace

void barrier_forked_child() {
    new (&g_barrier_mu) std::mutex();
    g_reregister = true;
}

namespace {

// Picks the strongest barrier the kernel offers and registers for it.
void choose_barrier() {
    const long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        g_barrier = BarrierKind::kPrivateExpedited;
    } else if (q > 0 && (q & MEMBARRIER_CMD_GLOBAL)) {
        g_barrier = BarrierKind::kGlobal;
    } else {
        // Changing a locked page's protection makes the kernel shoot down its TLB entry
        // on every CPU running this process, which serialises them: a full barrier.
        g_barrier = BarrierKind::kMprotect;
        if (g_barrier_page == nullptr || g_barrier_page == MAP_FAILED) {
            g_barrier_page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (g_barrier_page != MAP_FAILED) mlock(g_barrier_page, 4096);
        }
    }
}

}  // namespace

void barrier_init() {
    static std::once_flag once;
    std::call_once(once, choose_barrier);
    // A membarrier registration belongs to the process that made it: a forked child
    // registers again (idempotent) before it destroys anything.
    if (g_reregister) {
        g_reregister = false;
        choose_barrier();
    }
}

void process_barrier() {
#if defined(SONDE_TSAN)
    // Under ThreadSanitizer both sides of the handshake are seq_cst atomics (buffer.h).
    (void)g_barrier_mu;
#else
    switch (g_barrier) {
        case BarrierKind::kPrivateExpedited:
            if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
            break;
        case BarrierKind::kGlobal:
            if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
            break;
        case BarrierKind::kMprotect: break;
    }
    std::lock_guard<std::mutex> g(g_barrier_mu);
    if (g_barrier_page && g_barrier_page != MAP_FAILED) {
        static_cast<volatile char *>(g_barrier_page)[0] = 1;
        mprotect(g_barrier_page, 4096, PROT_READ);
        mprotect(g_barrier_page, 4096, PROT_READ | PROT_WRITE);
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace sonde::buffer
