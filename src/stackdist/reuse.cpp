// Reuse-distance engine of the stackdist concept: exact, parallel exact (PARDA-style) and
// SHARDS fixed-rate / fixed-size batches into a Histogram.
#include "stackdist/reuse.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>

namespace sonde::stackdist {

namespace {

constexpr double kHashRange = 4294967296.0;  // 2^32
// Below this many accesses per worker the threads cost more than they save.
constexpr std::size_t kMinParallelChunk = 1 << 16;

inline unsigned type_of(const uint8_t *is_write, std::size_t i) {
    return is_write != nullptr && is_write[i] != 0 ? 1u : 0u;
}

}  // namespace

uint32_t shards_hash(uint64_t line, uint64_t seed) {
    uint64_t z = line + seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<uint32_t>(z >> 32);
}

Reuse::Reuse(const ReuseConfig &cfg) : cfg_(cfg), stack_(cfg.initial_capacity, cfg.verify) {
    if (cfg_.mode == Mode::kFixedRate)
        threshold_ = static_cast<uint64_t>(std::llround(cfg_.sample_rate * kHashRange));
    else
        threshold_ = static_cast<uint64_t>(kHashRange);  // fixed size starts at R = 1
    if (cfg_.workers == 0) cfg_.workers = 1;
}

double Reuse::sample_rate() const {
    return cfg_.mode == Mode::kExact ? 1.0 : static_cast<double>(threshold_) / kHashRange;
}

bool Reuse::add(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    h.accesses += n;
    bool ok = true;
    switch (cfg_.mode) {
    case Mode::kExact:
        if (!cfg_.verify && cfg_.workers > 1 && n >= kMinParallelChunk * cfg_.workers)
            add_parallel(lines, is_write, n, h);
        else
            ok = add_exact(lines, is_write, n, h);
        h.sampled += n;
        break;
    case Mode::kFixedRate:
        add_fixed_rate(lines, is_write, n, h);
        break;
    case Mode::kFixedSize:
        add_fixed_size(lines, is_write, n, h);
        break;
    }
    h.sampling = cfg_.mode != Mode::kExact;
    h.sample_rate = sample_rate();
    h.set_adjustment();
    return ok;
}

double Reuse::estimate_distinct(const uint64_t *lines, std::size_t n) {
    // Distinct lines by spatial sampling: keep the lines whose hash falls in 1/256 of the
    // range, count them exactly, scale up. Cheap next to the chunk it sizes.
    std::vector<uint64_t> kept;
    kept.reserve(n / 128 + 16);
    for (std::size_t i = 0; i < n; ++i)
        if (((lines[i] * 0x9E3779B97F4A7C15ull) >> 56) == 0) kept.push_back(lines[i]);
    std::sort(kept.begin(), kept.end());
    const auto unique = static_cast<double>(std::unique(kept.begin(), kept.end()) - kept.begin());
    return unique * 256.0;
}

bool Reuse::add_exact(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    if (cfg_.verify) {
        for (std::size_t i = 0; i < n; ++i)
            h.add_unit(stack_.calc_and_update(lines[i], true, nullptr), type_of(is_write, i));
        return stack_.verify_ok();
    }
    stack_.access_many(lines, is_write, n, h);
    return true;
}

void Reuse::add_parallel(const uint64_t *lines, const uint8_t *is_write, std::size_t n,
                         Histogram &h) {
    // Chunk 0 runs on this thread against the global stack; chunk k > 0 runs on worker k with a
    // private stack, resolving every access whose previous access lies inside the chunk and
    // listing the rest (first accesses in the chunk) in order. The merge, on this thread, then
    // feeds each chunk's first accesses to the global stack in order (their global distance:
    // lines more recent in earlier chunks not yet seen in this chunk, plus this chunk's lines
    // first-touched before), and finally re-touches the chunk's lines in their last-access order
    // so that the global stack ends exactly as the serial one would.
    const unsigned k = cfg_.workers;
    struct Part {
        Histogram hist;
        std::vector<std::size_t> firsts;
        std::vector<uint64_t> order;
    };
    std::vector<Part> parts(k);
    std::vector<std::size_t> begin(k + 1);
    // Balance the work: this thread runs chunk 0 and then merges every later chunk, at a cost
    // per distinct line of the chunk (a first access and a touch), while a worker runs its
    // chunk and lists its lines by recency. So chunk 0 is shorter than the others by the merge
    // cost of the later chunks, less their recency listing, estimated from the distinct lines
    // of one chunk-sized stretch (costs per distinct line measured on the uniform 1 M-line
    // trace, relative to an access: merge about 1.8, recency listing about 1.0).
    const double per = static_cast<double>(n) / k;
    const double distinct = estimate_distinct(lines + (n - static_cast<std::size_t>(per)), static_cast<std::size_t>(per));
    const double delta = (1.0 - 1.8 * (k - 1)) * distinct;  // chunk 0 length minus a later chunk's
    const double later = std::max((static_cast<double>(n) - delta) / k, 1.0);
    double first = static_cast<double>(n) - later * (k - 1);
    first = std::max(first, per / 4);
    begin[0] = 0;
    begin[1] = std::min<std::size_t>(n, static_cast<std::size_t>(first));
    for (unsigned i = 2; i < k; ++i)
        begin[i] = begin[1] + static_cast<std::size_t>(static_cast<double>(n - begin[1]) / (k - 1) * (i - 1));
    begin[k] = n;

    // Read before the workers start: this thread updates stack_ while they run.
    // The workers' stacks start at the estimated size of their chunk, so they do not rehash.
    const uint64_t hint = std::max<uint64_t>(stack_.size(), static_cast<uint64_t>(distinct * 1.1)) + 1024;
    auto run = [&](unsigned c) {
        Part &p = parts[c];
        Stack local(std::min<uint64_t>(begin[c + 1] - begin[c], hint));
        local.access_chunk(lines, is_write, begin[c], begin[c + 1], p.hist, p.firsts);
        local.recency_order(p.order);
    };
    std::vector<std::thread> threads;
    threads.reserve(k - 1);
    try {
        for (unsigned c = 1; c < k; ++c) threads.emplace_back(run, c);
    } catch (const std::system_error &) {
        // No more threads: the chunks without a worker run on this thread below.
    }
    const unsigned started = static_cast<unsigned>(threads.size()) + 1;
    stack_.access_many(lines, is_write, begin[1], h);
    for (std::thread &t : threads) t.join();
    for (unsigned c = started; c < k; ++c) run(c);

    for (unsigned c = 1; c < k; ++c) {
        Part &p = parts[c];
        stack_.access_indexed(lines, is_write, p.firsts.data(), p.firsts.size(), h);
        stack_.touch_many(p.order.data(), p.order.size());
        h.merge(p.hist);
    }
}

void Reuse::add_fixed_rate(const uint64_t *lines, const uint8_t *is_write, std::size_t n,
                           Histogram &h) {
    // SHARDS fixed rate: a line is sampled iff its hash is below R * 2^32; a sampled distance d
    // estimates d / R in the full trace and each sample stands for 1 / R accesses.
    const uint64_t thr = threshold_;
    const double inv = kHashRange / static_cast<double>(thr == 0 ? 1 : thr);
    const uint64_t seed = cfg_.seed;
    uint64_t taken = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (shards_hash(lines[i], seed) >= thr) continue;
        const uint64_t d = stack_.access(lines[i]);
        ++taken;
        h.add_weight(d == kInfinity ? d : static_cast<uint64_t>(static_cast<double>(d) * inv),
              type_of(is_write, i), inv);
    }
    h.sampled += taken;
    h.sample_weight += static_cast<double>(taken) * inv;
}

void Reuse::add_fixed_size(const uint64_t *lines, const uint8_t *is_write, std::size_t n,
                           Histogram &h) {
    // SHARDS fixed size: keep at most sample_size lines; when a new line overflows the set, the
    // threshold drops to the largest hash kept and every line at or above it is evicted.
    const uint64_t seed = cfg_.seed;
    const uint64_t cap = std::max<uint64_t>(cfg_.sample_size, 1);
    for (std::size_t i = 0; i < n; ++i) {
        const uint32_t hv = shards_hash(lines[i], seed);
        if (hv >= threshold_) continue;
        const double inv = kHashRange / static_cast<double>(threshold_);
        const uint64_t d = stack_.access(lines[i]);
        ++h.sampled;
        h.sample_weight += inv;
        h.add_weight(d == kInfinity ? d : static_cast<uint64_t>(static_cast<double>(d) * inv),
              type_of(is_write, i), inv);
        if (d != kInfinity) continue;
        heap_.emplace(hv, lines[i]);
        if (stack_.size() <= cap) continue;
        threshold_ = heap_.top().first;
        while (!heap_.empty() && heap_.top().first >= threshold_) {
            stack_.calc_and_update(heap_.top().second, false, nullptr);
            heap_.pop();
        }
    }
}

ReuseResult Reuse::result_of(const Histogram &h) {
    ReuseResult r;
    r.accesses = h.accesses;
    r.infinite = round_count(h.total_infinite());
    for (uint64_t d = 0; d < h.num_distances(); ++d) {
        const uint64_t c = round_count(h.count_at(d));
        if (c != 0) r.histogram.emplace_back(d, c);
    }
    r.mrc = h.mrc();
    r.sampled = h.sampling;
    r.sample_rate = h.sample_rate;
    return r;
}

}  // namespace sonde::stackdist
