// Reuse::add_spans: a batch given as several spans gives the answers add() gives for their
// concatenation, in every mode, for 1 to 4 workers, whatever the cuts (empty spans, one-access
// spans, cuts inside a parallel chunk, spans without write flags), over several batches.
// Linked with the stackdist sources (an internal C++ interface, not part of libsonde's ABI).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <random>
#include <vector>

#include "stackdist/reuse.h"

using sonde::stackdist::Mode;
using sonde::stackdist::Reuse;
using sonde::stackdist::ReuseConfig;
using sonde::stackdist::ReuseResult;
using sonde::stackdist::Span;

namespace {

int failures = 0;

void check(bool ok, const char *what, unsigned workers, int mode) {
    if (ok) return;
    std::fprintf(stderr, "FAIL: %s (workers %u, mode %d)\n", what, workers, mode);
    ++failures;
}

// Lines with locality: a working set that drifts, hot lines, and cold sweeps.
std::vector<uint64_t> make_lines(std::size_t n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> v(n);
    uint64_t base = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const uint64_t r = rng();
        if (i % 4096 == 0) base += r % 512;
        switch (r % 8) {
            case 0: v[i] = base + 1000000 + i; break;  // cold
            case 1:
            case 2: v[i] = r % 16; break;  // hot
            default: v[i] = base + (r >> 8) % 20000; break;
        }
    }
    return v;
}

// Cuts [0, n) into spans: zero-length and one-access spans among long ones.
std::vector<Span> cut(const uint64_t *lines, const uint8_t *writes, std::size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<Span> spans;
    std::size_t at = 0;
    while (at < n) {
        const uint32_t r = rng();
        std::size_t len = r % 5 == 0 ? r % 2 : 1 + r % 90000;
        if (len > n - at) len = n - at;
        spans.push_back({lines + at, writes != nullptr ? writes + at : nullptr, len});
        at += len;
    }
    spans.push_back({lines + n, writes != nullptr ? writes + n : nullptr, 0});
    return spans;
}

// The results, and the reads and writes counted apart at each distance (which the results add).
bool same(const Reuse &x, const Reuse &y) {
    const ReuseResult a = x.result(), b = y.result();
    if (!(a.accesses == b.accesses && a.infinite == b.infinite && a.histogram == b.histogram &&
          a.mrc == b.mrc && a.sampled == b.sampled && a.sample_rate == b.sample_rate))
        return false;
    const sonde::stackdist::Histogram &g = x.histogram(), &h = y.histogram();
    for (std::size_t d = 0; d < std::max(g.num_distances(), h.num_distances()); ++d)
        if (g.reads_at(d) != h.reads_at(d) || g.writes_at(d) != h.writes_at(d)) return false;
    return g.infinite[0] == h.infinite[0] && g.infinite[1] == h.infinite[1];
}

void run_case(Mode mode, unsigned workers, bool with_writes) {
    const std::size_t n = 600000;  // each half above the parallel threshold of 4 workers (64 K each)
    const std::vector<uint64_t> lines = make_lines(n, 7 + workers);
    std::vector<uint8_t> writes(n);
    for (std::size_t i = 0; i < n; ++i) writes[i] = (lines[i] * 2654435761u >> 7) % 3 == 0;
    const uint8_t *w = with_writes ? writes.data() : nullptr;

    ReuseConfig cfg;
    cfg.mode = mode;
    cfg.workers = mode == Mode::kExact ? workers : 1;
    cfg.sample_rate = 0.25;
    cfg.sample_size = 3000;
    cfg.seed = 11;
    ReuseConfig serial = cfg;
    serial.workers = 1;

    // Two batches each way: the second merges into a stack the first filled.
    Reuse whole(serial), parts(cfg);
    const std::size_t half = n / 2 + 12345;
    whole.add(lines.data(), w, half);
    whole.add(lines.data() + half, w != nullptr ? w + half : nullptr, n - half);
    const std::vector<Span> a = cut(lines.data(), w, half, workers);
    const std::vector<Span> b =
        cut(lines.data() + half, w != nullptr ? w + half : nullptr, n - half, workers + 100);
    parts.add_spans(a.data(), a.size());
    parts.add_spans(b.data(), b.size());
    check(same(whole, parts), "spans differ from one array", workers, static_cast<int>(mode));
    check(whole.result().accesses == n, "accesses counted", workers, static_cast<int>(mode));

    // One span: the same as add() of it.
    Reuse one(cfg);
    const Span all{lines.data(), w, n};
    one.add_spans(&all, 1);
    Reuse ref(serial);
    ref.add(lines.data(), w, n);
    check(same(one, ref), "one span differs from add()", workers, static_cast<int>(mode));
}

}  // namespace

int main() {
    for (unsigned workers : {1u, 2u, 3u, 4u}) run_case(Mode::kExact, workers, workers != 3);
    run_case(Mode::kFixedRate, 1, true);
    run_case(Mode::kFixedSize, 1, true);
    if (failures != 0) return 1;
    std::printf("reuse spans: all cases equal\n");
    return 0;
}
