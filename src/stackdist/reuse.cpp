// Reuse-distance engine of the stackdist concept: exact, parallel exact (PARDA-style) and
// SHARDS fixed-rate / fixed-size batches into a Histogram.
#include "stackdist/reuse.h"

#include <algorithm>
#include <cmath>

namespace sonde::stackdist {

namespace {

constexpr double kHashRange = 4294967296.0;  // 2^32
// Below this many accesses per worker the threads cost more than they save.
constexpr std::size_t kMinParallelChunk = 1 << 16;

inline unsigned type_of(const uint8_t *is_write, std::size_t i) {
    return is_write != nullptr && is_write[i] != 0 ? 1u : 0u;
}

}  // namespace

namespace {
// splitmix64's finalizer: a bijection of 64-bit words with full avalanche.
inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
}  // namespace

uint64_t shards_key(uint64_t seed) { return mix64(seed + 0x9E3779B97F4A7C15ull); }

uint64_t fixed_rate_threshold(double rate) { return static_cast<uint64_t>(std::llround(rate * kHashRange)); }

uint32_t shards_hash(uint64_t line, uint64_t key) { return static_cast<uint32_t>(mix64(line ^ key) >> 32); }

Reuse::Reuse(const ReuseConfig &cfg)
    : cfg_(cfg), stack_(cfg.initial_capacity, cfg.verify), key_(shards_key(cfg.seed)) {
    if (cfg_.mode == Mode::kFixedRate)
        threshold_ = fixed_rate_threshold(cfg_.sample_rate);
    else
        threshold_ = static_cast<uint64_t>(kHashRange);  // fixed size starts at R = 1
    if (cfg_.workers == 0) cfg_.workers = 1;
}

double Reuse::sample_rate() const {
    return cfg_.mode == Mode::kExact ? 1.0 : static_cast<double>(threshold_) / kHashRange;
}

bool Reuse::add(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    const Span one{lines, is_write, n};
    return add_spans(&one, 1, h);
}

bool Reuse::add_spans(const Span *spans, std::size_t count, Histogram &h) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < count; ++i) n += spans[i].n;
    h.accesses += n;
    bool ok = true;
    switch (cfg_.mode) {
        case Mode::kExact:
            if (!cfg_.verify && cfg_.workers > 1 && n >= kMinParallelChunk * cfg_.workers) {
                add_parallel(spans, count, n, h);
            } else {
                for (std::size_t i = 0; i < count; ++i)
                    ok = add_exact(spans[i].lines, spans[i].is_write, spans[i].n, h) && ok;
            }
            h.sampled += n;
            break;
        case Mode::kFixedRate:
            // Each span's accesses count in h.accesses only when it is reached: the cap of a
            // scaled distance is the access's position in the stream.
            h.accesses -= n;
            for (std::size_t i = 0; i < count; ++i) {
                h.accesses += spans[i].n;
                add_fixed_rate(spans[i].lines, spans[i].is_write, spans[i].n, h);
            }
            break;
        case Mode::kFixedSize:
            // Fixed size caps a distance at the accesses counted up to the end of the batch:
            // all spans' accesses are counted already.
            for (std::size_t i = 0; i < count; ++i)
                add_fixed_size(spans[i].lines, spans[i].is_write, spans[i].n, h);
            break;
    }
    h.sampling = cfg_.mode != Mode::kExact;
    h.sample_rate = sample_rate();
    h.set_adjustment();
    return ok;
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

namespace {

// The accesses [from, to) of the spans' concatenation, as spans (the first and last cut).
std::vector<Span> span_range(const Span *spans, std::size_t count, std::size_t from, std::size_t to) {
    std::vector<Span> out;
    std::size_t at = 0;  // index of spans[i]'s first access in the concatenation
    for (std::size_t i = 0; i < count && at < to; at += spans[i].n, ++i) {
        const std::size_t lo = std::max(from, at), hi = std::min(to, at + spans[i].n);
        if (lo >= hi) continue;
        const std::size_t off = lo - at;
        out.push_back({spans[i].lines + off, spans[i].is_write != nullptr ? spans[i].is_write + off : nullptr,
                       hi - lo});
    }
    return out;
}

}  // namespace

std::size_t Reuse::bytes() const {
    std::size_t n = stack_.bytes() + own_.bytes();
    for (const std::unique_ptr<Stack> &s : chunk_stacks_) n += s->bytes();
    for (const Part &p : parts_)
        n += p.hist.bytes() + p.lines.capacity() * sizeof(uint64_t) + p.writes.capacity() +
             (p.order.capacity() + p.rank.capacity()) * sizeof(uint32_t);
    return n;
}

void Reuse::add_parallel(const Span *spans, std::size_t count, std::size_t n, Histogram &h) {
    // Chunk 0 runs on this thread against the global stack; chunk c > 0 runs on worker c with a
    // private stack, resolving every access whose previous access lies inside the chunk (that
    // distance is the same globally) and listing the rest - the first access of each of its
    // lines - in order, with each line's recency rank at the end of the chunk. Each chunk in
    // turn is then merged into the global stack (Stack::merge_*): a small chunk's lines are
    // looked up on this thread, which then counts the first accesses' distances in order; a
    // large one's are looked up, counted and cleared by every thread (merge_parallel), and this
    // thread adds the distances to the histogram and the new lines to the stack. The global
    // stack ends exactly as the serial one would. Chunks are cut from the concatenation of the
    // spans, so a chunk may take the end of one span and the start of the next.
    const unsigned k = cfg_.workers;
    if (!pool_) pool_ = std::make_unique<Pool>(k - 1);
    // Ranks and the merge's offsets are 32-bit: very large batches go in pieces.
    const std::size_t piece = std::size_t{k} << 31;
    for (std::size_t off = 0; off < n; off += piece) {
        const std::size_t len = std::min(piece, n - off);
        add_parallel_piece(span_range(spans, count, off, off + len), len, h);
    }
}

void Reuse::add_parallel_piece(const std::vector<Span> &spans, std::size_t n, Histogram &h) {
    const unsigned k = cfg_.workers;
    if (parts_.size() + 1 < k) parts_.resize(k - 1);
    std::vector<std::size_t> begin(k + 1);
    for (unsigned i = 0; i <= k; ++i) begin[i] = n / k * i;
    begin[k] = n;

    // Grown now, on every thread, for as many new lines as the batch before added: the table's
    // growth (its fill and page faults) then falls in the batch's serial part less often. A
    // guess too high leaves the table one doubling larger than the lines need until they catch
    // up; one too low lets the batch grow it as the serial mode does.
    const uint64_t lines_before = stack_.size();
    stack_.reserve_lines(lines_before + batch_new_lines_, pool_.get(), k);
    // Read before the workers start: this thread updates stack_ while they run.
    const uint64_t hint = stack_.size() + 1024;
    while (chunk_stacks_.size() + 1 < k) chunk_stacks_.push_back(std::make_unique<Stack>());
    pool_->run(k, [&](unsigned c) {
        const std::vector<Span> mine = span_range(spans.data(), spans.size(), begin[c], begin[c + 1]);
        if (c == 0) {
            for (const Span &s : mine) stack_.access_many(s.lines, s.is_write, s.n, h);
            return;
        }
        Part &p = parts_[c - 1];
        p.hist.zero();
        p.lines.clear();
        p.writes.clear();
        const std::size_t len = begin[c + 1] - begin[c];
        Stack &local = *chunk_stacks_[c - 1];
        local.reset(std::min<uint64_t>(len, hint));
        std::vector<uint32_t> firsts;
        for (const Span &s : mine) {
            firsts.clear();
            local.access_chunk(s.lines, s.is_write, s.n, p.hist, firsts);
            for (const uint32_t f : firsts) {
                p.lines.push_back(s.lines[f]);
                p.writes.push_back(s.is_write != nullptr ? s.is_write[f] : 0);
            }
        }
        const std::size_t m = p.lines.size();
        p.order.resize(m);
        for (std::size_t j = 0; j < m; ++j) p.order[j] = static_cast<uint32_t>(j);
        p.rank.resize(m);
        local.chunk_ranks(p.lines.data(), p.order.data(), m, p.rank.data());
    });

    for (unsigned c = 1; c < k; ++c) {
        Part &p = parts_[c - 1];
        const std::size_t m = p.lines.size();
        const uint64_t base = stack_.merge_reserve(m);
        stack_.merge_parallel(p.lines.data(), p.writes.data(), p.order.data(), p.rank.data(), m, base,
                              pool_.get(), k, &h);
        h.merge(p.hist);
    }
    batch_new_lines_ = stack_.size() - lines_before;
}

uint64_t shards_scaled(uint64_t d, double inv, uint64_t position) {
    const double e = static_cast<double>(d) * inv;
    return e >= static_cast<double>(position) ? position : static_cast<uint64_t>(e);
}

double fixed_rate_scale(uint64_t threshold) {
    return kHashRange / static_cast<double>(threshold == 0 ? 1 : threshold);
}

void Reuse::add_fixed_rate(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    // SHARDS fixed rate: a line is sampled iff its hash is below R * 2^32; a sampled distance d
    // estimates d / R in the full trace, capped by the access's position in the stream (no
    // distance exceeds the accesses before it), and each sample stands for 1 / R accesses:
    // counted as one unit in a histogram whose scale is 1 / R.
    const uint64_t thr = threshold_;
    const double inv = fixed_rate_scale(thr);
    const uint64_t key = key_;
    const uint64_t before = h.accesses - n;  // add() counted the batch already
    h.scale = inv;
    uint64_t taken = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (shards_hash(lines[i], key) >= thr) continue;
        const uint64_t d = stack_.access(lines[i]);
        ++taken;
        h.add_unit(d == kInfinity ? d : shards_scaled(d, inv, before + i + 1), type_of(is_write, i));
    }
    h.sampled += taken;
    h.sample_weight = static_cast<double>(h.sampled) * inv;
}

void Reuse::add_fixed_size(const uint64_t *lines, const uint8_t *is_write, std::size_t n, Histogram &h) {
    // SHARDS fixed size: keep at most sample_size lines; when a new line overflows the set, the
    // threshold drops to the largest hash kept and every line at or above it is evicted.
    const uint64_t key = key_;
    const uint64_t cap = std::max<uint64_t>(cfg_.sample_size, 1);
    for (std::size_t i = 0; i < n; ++i) {
        const uint32_t hv = shards_hash(lines[i], key);
        if (hv >= threshold_) continue;
        const double inv = kHashRange / static_cast<double>(threshold_);
        const uint64_t d = stack_.access(lines[i]);
        ++h.sampled;
        h.sample_weight += inv;
        // Fixed size: the cap is the accesses counted up to the end of the batch.
        h.add_weight(d == kInfinity ? d : shards_scaled(d, inv, h.accesses), type_of(is_write, i), inv);
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

// One pass over the distances for both the histogram and the MRC (a histogram of millions of
// distinct distances is read once, into vectors reserved to their final size). Every count and
// ratio is computed by the same expressions as Histogram::count_at and Histogram::mrc, so the
// doubles are those bit for bit.
ReuseResult Reuse::result_of(const Histogram &h) {
    ReuseResult r;
    r.accesses = h.accesses;
    r.infinite = round_count(h.total_infinite());
    r.sampled = h.sampling;
    r.sample_rate = h.sample_rate;
    const uint64_t n = h.num_distances();
    const uint32_t *u0 = h.units[0].data(), *u1 = h.units[1].data();
    const double *w0 = h.weights[0].data(), *w1 = h.weights[1].data();
    const uint64_t nu = h.units[0].size(), nw = h.weights[0].size();
    auto count = [&](uint64_t d) {
        const double reads = (static_cast<double>(d < nu ? u0[d] : 0u) + (d < nw ? w0[d] : 0.0)) * h.scale +
                             (d == 0 ? h.adjust : 0.0);
        const double writes = (static_cast<double>(d < nu ? u1[d] : 0u) + (d < nw ? w1[d] : 0.0)) * h.scale;
        return reads + writes;
    };
    const double t = h.total();
    if (nw == 0 && h.scale == 1.0 && h.adjust == 0.0) {
        // Exact counts (no SHARDS weight, no wrapped counter): integers, whose doubles are the
        // ones above.
        uint64_t distinct = 0;
        for (uint64_t d = 0; d < nu; ++d) distinct += (static_cast<uint64_t>(u0[d]) + u1[d]) != 0;
        r.histogram.reserve(distinct);
        if (t > 0) {
            r.mrc.reserve(distinct + 1);
            r.mrc.emplace_back(0, 1.0);
        }
        double hits = 0;
        for (uint64_t d = 0; d < nu; ++d) {
            const uint64_t c = static_cast<uint64_t>(u0[d]) + u1[d];
            if (c == 0) continue;
            r.histogram.emplace_back(d, c);
            if (t <= 0) continue;
            hits += static_cast<double>(c);
            r.mrc.emplace_back(d + 1, std::min(1.0, std::max(0.0, 1.0 - hits / t)));
        }
        return r;
    }
    uint64_t positive = 0;  // a rounded count is at least 1: at most this many
    for (uint64_t d = 0; d < n; ++d) positive += count(d) > 0;
    r.histogram.reserve(positive);
    if (t <= 0) {
        for (uint64_t d = 0; d < n; ++d)
            if (const uint64_t c = round_count(count(d))) r.histogram.emplace_back(d, c);
        return r;
    }
    r.mrc.reserve(positive + 1);
    r.mrc.emplace_back(0, 1.0);
    double hits = 0;
    for (uint64_t d = 0; d < n; ++d) {
        const double c = count(d);
        if (const uint64_t rc = round_count(c)) r.histogram.emplace_back(d, rc);
        if (c <= 0) continue;
        hits += c;
        r.mrc.emplace_back(d + 1, std::min(1.0, std::max(0.0, 1.0 - hits / t)));
    }
    return r;
}

}  // namespace sonde::stackdist
