// Record concept, API calls: staging of traced calls and their conversion into trace events
// (see api_calls.h).
#include "record/api_calls.h"

#include <stdlib.h>

#include <cstring>

#include "apitrace/tracer.h"
#include "core/clock.h"

namespace sonde::record {

namespace {

using client::CallEvent;

// What follows a staged call's CallEvent: this, then nargs 64-bit arguments, then nstrings
// copies, each an apitrace::StringCopy and its `length` bytes of text, packed.
struct StagedCall {
    uint64_t begin;  // ticks
    uint64_t correlation;
    uint64_t ret;
    uint32_t depth;
    uint8_t nargs;
    uint8_t nstrings;
    uint16_t reserved;
};
static_assert(sizeof(StagedCall) == 32, "StagedCall is 32 bytes");

// The API functions that have a table entry: ids below this (the recorder's lock).
uint32_t g_named = 0;

// Hot path: runs on the traced thread after the original returned (from the wrapper, with the
// wrapper's busy flag set, so a traced call made from here goes straight through). Claims the
// slots of the call in the thread's staging array and fills them: no lock, no allocation once
// the thread is registered. A thread's first call registers it (Registry::mu, once).
void sink_call(void *, const apitrace::CallRecord &rec) {
    client::ThreadState *t = client::t_thread;
    if (t == nullptr) t = client::current_thread(true);
    if (t == nullptr || t == &client::g_busy || t->in_hook != 0) return;
    const uint32_t nargs = rec.nargs < apitrace::kMaxArgs ? rec.nargs : apitrace::kMaxArgs;
    const uint32_t nstrings = rec.nstrings < apitrace::kMaxStrings ? rec.nstrings : apitrace::kMaxStrings;
    size_t bytes = sizeof(StagedCall) + sizeof(uint64_t) * nargs;
    for (uint32_t i = 0; i < nstrings; ++i) bytes += sizeof(apitrace::StringCopy) + rec.strings[i].length;
    const auto slots = static_cast<uint32_t>((bytes + sizeof(CallEvent) - 1) / sizeof(CallEvent));
    ++t->in_hook;  // a signal handler's instrumented code on this thread returns at once meanwhile
    CallEvent *p = client::record_claim(t, 1 + slots);
    if (p != nullptr) {
        p->ticks = rec.end;
        p->id = rec.function;
        p->kind = SONDE_TRACE_EVENT_API_CALL;
        p->aux = static_cast<uint16_t>(slots);
        auto *q = reinterpret_cast<unsigned char *>(p + 1);
        const StagedCall h{rec.begin,
                           rec.correlation,
                           rec.ret,
                           rec.depth,
                           static_cast<uint8_t>(nargs),
                           static_cast<uint8_t>(nstrings),
                           0};
        std::memcpy(q, &h, sizeof h);
        q += sizeof h;
        std::memcpy(q, rec.args, sizeof(uint64_t) * nargs);
        q += sizeof(uint64_t) * nargs;
        for (uint32_t i = 0; i < nstrings; ++i) {
            std::memcpy(q, &rec.strings[i], sizeof rec.strings[i]);
            q += sizeof rec.strings[i];
            std::memcpy(q, rec.text[i], rec.strings[i].length);
            q += rec.strings[i].length;
        }
        t->rec_pos.store(p + 1 + slots, std::memory_order_release);
    }
    --t->in_hook;
}

// The tracer's sink: the call is staged when this thread records, and delivered to the clients
// that observe API_CALL events (src/client/api_events.cpp); both are lock-free.
client::ApiCall client_call(const apitrace::CallRecord &rec, bool leave) {
    return client::ApiCall{rec.function,          rec.nargs,           rec.depth,           rec.correlation,
                           leave ? rec.begin : 0, leave ? rec.end : 0, leave ? rec.ret : 0, rec.args};
}

void sink_leave(void *ctx, const apitrace::CallRecord &rec) {
    sink_call(ctx, rec);
    client::api_call_event(SONDE_EVENT_API_CALL_LEAVE, client_call(rec, true));
}

void sink_enter(void *, const apitrace::CallRecord &rec) {
    client::api_call_event(SONDE_EVENT_API_CALL_ENTER, client_call(rec, false));
}

// "RET NAME(TYPE ARG, ...)" from a signature, for the API_CALL filter element.
std::string declaration(const apitrace::Signature &sig) {
    std::string d = std::string(apitrace::type_name(sig.ret)) + " " + sig.name + "(";
    for (size_t a = 0; a < sig.args.size(); ++a) {
        if (a != 0) d += ", ";
        const std::string type = apitrace::type_name(sig.args[a]);
        d += type;
        if (a < sig.arg_names.size() && !sig.arg_names[a].empty())
            d += (type.back() == '*' ? "" : " ") + sig.arg_names[a];
    }
    return d + ")";
}

// A function was published (the tracer's lock held): the clients' filters are asked now.
void sink_added(void *, uint32_t id) {
    const apitrace::TracedFunction *f = apitrace::traced_function(id);
    if (f == nullptr) return;
    try {
        client::api_function_added(id, f->signature.name, declaration(f->signature), f->library, f->path);
    } catch (...) {
        // Out of memory making the text: clients do not see this function's calls.
    }
}

uint32_t value_class(apitrace::Type t) {
    using apitrace::Type;
    switch (t) {
        case Type::Void: return SONDE_TRACE_API_VOID;
        case Type::S8:
        case Type::S16:
        case Type::S32:
        case Type::S64: return SONDE_TRACE_API_SIGNED;
        case Type::U8:
        case Type::U16:
        case Type::U32:
        case Type::U64: return SONDE_TRACE_API_UNSIGNED;
        case Type::Float:
        case Type::Double: return SONDE_TRACE_API_DOUBLE;
        case Type::Pointer: return SONDE_TRACE_API_POINTER;
        case Type::String: return SONDE_TRACE_API_STRING;
    }
    return SONDE_TRACE_API_UNSIGNED;
}

// One ARG or RETURN event, with its copied text interned when there is one.
sonde_trace_event_t value_event(uint64_t ts, uint32_t kind, uint32_t position, uint64_t value,
                                const apitrace::StringCopy *copy, const char *text,
                                trace::TraceWriter &writer) {
    sonde_trace_event_t e{};
    e.timestamp = ts;
    e.kind = kind;
    e.value = value;
    e.aux = position & SONDE_TRACE_API_POSITION_MASK;
    if (copy != nullptr) {
        uint32_t id = 0;
        if (writer.add_string(std::string(text, copy->length), &id) == SONDE_STATUS_SUCCESS) {
            e.id = id;
            e.aux |= SONDE_TRACE_API_TEXT;
            if (copy->truncated != 0) e.aux |= SONDE_TRACE_API_TRUNCATED;
        }
    }
    return e;
}

}  // namespace

std::string start_api_tracing() {
    const char *spec = secure_getenv("SONDE_API");
    if (spec == nullptr || *spec == '\0') return "";
    apitrace::TracerOptions options;
    options.spec = spec;
    if (const char *protos = secure_getenv("SONDE_API_PROTOTYPES")) options.prototypes_path = protos;
    unsetenv("SONDE_API");
    unsetenv("SONDE_API_PROTOTYPES");
    std::string error;
    apitrace::Sink sink;
    sink.call = sink_leave;
    sink.enter = sink_enter;
    sink.added = sink_added;
    if (!apitrace::start_tracing(options, sink, error))
        return error.empty() ? "API tracing cannot start" : error;
    return "";
}

std::vector<std::string> stop_api_tracing() {
    apitrace::stop_tracing();
    return apitrace::tracing_warnings();
}

void name_api_functions(trace::TraceWriter &writer) {
    // traced_function() takes no lock: the tracer holds its own lock while its dlopen hook
    // takes Registry::mu, and Registry::mu is held when a thread's start takes the recorder's.
    const uint32_t count = apitrace::traced_function_count();
    for (uint32_t i = g_named; i < count; ++i) {
        const apitrace::TracedFunction *fp = apitrace::traced_function(i);
        if (fp == nullptr) break;
        const apitrace::TracedFunction &f = *fp;
        trace::ApiFunctionEntry e;
        e.index = f.id;
        e.library = f.library;
        e.name = f.signature.name;
        e.return_type = apitrace::type_name(f.signature.ret);
        e.return_class = value_class(f.signature.ret);
        for (size_t a = 0; a < f.signature.args.size(); ++a) {
            e.arg_classes.push_back(value_class(f.signature.args[a]));
            e.arg_types.push_back(apitrace::type_name(f.signature.args[a]));
            e.arg_names.push_back(a < f.signature.arg_names.size() ? f.signature.arg_names[a]
                                                                   : "arg" + std::to_string(a + 1));
        }
        writer.add_api_function(std::move(e));
        g_named = i + 1;
    }
}

const CallEvent *decode_api_call(const CallEvent *p, const CallEvent *end, trace::TraceWriter &writer,
                                 std::vector<sonde_trace_event_t> &out) {
    const uint32_t slots = p->aux;
    const size_t avail = sizeof(CallEvent) * slots;
    if (static_cast<size_t>(end - (p + 1)) < slots || avail < sizeof(StagedCall)) return end;  // malformed
    const auto *q = reinterpret_cast<const unsigned char *>(p + 1);
    StagedCall h;
    std::memcpy(&h, q, sizeof h);
    size_t used = sizeof h + sizeof(uint64_t) * h.nargs;
    if (h.nargs > apitrace::kMaxArgs || h.nstrings > apitrace::kMaxStrings || used > avail)
        return p + 1 + slots;
    uint64_t args[apitrace::kMaxArgs];
    std::memcpy(args, q + sizeof h, sizeof(uint64_t) * h.nargs);
    apitrace::StringCopy copies[apitrace::kMaxStrings];
    const char *texts[apitrace::kMaxStrings];
    uint32_t ncopies = 0;
    for (uint32_t i = 0; i < h.nstrings; ++i) {
        if (used + sizeof(apitrace::StringCopy) > avail) break;
        std::memcpy(&copies[ncopies], q + used, sizeof copies[ncopies]);
        used += sizeof(apitrace::StringCopy);
        if (copies[ncopies].length > apitrace::kStringBound || used + copies[ncopies].length > avail) break;
        texts[ncopies] = reinterpret_cast<const char *>(q + used);
        used += copies[ncopies].length;
        ++ncopies;
    }
    if (p->id >= g_named) name_api_functions(writer);
    const uint64_t ts = clock::ticks_to_ns(p->ticks);
    // The copy of argument `arg` (kReturnIndex: the return value), or ncopies when none.
    auto copy_of = [&](uint32_t arg) -> uint32_t {
        for (uint32_t k = 0; k < ncopies; ++k)
            if (copies[k].arg == arg) return k;
        return ncopies;
    };
    sonde_trace_event_t call{};
    call.timestamp = ts;
    call.kind = SONDE_TRACE_EVENT_API_CALL;
    call.id = p->id;
    call.value = clock::ticks_to_ns(h.begin);
    call.aux = h.nargs;
    out.push_back(call);
    for (uint32_t i = 0; i < h.nargs; ++i) {
        const uint32_t k = copy_of(i);
        out.push_back(value_event(ts, SONDE_TRACE_EVENT_API_ARG, i, args[i],
                                  k < ncopies ? &copies[k] : nullptr, k < ncopies ? texts[k] : nullptr,
                                  writer));
    }
    const uint32_t k = copy_of(apitrace::kReturnIndex);
    out.push_back(value_event(ts, SONDE_TRACE_EVENT_API_RETURN, 0, h.ret, k < ncopies ? &copies[k] : nullptr,
                              k < ncopies ? texts[k] : nullptr, writer));
    sonde_trace_event_t done{};
    done.timestamp = ts;
    done.kind = SONDE_TRACE_EVENT_API_END;
    done.id = p->id;
    done.value = h.correlation;
    done.aux = h.depth;
    out.push_back(done);
    return p + 1 + slots;
}

}  // namespace sonde::record
