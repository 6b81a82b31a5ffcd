// Parallel decoding of one shard in blocks (see block_decode.h).
#include "trace/block_decode.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <system_error>

#include "core/huge_pages.h"

namespace sonde::trace {

// ---- BlockTapOut, TapArena ----

uint64_t *BlockTapOut::scratch_words(size_t n) {
    if (scratch_cap_ < n) {
        if (n > SIZE_MAX / 9) throw std::bad_alloc();
        scratch_.reset();
        scratch_cap_ = 0;
        scratch_.reset(new unsigned char[n * 9]);
        scratch_cap_ = n;
    }
    return reinterpret_cast<uint64_t *>(scratch_.get());
}

BlockTapOut BlockTapOut::take() noexcept {
    BlockTapOut r;
    r.words = std::exchange(words, nullptr);
    r.bytes = std::exchange(bytes, nullptr);
    r.count = std::exchange(count, 0);
    r.whole = std::exchange(whole, false);
    r.storage = std::move(storage);
    return r;
}

TapArena::~TapArena() {
    // Cuts still alive find no arena (weak_ptr) and free their slab themselves.
    current_.reset();
    for (unsigned char *p : free_) core::huge_free(p, kSlabBytes);
}

void TapArena::give_back(unsigned char *slab) noexcept {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(slab);  // room reserved when the slab was mapped
}

size_t TapArena::slabs() {
    std::lock_guard<std::mutex> g(mu_);
    return slabs_;
}

// A slab's deleter takes mu_ (give_back), so no shared_ptr to a slab is released or made while
// mu_ is held: out->storage is emptied first, and the slab replaced is released after.
void TapArena::cut(size_t n, BlockTapOut *out) {
    out->storage.reset();
    out->words = nullptr;
    out->bytes = nullptr;
    if (n == 0) return;
    if (n > (SIZE_MAX - 7) / 9) throw std::bad_alloc();
    const size_t need = (n * 9 + 7) & ~size_t{7};  // the next cut's words stay 8-byte aligned
    unsigned char *base = nullptr;
    if (need > kSlabBytes) {
        // A region of its own, unmapped with its cut.
        auto own = std::make_shared<core::HugeArray<unsigned char>>(need);
        base = own->get();
        out->storage = std::shared_ptr<void>(own, base);
    } else {
        {
            std::lock_guard<std::mutex> g(mu_);
            if (current_ != nullptr && kSlabBytes - used_ >= need) {
                base = current_.get() + used_;
                used_ += need;
                out->storage = std::shared_ptr<void>(current_, base);
            }
        }
        if (base == nullptr) {
            unsigned char *slab = nullptr;
            {
                std::lock_guard<std::mutex> g(mu_);
                if (!free_.empty()) {
                    slab = free_.back();
                    free_.pop_back();
                }
            }
            if (slab == nullptr) {
                slab = static_cast<unsigned char *>(core::huge_alloc(kSlabBytes));
                try {
                    std::lock_guard<std::mutex> g(mu_);
                    free_.reserve(slabs_ + 1);  // so that give_back never allocates
                    ++slabs_;
                } catch (...) {
                    core::huge_free(slab, kSlabBytes);
                    throw;
                }
            }
            // On failure the shared_ptr calls the deleter, which gives the slab back.
            std::weak_ptr<TapArena> arena = weak_from_this();
            std::shared_ptr<unsigned char> fresh(slab, [arena](unsigned char *p) {
                if (std::shared_ptr<TapArena> a = arena.lock())
                    a->give_back(p);
                else
                    core::huge_free(p, kSlabBytes);
            });
            {
                std::lock_guard<std::mutex> g(mu_);
                if (current_ != nullptr && kSlabBytes - used_ >= need) {
                    // Another thread put in a slab meanwhile and it has room: cut that one, and
                    // keep ours for later (released below, unlocked, into free_), rather than
                    // leave the rest of that slab unused.
                    base = current_.get() + used_;
                    used_ += need;
                } else {
                    std::swap(current_, fresh);  // the slab replaced is released below, unlocked
                    base = current_.get();
                    used_ = need;
                }
                out->storage = std::shared_ptr<void>(current_, base);
            }
        }
    }
    out->words = reinterpret_cast<uint64_t *>(base);
    out->bytes = base + n * 8;
}

// ---- DecodedBlock ----

void DecodedBlock::reserve_records(size_t n) {
    if (records_cap >= n) return;
    records.reset();
    records_cap = 0;
    records = core::HugeArray<sonde_memref_t>(n);
    records_cap = records.room();
}

void DecodedBlock::reserve_bytes(size_t n) {
    if (bytes_cap >= n) return;
    bytes.reset();
    bytes_cap = 0;
    bytes.reset(new unsigned char[n]);
    bytes_cap = n;
}

void DecodedBlock::reset_result() {
    count = 0;
    lines = 0;
    carry_until = 0;
    carry_out = 0;
    sets_carry = false;
    failed = false;
    fail_status = SONDE_STATUS_SUCCESS;
    fail_pos = 0;
    fail_what.clear();
    tapped = false;
}

// ---- BlockDecoder ----

BlockDecoder::BlockDecoder(BlockJobs &jobs, unsigned threads)
    : jobs_(jobs), threads_(threads < 1 ? 1 : threads), slots_(slots(threads)), spread_(threads_) {}

BlockDecoder::~BlockDecoder() {
    {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    for (std::thread &t : workers_) t.join();
}

bool BlockDecoder::work(std::unique_lock<std::mutex> &lk, uint64_t want, PieceBuffer &piece) {
    Slot *job = nullptr;
    // The block the caller waits for, when it only needs decoding.
    if (want != UINT64_MAX && want < filled_seq_ && slot_of(want).state == State::kFilled)
        job = &slot_of(want);
    if (job == nullptr && !filling_ && !input_end_ && slot_of(filled_seq_).state == State::kFree) {
        filling_ = true;
        Slot &slot = slot_of(filled_seq_);
        slot.state = State::kBusy;  // reserved: no other job touches it
        slot.block.seq = filled_seq_;
        lk.unlock();
        bool last = false, got = false;
        sonde_status_t end_status = SONDE_STATUS_SUCCESS;
        std::string end_error;
        try {
            slot.block.reset_result();
            got = jobs_.fill(slot.block, &last, &end_status, &end_error);
        } catch (const std::bad_alloc &) {
            got = false;
            end_status = SONDE_STATUS_ERROR_OUT_OF_MEMORY;
            end_error = "out of memory reading the input";
        }
        lk.lock();
        filling_ = false;
        if (got) {
            slot.state = State::kFilled;
            ++filled_seq_;
        } else {
            slot.state = State::kFree;
        }
        if (!got || last) {
            input_end_ = true;
            end_seq_ = filled_seq_;
            end_status_ = end_status;
            end_error_ = std::move(end_error);
        }
        spread_.spread();
        cv_.notify_all();
        return true;
    }
    if (job == nullptr) {
        for (uint64_t s = consumed_seq_; s < filled_seq_; ++s)
            if (slot_of(s).state == State::kFilled) {
                job = &slot_of(s);
                break;
            }
    }
    if (job == nullptr) return false;
    job->state = State::kBusy;
    lk.unlock();
    bool tapped_in_decode = false;  // the jobs ran the tap as they decoded (decode_tapped)
    job->block.tapped = false;
    try {
        if (tap_ != nullptr) tapped_in_decode = jobs_.decode_tapped(job->block, *tap_, piece);
        if (!tapped_in_decode) jobs_.decode(job->block);
    } catch (const std::bad_alloc &) {
        tapped_in_decode = false;
        job->block.count = 0;
        job->block.failed = true;
        job->block.fail_status = SONDE_STATUS_ERROR_OUT_OF_MEMORY;
        job->block.fail_what = "out of memory decoding the input";
    }
    if (tap_ != nullptr && !tapped_in_decode) {
        // The records before a fault are handed out too, so a failed block is tapped as well.
        job->block.tapped = false;
        try {
            tap_->convert(job->block.records.get(), job->block.count, &job->block.tap);
            job->block.tapped = true;
        } catch (const std::bad_alloc &) {
            // The reading thread uses the records instead.
        }
    }
    lk.lock();
    job->state = State::kDecoded;
    spread_.spread();
    cv_.notify_all();
    return true;
}

void BlockDecoder::worker(unsigned id) {
    PieceBuffer piece;  // this worker's
    std::unique_lock<std::mutex> lk(mu_);
    spread_.began(id);
    while (!stop_)
        if (!work(lk, UINT64_MAX, piece)) spread_.wait(id, cv_, lk);
}

DecodedBlock *BlockDecoder::next() {
    if (done_) return nullptr;
    std::unique_lock<std::mutex> lk(mu_);
    if (returned_) {
        slot_of(consumed_seq_ - 1).state = State::kFree;
        returned_ = false;
        spread_.spread();
        cv_.notify_all();
    }
    if (workers_.empty() && threads_ > 1) {
        try {
            for (unsigned i = 1; i < threads_; ++i) {
                workers_.emplace_back([this, i] { worker(i); });
                spread_.started(i, workers_.back());
            }
        } catch (const std::system_error &) {
            // No more threads: the reading thread does the jobs of the missing ones.
        }
    }
    for (;;) {
        if (input_end_ && consumed_seq_ == end_seq_) {
            done_ = true;
            status_ = end_status_;
            error_ = end_error_;
            return nullptr;
        }
        Slot &s = slot_of(consumed_seq_);
        if (s.state == State::kDecoded && s.block.seq == consumed_seq_) break;
        if (!work(lk, consumed_seq_, reader_piece_)) spread_.wait(0, cv_, lk);
    }
    DecodedBlock &b = slot_of(consumed_seq_).block;
    ++consumed_seq_;
    returned_ = true;
    lk.unlock();
    std::string message = jobs_.finish(b);
    if (b.failed) {
        done_ = true;
        status_ = b.fail_status;
        if (status_ == SONDE_STATUS_SUCCESS) status_ = SONDE_STATUS_ERROR_FORMAT;
        error_ = std::move(message);
    }
    return &b;
}

// ---- StreamBlocks ----

sonde_status_t StreamBlocks::open(const Source *source, std::string *error) {
    const sonde_status_t s = stream_.open(source, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    tail_.reset(new unsigned char[block_bytes_]);
    return SONDE_STATUS_SUCCESS;
}

sonde_status_t StreamBlocks::open_range(const Source *source, uint64_t begin, uint64_t end, uint64_t carry,
                                        std::string *error) {
    const sonde_status_t s = stream_.open_range(source, begin, end, error);
    if (s != SONDE_STATUS_SUCCESS) return s;
    tail_.reset(new unsigned char[block_bytes_]);
    next_offset_ = begin;
    carry_ = carry;
    source_ = source;
    range_begin_ = begin;
    lines_before_known_ = begin == 0;
    return SONDE_STATUS_SUCCESS;
}

namespace {

// Lines of `source` before byte `end`: its newlines there. An unreadable part counts what was
// read (the message it is for reports a failure already).
uint64_t lines_before(const Source &source, uint64_t end) {
    constexpr size_t kPiece = 1u << 20;
    std::unique_ptr<unsigned char[]> buf(new unsigned char[kPiece]);
    uint64_t lines = 0;
    std::string ignored;
    for (uint64_t at = 0; at < end;) {
        size_t got = 0;
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kPiece, end - at));
        if (source.read_at(at, buf.get(), want, &got, &ignored) != SONDE_STATUS_SUCCESS || got == 0) break;
        lines += static_cast<uint64_t>(std::count(buf.get(), buf.get() + got, '\n'));
        at += got;
    }
    return lines;
}

}  // namespace

uint64_t StreamBlocks::memory(const StreamFormat &format, unsigned threads, size_t block_bytes) {
    const uint64_t per_slot = block_bytes + format.max_records(block_bytes) * sizeof(sonde_memref_t);
    return BlockDecoder::slots(threads) * per_slot + block_bytes;
}

bool StreamBlocks::fill(DecodedBlock &b, bool *last, sonde_status_t *end_status, std::string *end_error) {
    if (ended_) return false;
    b.reserve_bytes(block_bytes_);
    b.offset = next_offset_;
    std::memcpy(b.bytes.get(), tail_.get(), tail_len_);
    size_t len = tail_len_;
    bool eof = false;
    while (len < block_bytes_) {
        const size_t got = stream_.fill(b.bytes.get() + len, block_bytes_ - len);
        if (got == 0) {
            eof = true;  // the end of the stream, or an error (stream_.status())
            break;
        }
        len += got;
    }
    const bool broken = stream_.status() != SONDE_STATUS_SUCCESS;
    const size_t cut = format_.cut(b.bytes.get(), len, eof && !broken);
    const size_t tail = len - cut;
    b.len = cut;
    next_offset_ += cut;
    std::memcpy(tail_.get(), b.bytes.get() + cut, tail);
    tail_len_ = tail;
    if (broken) {
        *end_status = stream_.status();
        *end_error = stream_.error();
    } else if ((eof && tail != 0) || tail > format_.max_record_bytes()) {
        *end_status = SONDE_STATUS_ERROR_FORMAT;
        *end_error = format_.tail_error(next_offset_, tail);
    }
    ended_ = broken || eof || *end_status != SONDE_STATUS_SUCCESS;
    *last = ended_;
    // Room for a full block, whatever this one's cut: a slot then allocates its records once.
    // Sized by each cut, a slot whose next cut was a few bytes longer dropped its array and
    // faulted in a new one (the gzip lackey trace at two threads: 14 arrays of 2 MiB for 6 slots).
    b.reserve_records(format_.max_records(block_bytes_));
    return cut != 0;
}

void StreamBlocks::decode(DecodedBlock &b) const { format_.decode(b); }

std::string StreamBlocks::finish(DecodedBlock &b) {
    if (b.failed && !lines_before_known_) {
        lines_ += lines_before(*source_, range_begin_);
        lines_before_known_ = true;
    }
    std::string message = format_.finish(b, &carry_, lines_);
    lines_ += b.lines;
    return message;
}

// ---- BlockShardReader ----

BlockShardReader::BlockShardReader(std::unique_ptr<BlockJobs> jobs, unsigned threads,
                                   sonde_status_t failed_status, const std::string &failed_error)
    : jobs_(std::move(jobs)) {
    if (failed_status != SONDE_STATUS_SUCCESS) {
        status_ = failed_status;
        error_ = failed_error;
        return;
    }
    decoder_ = std::make_unique<BlockDecoder>(*jobs_, threads);
}

bool BlockShardReader::advance() {
    if (decoder_ == nullptr) return false;
    while (block_ == nullptr || pos_ == block_->count) {
        block_ = decoder_->next();
        pos_ = 0;
        if (block_ != nullptr) continue;
        if (decoder_->status() != SONDE_STATUS_SUCCESS) {
            status_ = decoder_->status();
            error_ = decoder_->error();
        }
        decoder_.reset();  // the shard is done: hold nothing
        jobs_.reset();
        return false;
    }
    return true;
}

size_t BlockShardReader::read(sonde_memref_t *out, size_t max) {
    view_tap_ = nullptr;
    size_t n = 0;
    while (n < max && advance()) {
        const size_t k = std::min(max - n, block_->count - pos_);
        std::memcpy(out + n, block_->records.get() + pos_, k * sizeof(sonde_memref_t));
        pos_ += k;
        n += k;
    }
    return n;
}

size_t BlockShardReader::view(const sonde_memref_t **out) {
    view_tap_ = nullptr;
    if (!advance()) return 0;
    *out = block_->records.get() + pos_;
    if (pos_ == 0 && block_->tapped) view_tap_ = &block_->tap;
    const size_t k = block_->count - pos_;
    pos_ = block_->count;
    return k;
}

}  // namespace sonde::trace
