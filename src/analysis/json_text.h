// Results JSON written as text, without a document: for a built-in tool whose results hold
// arrays of millions of numbers (reuse_distance's histogram and miss-ratio curve), building
// nlohmann::json values, dumping them, checking the text and indenting it again cost seconds
// after a parallel analysis of the same size, on one thread.
//
// The text is laid out as the analyzer prints a document (nlohmann's dump(2) layout, one level
// deep in the outer object: Analyzer::results_json's indent_json), keys in nlohmann's sorted
// order, unsigned integers in decimal and doubles by nlohmann's own shortest round-trip
// conversion (NaN and infinities as null), except that an array of pairs prints a pair a line
// ([distance, count]), not each number on a line of its own: a third of the bytes for a
// histogram of millions of distances. Large arrays are formatted in parallel pieces, kept
// as pieces (JsonPieces) until they are copied out.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/huge_pages.h"

namespace sonde::analysis {

// JSON text in pieces, written in order: the text is their concatenation, which nobody needs
// to make (the analyzer copies the pieces once, into its caller's buffer).
class JsonPieces {
public:
    // The piece being written.
    std::string &text() {
        if (pieces_.empty()) pieces_.emplace_back();
        return pieces_.back();
    }
    // Appends a finished piece; text() starts a new one after it.
    void adopt(std::string &&piece) {
        pieces_.push_back(std::move(piece));
        pieces_.emplace_back();
    }
    void append(JsonPieces &&other) {
        for (std::string &p : other.pieces_) pieces_.push_back(std::move(p));
        other.pieces_.clear();
    }
    size_t size() const {
        size_t n = 0;
        for (const std::string &p : pieces_) n += p.size();
        return n;
    }
    const std::vector<std::string> &pieces() const { return pieces_; }
    // The text in one string (a tool's results_json(), which the analyzer does not call when
    // the tool writes JsonText).
    std::string joined() const {
        std::string text;
        text.reserve(size());
        for (const std::string &p : pieces_) text += p;
        return text;
    }
    void clear() { std::vector<std::string>().swap(pieces_); }

private:
    std::vector<std::string> pieces_;
};

// What a built-in tool may offer the analyzer beyond the public table (found by dynamic_cast
// from its sonde::tool): its results JSON written straight into *out as text, `depth` levels
// deep (see above), its large arrays on up to `threads` threads. Called on the analyzer's
// thread, after the run; may throw std::bad_alloc.
class JsonText {
public:
    virtual ~JsonText() = default;
    virtual void results_json_text(JsonPieces *out, int depth, unsigned threads) = 0;
};

// Writes one number at p (room for 64 bytes) and returns its end: an unsigned integer in
// decimal, a double by nlohmann's shortest round-trip conversion, NaN and infinities as null.
template <typename T>
char *json_number(char *p, T v) {
    if constexpr (std::is_floating_point<T>::value) {
        if (!std::isfinite(v)) {
            std::memcpy(p, "null", 4);
            return p + 4;
        }
        return nlohmann::detail::to_chars(p, p + 64, v);
    } else {
        return std::to_chars(p, p + 64, v).ptr;
    }
}

template <typename T>
void json_append(std::string &out, T v) {
    char text[64];
    out.append(text, static_cast<size_t>(json_number(text, v) - text));
}

// A newline and two spaces per level.
inline void json_newline(std::string &out, int depth) {
    out += '\n';
    out.append(static_cast<size_t>(depth) * 2, ' ');
}

// `"key": ` after the newline of its level (the first member of an object, or after a comma).
inline void json_key(std::string &out, int depth, const char *key, bool first) {
    if (!first) out += ',';
    json_newline(out, depth);
    out += '"';
    out += key;
    out += "\": ";
}

// An array of pairs [a, b] at `depth` (the level of the key that holds it), one pair a line:
// "[\n" then "[a, b]" lines one level deeper, separated by commas, and "]" at `depth`
// ("[]" when empty). Pieces of the array go to up to `threads` threads when it is large; the
// text is the same.
template <typename A, typename B, typename Alloc>
void json_pairs(JsonPieces &pieces, int depth, const std::vector<std::pair<A, B>, Alloc> &v,
                unsigned threads) {
    if (v.empty()) {
        pieces.text() += "[]";
        return;
    }
    // Each pair is written into a small buffer, appended to the text when the buffer is nearly
    // full.
    auto piece = [&](std::string &text, size_t from, size_t to) {
        if (from >= to) return;
        const size_t outer = static_cast<size_t>(depth + 1) * 2;
        const size_t most = outer + 2 * 64 + 8;  // one pair's text at most
        char buffer[1 << 14];
        if (most > sizeof buffer) throw std::length_error("JSON nested too deep");
        // Room for a pair's usual text: the indentation, "[", ", ", "]", ",\n" and the numbers,
        // 12 characters for an integer (a longer one grows the string) and 24 for a double.
        const size_t numbers =
            (std::is_floating_point<A>::value ? 24 : 12) + (std::is_floating_point<B>::value ? 24 : 12);
        text.reserve(text.size() + (to - from) * (outer + 6 + numbers));
        // Tens of megabytes for a histogram of millions of distances: faulted 2 MiB at a time.
        core::huge_advise(&text[0] + text.size(), text.capacity() - text.size());
        char *p = buffer;
        for (size_t i = from; i < to; ++i) {
            if (static_cast<size_t>(buffer + sizeof buffer - p) < most) {
                text.append(buffer, static_cast<size_t>(p - buffer));
                p = buffer;
            }
            if (i != 0) *p++ = ',';
            *p++ = '\n';
            std::memset(p, ' ', outer);
            p += outer;
            *p++ = '[';
            p = json_number(p, v[i].first);
            *p++ = ',';
            *p++ = ' ';
            p = json_number(p, v[i].second);
            *p++ = ']';
        }
        text.append(buffer, static_cast<size_t>(p - buffer));
    };
    pieces.text() += '[';
    constexpr size_t kPerThread = size_t{1} << 16;
    const size_t n = std::min<size_t>(std::max(1u, threads), (v.size() + kPerThread - 1) / kPerThread);
    if (n <= 1 && v.size() < kPerThread) {
        piece(pieces.text(), 0, v.size());
    } else if (n <= 1) {
        // A piece of its own, so that reserving room for it does not copy the text before it.
        std::string text;
        piece(text, 0, v.size());
        pieces.adopt(std::move(text));
    } else {
        // Piece k to a thread of its own (piece 0 and any piece whose thread cannot start: this
        // thread). Running out of memory in a piece is rethrown here.
        const size_t step = (v.size() + n - 1) / n;
        std::vector<std::string> texts(n);
        std::vector<char> failed(n, 0), here(n, 0);
        std::vector<std::thread> workers;
        workers.reserve(n);
        auto run = [&](size_t k) {
            try {
                piece(texts[k], k * step, std::min(v.size(), (k + 1) * step));
            } catch (...) {
                failed[k] = 1;
            }
        };
        here[0] = 1;
        for (size_t k = 1; k < n; ++k) {
            try {
                workers.emplace_back(run, k);
            } catch (const std::system_error &) {
                here[k] = 1;
            }
        }
        for (size_t k = 0; k < n; ++k)
            if (here[k]) run(k);
        for (std::thread &t : workers) t.join();
        if (std::find(failed.begin(), failed.end(), 1) != failed.end()) throw std::bad_alloc();
        for (std::string &t : texts) pieces.adopt(std::move(t));
    }
    json_newline(pieces.text(), depth);
    pieces.text() += ']';
}

}  // namespace sonde::analysis
