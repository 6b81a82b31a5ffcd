// API tracing: the libffi wrappers and their call path (see wrapper.h).
#include "apitrace/wrapper.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/clock.h"

namespace sonde::apitrace {

namespace {

// Per-thread state of the call path. `busy` is set while this thread captures or sinks a call;
// `depth` counts the traced calls open on this thread; correlation ids are taken from a block
// reserved from the process-wide counter, so that the common case touches no shared line.
struct ThreadCalls {
    uint64_t next_id;
    uint64_t id_limit;
    uint32_t depth;
    int busy;
};
__thread ThreadCalls t_calls __attribute__((tls_model("initial-exec"))) = {0, 0, 0, 0};

constexpr uint64_t kIdBlock = 4096;
std::atomic<uint64_t> g_next_block{1};

// Called with t_calls.busy set: a signal handler's traced call cannot interleave with this.
uint64_t next_correlation() {
    if (__builtin_expect(t_calls.next_id == t_calls.id_limit, 0)) {
        t_calls.next_id = g_next_block.fetch_add(kIdBlock, std::memory_order_relaxed);
        t_calls.id_limit = t_calls.next_id + kIdBlock;
    }
    return t_calls.next_id++;
}

// The compiler must not move the stores of `busy` across the work it guards: a signal
// handler on this thread reads it.
inline void set_busy(int value) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_calls.busy = value;
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

// Copies up to kStringBound bytes of `s` (no libc call: the copy must not be traced itself).
void copy_string(CallRecord &rec, uint8_t arg, const char *s) {
    if (s == nullptr || rec.nstrings == kMaxStrings) return;
    const uint32_t k = rec.nstrings++;
    uint32_t n = 0;
    while (n < kStringBound && s[n] != '\0') {
        rec.text[k][n] = s[n];
        ++n;
    }
    rec.strings[k] = {arg, static_cast<uint8_t>(n), static_cast<uint8_t>(n == kStringBound && s[n] != '\0'),
                      0};
}

ffi_type *ffi_type_of(Type t) {
    switch (t) {
        case Type::Void: return &ffi_type_void;
        case Type::S8: return &ffi_type_sint8;
        case Type::U8: return &ffi_type_uint8;
        case Type::S16: return &ffi_type_sint16;
        case Type::U16: return &ffi_type_uint16;
        case Type::S32: return &ffi_type_sint32;
        case Type::U32: return &ffi_type_uint32;
        case Type::S64: return &ffi_type_sint64;
        case Type::U64: return &ffi_type_uint64;
        case Type::Float: return &ffi_type_float;
        case Type::Double: return &ffi_type_double;
        case Type::Pointer:
        case Type::String: return &ffi_type_pointer;
    }
    return nullptr;
}

uint64_t double_bits(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return bits;
}

// A return value: libffi stores integral results narrower than ffi_arg widened to ffi_arg.
uint64_t ret_to_u64(Type t, const void *p) {
    ffi_arg wide;
    switch (t) {
        case Type::Void: return 0;
        case Type::Float:
        case Type::Double:
        case Type::Pointer:
        case Type::String:
        case Type::S64:
        case Type::U64: return to_u64(t, p);
        default: break;
    }
    std::memcpy(&wide, p, sizeof wide);
    switch (t) {
        case Type::S8: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(wide)));
        case Type::U8: return static_cast<uint8_t>(wide);
        case Type::S16: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(wide)));
        case Type::U16: return static_cast<uint16_t>(wide);
        case Type::S32: return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(wide)));
        default: return static_cast<uint32_t>(wide);
    }
}

}  // namespace

uint64_t to_u64(Type t, const void *p) {
    switch (t) {
        case Type::Void: return 0;
        case Type::S8: return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const int8_t *>(p)));
        case Type::U8: return *static_cast<const uint8_t *>(p);
        case Type::S16: return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const int16_t *>(p)));
        case Type::U16: return *static_cast<const uint16_t *>(p);
        case Type::S32: return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const int32_t *>(p)));
        case Type::U32: return *static_cast<const uint32_t *>(p);
        case Type::S64:
        case Type::U64: {
            uint64_t v;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        case Type::Float: return double_bits(static_cast<double>(*static_cast<const float *>(p)));
        case Type::Double: return double_bits(*static_cast<const double *>(p));
        case Type::Pointer:
        case Type::String: return reinterpret_cast<uintptr_t>(*static_cast<void *const *>(p));
    }
    return 0;
}

std::unique_ptr<Wrapper> Wrapper::create(const Signature &sig, void *original, uint32_t id, Sink sink,
                                         std::string &error) {
    if (sig.variadic) {
        error = sig.name +
                ": a variadic function is traced only when a prototype file fixes its arguments "
                "(a declaration without '...')";
        return nullptr;
    }
    if (sig.args.size() > kMaxArgs) {
        error = sig.name + ": more than " + std::to_string(kMaxArgs) + " arguments";
        return nullptr;
    }
    if (original == nullptr || sink.call == nullptr) {
        error = sig.name + ": no function or no sink to wrap";
        return nullptr;
    }
    std::unique_ptr<Wrapper> w(new Wrapper());
    w->sig_ = sig;
    w->original_ = original;
    w->id_ = id;
    w->sink_ = sink;
    w->has_strings_ = sig.ret == Type::String;
    for (size_t i = 0; i < sig.args.size(); ++i) {
        w->types_[i] = ffi_type_of(sig.args[i]);
        if (sig.args[i] == Type::String) w->has_strings_ = true;
    }
    if (ffi_prep_cif(&w->cif_, FFI_DEFAULT_ABI, static_cast<unsigned>(sig.args.size()), ffi_type_of(sig.ret),
                     w->types_) != FFI_OK) {
        error = sig.name + ": libffi cannot describe this signature";
        return nullptr;
    }
    w->closure_ = static_cast<ffi_closure *>(ffi_closure_alloc(sizeof(ffi_closure), &w->entry_));
    if (w->closure_ == nullptr) {
        error = sig.name + ": out of memory for the wrapper's code";
        return nullptr;
    }
    if (ffi_prep_closure_loc(w->closure_, &w->cif_, &Wrapper::handler, w.get(), w->entry_) != FFI_OK) {
        error = sig.name + ": libffi cannot make a closure for this signature";
        return nullptr;
    }
    return w;
}

Wrapper::~Wrapper() {
    if (closure_ != nullptr) ffi_closure_free(closure_);
}

// Hot path: runs in place of the original on every traced call. No lock, no allocation, no
// libc call besides the original itself; the record lives on this frame.
void Wrapper::handler(ffi_cif *cif, void *ret, void **args, void *self) {
    const Wrapper &w = *static_cast<const Wrapper *>(self);
    if (__builtin_expect(t_calls.busy, 0)) {
        // A call made while this thread records another (from a signal handler, or from the
        // sink itself): pass it on untouched.
        ffi_call(cif, FFI_FN(w.original_), ret, args);
        return;
    }
    const int caller_errno = errno;
    set_busy(1);
    CallRecord rec;
    rec.function = w.id_;
    rec.nargs = cif->nargs;
    rec.nstrings = 0;
    rec.depth = t_calls.depth;
    rec.correlation = next_correlation();
    for (uint32_t i = 0; i < cif->nargs; ++i) rec.args[i] = to_u64(w.sig_.args[i], args[i]);
    if (w.has_strings_) {
        for (uint32_t i = 0; i < cif->nargs; ++i) {
            if (w.sig_.args[i] == Type::String)
                copy_string(rec, static_cast<uint8_t>(i), reinterpret_cast<const char *>(rec.args[i]));
        }
    }
    rec.begin = 0;
    if (w.sink_.enter != nullptr) w.sink_.enter(w.sink_.ctx, rec);
    ++t_calls.depth;
    set_busy(0);
    errno = caller_errno;
    rec.begin = clock::ticks();
    ffi_call(cif, FFI_FN(w.original_), ret, args);
    rec.end = clock::ticks();
    const int callee_errno = errno;
    set_busy(1);
    --t_calls.depth;
    rec.ret = ret_to_u64(w.sig_.ret, ret);
    if (w.sig_.ret == Type::String) copy_string(rec, kReturnIndex, reinterpret_cast<const char *>(rec.ret));
    w.sink_.call(w.sink_.ctx, rec);
    set_busy(0);
    errno = callee_errno;
}

}  // namespace sonde::apitrace
