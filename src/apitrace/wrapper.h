// API tracing: wrappers made at run time with libffi. A Wrapper owns, for one traced function,
// an ffi_cif for its signature and an ffi_closure whose code address stands in for the function:
// a call to entry() captures the arguments, calls the original with ffi_call, and hands one
// CallRecord (correlation id, begin and end ticks, arguments, return value, bounded copies of
// `const char *` strings) to the tracer's Sink.
//
// Guarantees of the call path (Wrapper::handler):
//  - errno: the original sees the caller's errno, the caller sees the original's; nothing the
//    wrapper or the sink does in between leaks out.
//  - reentrancy: all per-call state is on the stack, so a traced function calling another (or
//    itself) through a wrapper nests; each call gets its own record, inner ones first.
//  - threads: a Wrapper is immutable once made; correlation ids are unique across threads.
//  - signals: while this thread is capturing or sinking a call, a traced call made by a signal
//    handler goes straight to the original unrecorded; otherwise it is recorded like any other,
//    so the sink must be async-signal-safe (no lock, no allocation).
#pragma once

#include <ffi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "apitrace/signature.h"

namespace sonde::apitrace {

// Bounds of the string copies of one call: at most kMaxStrings `const char *` values (arguments
// first, then the return value), each up to kStringBound bytes.
constexpr uint32_t kMaxStrings = 4;
constexpr uint32_t kStringBound = 64;
// The argument index that names the return value in StringCopy::arg.
constexpr uint8_t kReturnIndex = 0xff;

struct StringCopy {
    uint8_t arg;        // argument index, or kReturnIndex
    uint8_t length;     // bytes in text, at most kStringBound
    uint8_t truncated;  // 1 when the string is longer than length
    uint8_t reserved;
};

struct CallRecord {
    uint64_t correlation;  // unique in the process, increasing on each thread
    uint64_t begin;        // clock::ticks() just before the original runs
    uint64_t end;          // and just after it returns
    uint64_t ret;          // the return value as a 64-bit value (0 for void)
    uint32_t function;     // the id the wrapper was made with
    uint32_t nargs;
    uint32_t nstrings;
    uint32_t depth;  // traced calls of this thread already open around this one
    uint64_t args[kMaxArgs];
    StringCopy strings[kMaxStrings];
    char text[kMaxStrings][kStringBound];
};

// Where records go. `call` runs on the calling thread after the original returned, `enter`
// (optional) before the original runs, with the arguments, strings, correlation id and depth
// filled (`begin`, `end` and `ret` are 0); both possibly in a signal handler, so they must take no lock
// and allocate nothing. `added` (optional) is told each traced function once, by the tracer
// under its lock, after traced_function(id) is published and before any slot leads to it.
struct Sink {
    void (*call)(void *ctx, const CallRecord &record) = nullptr;
    void *ctx = nullptr;
    void (*enter)(void *ctx, const CallRecord &record) = nullptr;
    void (*added)(void *ctx, uint32_t id) = nullptr;
};

// The 64-bit value of one argument or return value of type `t` stored at `p` (a libffi
// argument slot; a return value of an integral type narrower than 64 bits is widened first).
uint64_t to_u64(Type t, const void *p);

class Wrapper {
public:
    // A wrapper of `original` (code with signature `sig`) that reports to `sink` with `id`.
    // nullptr with `error` set when the signature is variadic or libffi refuses it.
    static std::unique_ptr<Wrapper> create(const Signature &sig, void *original, uint32_t id, Sink sink,
                                           std::string &error);
    ~Wrapper();
    Wrapper(const Wrapper &) = delete;
    Wrapper &operator=(const Wrapper &) = delete;

    // The address that callers call instead of the original.
    void *entry() const { return entry_; }
    void *original() const { return original_; }
    uint32_t id() const { return id_; }
    const Signature &signature() const { return sig_; }

private:
    Wrapper() = default;
    static void handler(ffi_cif *cif, void *ret, void **args, void *self);

    Signature sig_;
    ffi_cif cif_{};
    ffi_type *types_[kMaxArgs] = {};
    ffi_closure *closure_ = nullptr;
    void *entry_ = nullptr;
    void *original_ = nullptr;
    uint32_t id_ = 0;
    Sink sink_;
    bool has_strings_ = false;
};

}  // namespace sonde::apitrace
