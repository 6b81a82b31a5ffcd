// Record concept: the call-graph recorder behind `sonde record` (docs/recording.md). When
// SONDE_RECORD names a file at sonde_initialize, it records the process's method enters and
// leaves, threads, user marks and ranges into a Sonde trace with program events
// (docs/trace-format.md), with the method, module, thread and string tables that name them.
//
// How events travel:
//  - each thread stages 16-byte CallEvents (ticks, method index, kind) in its own array, from
//    the client concept's hot path (src/client/callgraph.cpp): no lock, no allocation;
//  - a full array (512 events) is emitted by its thread as one record of the recorder's own
//    session buffer (a per-thread buffer of the core, LOSSLESS, flushed every 100 ms);
//  - the buffer's consumer (this file) converts ticks to nanoseconds and appends the events to
//    the trace writer, which compresses them into event chunks, each after the table entries
//    added before it (methods are added when they are symbolised, at their first call).
// API calls traced through libffi (`sonde record --api`, api_calls.h) take the same path: the
// wrapper's sink stages each call in its thread's array, and write() turns it into events.
// At stop (sonde_finalize, exit, or a fatal signal) the staged tails of every thread are taken,
// the buffer flushed, and the writer writes its tables, index and footer. A trace cut by SIGKILL
// keeps every chunk written before, which readers recover by scanning.
//
// Threads: the sink's batch runs on the recorded threads, its tail and stop on the thread that
// stops, the consumer on a delivery pool worker or a flushing thread, the crash handler on the
// crashing thread. Recorder::mu guards the per-shard OS thread ids and the loss count; the
// writer has its own lock. Lock order: Registry::mu -> the writer's lock, and
// Buffer::deliver_mu -> Recorder::mu -> the writer's lock; nothing here takes Registry::mu from
// a buffer callback.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sonde/buffer.h>
#include <sonde/session.h>
#include <sonde/trace_events.h>

#include "client/registry.h"
#include "core/clock.h"
#include "core/hooks.h"
#include "record/api_calls.h"
#include "trace/trace_writer.h"

namespace sonde::record {

namespace {

using client::CallEvent;

// The recorder's buffer record: a thread's staged events. Private to this buffer.
constexpr uint32_t kBatchKind = SONDE_RECORD_KIND_USER;
struct BatchHeader {
    uint32_t thread;
    uint32_t count;
};

// > 0 while the recorder runs on this thread (a crash there must not re-enter it).
thread_local int t_inside = 0;
struct Inside {
    Inside() { ++t_inside; }
    ~Inside() { --t_inside; }
};

class Recorder {
public:
    bool start(const std::string &path);
    void stop(bool crashing);

    // Sink functions (client::RecordSink).
    static void batch(void *ctx, uint32_t thread, const CallEvent *begin, const CallEvent *end);
    static void tail(void *ctx, uint32_t thread, const CallEvent *begin, const CallEvent *end);
    static void method(void *ctx, client::Method *m);
    static void module(void *ctx, const client::Module *m);
    static void thread(void *ctx, const client::ThreadState *t, const std::string &name);
    static uint32_t intern(void *ctx, const char *text);
    // The buffer's consumer.
    static void consume(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                        sonde_session_id_t session, sonde_buffer_id_t buffer, void *user_data);

private:
    void write(uint32_t shard, const CallEvent *begin, const CallEvent *end, uint64_t loss, uint64_t loss_ns);

    std::unique_ptr<trace::TraceWriter> writer_;
    client::RecordSink sink_{};
    sonde_session_id_t session_{};
    sonde_buffer_id_t buffer_{};
    pid_t pid_ = 0;
    std::atomic<bool> active_{false};
    std::mutex mu_;
    std::vector<uint64_t> os_tids_;  // per shard (mu_)
    uint64_t pending_loss_ = 0, loss_ns_ = 0;
    std::vector<sonde_trace_event_t> conv_;  // conversion scratch (mu_)
};

// Leaked on purpose: threads may hand over events while the process exits.
Recorder *g_recorder = new Recorder();

void Recorder::write(uint32_t shard, const CallEvent *begin, const CallEvent *end, uint64_t loss,
                     uint64_t loss_ns) {
    std::lock_guard<std::mutex> g(mu_);
    const uint64_t os_tid = shard < os_tids_.size() ? os_tids_[shard] : 0;
    conv_.clear();
    if (loss != 0) {
        sonde_trace_event_t e{};
        e.timestamp = loss_ns;
        e.kind = SONDE_TRACE_EVENT_LOSS;
        e.value = loss;
        conv_.push_back(e);
    }
    for (const CallEvent *p = begin; p < end; ++p) {
        if (p->kind == SONDE_TRACE_EVENT_API_CALL) {
            p = decode_api_call(p, end, *writer_, conv_) - 1;
            continue;
        }
        sonde_trace_event_t e{};
        e.timestamp = clock::ticks_to_ns(p->ticks);
        e.id = p->id;
        e.kind = p->kind;
        e.aux = p->aux;
        if (p->kind == SONDE_TRACE_EVENT_THREAD_START || p->kind == SONDE_TRACE_EVENT_THREAD_END)
            e.value = os_tid;
        conv_.push_back(e);
    }
    writer_->write_events(shard, conv_.data(), conv_.size());
}

void Recorder::batch(void *ctx, uint32_t thread, const CallEvent *begin, const CallEvent *end) {
    auto *r = static_cast<Recorder *>(ctx);
    Inside in;
    // One record per batch, emitted by the recorded thread into its own chunk of the buffer:
    // the consumer sees a thread's batches in order.
    // Reserved and copied in place: no allocation.
    const size_t n = static_cast<size_t>(end - begin);
    void *payload = nullptr;
    const sonde_status_t st = sonde_reserve(
        r->buffer_, kBatchKind, static_cast<uint32_t>(sizeof(BatchHeader) + n * sizeof(CallEvent)), &payload);
    if (st == SONDE_STATUS_SUCCESS) {
        const BatchHeader h{thread, static_cast<uint32_t>(n)};
        std::memcpy(payload, &h, sizeof h);
        std::memcpy(static_cast<unsigned char *>(payload) + sizeof h, begin, n * sizeof(CallEvent));
        sonde_commit(r->buffer_);
    } else if (st == SONDE_STATUS_ERROR_SESSION_NOT_ACTIVE) {
        // The session stopped (the recorder is stopping): write the batch directly, as the
        // stop does with the threads' tails.
        r->write(thread, begin, end, 0, 0);
    }
}

void Recorder::tail(void *ctx, uint32_t thread, const CallEvent *begin, const CallEvent *end) {
    auto *r = static_cast<Recorder *>(ctx);
    Inside in;
    // Everything the thread emitted before is delivered first, so its events stay in order.
    sonde_flush_data(r->session_, r->buffer_);
    r->write(thread, begin, end, 0, 0);
}

void Recorder::method(void *ctx, client::Method *m) {
    auto *r = static_cast<Recorder *>(ctx);
    Inside in;
    trace::MethodEntry e;
    e.index = m->index;
    e.module = m->module != nullptr ? m->module->index : SONDE_TRACE_NO_MODULE;
    e.address = m->fn;
    e.size = m->size;
    e.visibility = m->visibility;
    e.name = m->name;
    e.class_name = m->class_name;
    e.full_name = m->full;
    e.mangled_name = m->mangled;
    if (client::source_position(m)) {
        e.source_file = m->source_file;
        e.source_line = m->source_line;
    }
    r->writer_->add_method(std::move(e));
}

void Recorder::module(void *ctx, const client::Module *m) {
    auto *r = static_cast<Recorder *>(ctx);
    Inside in;
    trace::ModuleEntry e;
    e.index = m->index;
    e.address = m->lo;
    e.size = m->hi - m->lo;
    e.path = m->path;
    e.name = m->name;
    r->writer_->add_module(std::move(e));
}

void Recorder::thread(void *ctx, const client::ThreadState *t, const std::string &name) {
    auto *r = static_cast<Recorder *>(ctx);
    Inside in;
    {
        std::lock_guard<std::mutex> g(r->mu_);
        if (t->index >= r->os_tids_.size()) r->os_tids_.resize(t->index + 1, 0);
        r->os_tids_[t->index] = t->os_tid;
    }
    trace::ThreadEntry e;
    e.shard = t->index;
    e.os_tid = t->os_tid;
    e.name = name;
    r->writer_->add_thread(std::move(e));
}

uint32_t Recorder::intern(void *ctx, const char *text) {
    auto *r = static_cast<Recorder *>(ctx);
    Inside in;
    uint32_t id = 0;
    try {
        r->writer_->add_string(text, &id);
    } catch (...) {
        id = 0;
    }
    return id;
}

void Recorder::consume(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                       sonde_session_id_t, sonde_buffer_id_t buffer, void *user_data) {
    auto *r = static_cast<Recorder *>(user_data);
    if (getpid() != r->pid_) return;  // a fork child never writes the parent's file
    Inside in;
    const sonde_record_header_t *rec = begin;
    while (rec != nullptr && rec < end) {
        uint32_t size = 0;
        const void *payload = sonde_record_payload(rec, &size);
        const uint32_t kind = sonde_record_kind(rec);
        if (kind == SONDE_RECORD_KIND_LOSS && size >= sizeof(sonde_loss_record_t)) {
            sonde_loss_record_t l;
            std::memcpy(&l, payload, sizeof l);
            std::lock_guard<std::mutex> g(r->mu_);
            r->pending_loss_ += l.count * client::kStageEvents;
            r->loss_ns_ = l.last_ns;
        } else if (kind == kBatchKind && size >= sizeof(BatchHeader)) {
            BatchHeader h;
            std::memcpy(&h, payload, sizeof h);
            if (sizeof h + uint64_t{h.count} * sizeof(CallEvent) <= size) {
                const auto *ev = reinterpret_cast<const CallEvent *>(
                    static_cast<const unsigned char *>(payload) + sizeof h);
                uint64_t loss = 0, loss_ns = 0;
                {
                    std::lock_guard<std::mutex> g(r->mu_);
                    loss = r->pending_loss_;
                    loss_ns = r->loss_ns_;
                    r->pending_loss_ = 0;
                }
                try {
                    r->write(h.thread, ev, ev + h.count, loss, loss_ns);
                } catch (...) {
                    // Out of memory: this batch is lost; the writer goes on.
                }
            }
        }
        const sonde_record_header_t *next = nullptr;
        if (sonde_next_record(rec, &next, r->session_, buffer) != SONDE_STATUS_SUCCESS) break;
        rec = next;
    }
}

// ---- crash safety ----

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_old_actions[NSIG];
std::atomic<int> g_crashed{0};

void on_fatal_signal(int sig, siginfo_t *info, void *uc) {
    const int saved_errno = errno;
    if (g_crashed.exchange(1) == 0 && t_inside == 0) g_recorder->stop(true);
    // Chain: the previous handler runs as if this one had not been there, or the default
    // action happens (the fault repeats, or the re-raised signal is delivered on return).
    const struct sigaction &old = g_old_actions[sig];
    sigaction(sig, &old, nullptr);
    errno = saved_errno;
    if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
        old.sa_sigaction(sig, info, uc);
    } else if ((old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
        old.sa_handler(sig);
    } else {
        raise(sig);
    }
}

void install_crash_handlers() {
    // An alternate stack for the starting (main) thread, so that a stack overflow there still
    // writes the trace. Leaked: it must outlive every signal.
    constexpr size_t kAltStack = 256 * 1024;
    stack_t ss{};
    ss.ss_sp = std::malloc(kAltStack);
    ss.ss_size = kAltStack;
    if (ss.ss_sp != nullptr) sigaltstack(&ss, nullptr);
    for (int sig : kFatalSignals) {
        struct sigaction sa {};
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, &g_old_actions[sig]);
    }
}

void stop_at_exit() { g_recorder->stop(false); }

// Says how the start went on the descriptor `sonde record` passed in SONDE_RECORD_STATUS_FD
// (nothing written: it started), then closes it so that the program does not inherit it;
// without one, an error goes to stderr.
void report_start(const std::string &error) {
    const char *env = secure_getenv("SONDE_RECORD_STATUS_FD");
    int fd = -1;
    if (env != nullptr && *env != '\0') {
        char *endp = nullptr;
        const long v = std::strtol(env, &endp, 10);
        if (*endp == '\0' && v > 2 && v < 65536) fd = static_cast<int>(v);
        unsetenv("SONDE_RECORD_STATUS_FD");
    }
    if (fd < 0) {
        if (!error.empty()) std::fprintf(stderr, "sonde: cannot trace API calls: %s\n", error.c_str());
        return;
    }
    size_t done = 0;
    while (done < error.size()) {
        const ssize_t n = ::write(fd, error.data() + done, error.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    close(fd);
}

bool Recorder::start(const std::string &path) {
    writer_ = std::make_unique<trace::TraceWriter>(path, 1, 65536);
    if (writer_->status() != SONDE_STATUS_SUCCESS) {
        std::fprintf(stderr, "sonde: cannot record: %s\n", writer_->error().c_str());
        writer_.reset();
        return false;
    }
    if (sonde_create_session(nullptr, &session_) != SONDE_STATUS_SUCCESS) return false;
    // 64 chunks of 1 MiB: a thread fills its own chunk with batches of 8 KiB; LOSSLESS waits up
    // to 10 s for the consumer; an interval flush every 100 ms bounds what a SIGKILL loses.
    const sonde_buffer_property_t props[] = {
        {SONDE_BUFFER_PROPERTY_KIND_CHUNK_SIZE, 0, 1u << 20},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_LOSSLESS_TIMEOUT, 0, 10000000000ull},
        {SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 100000000ull},
    };
    if (sonde_create_buffer(session_, 64u << 20, consume, this, props, 4, &buffer_) != SONDE_STATUS_SUCCESS ||
        sonde_start_session(session_) != SONDE_STATUS_SUCCESS) {
        sonde_destroy_session(session_);
        return false;
    }
    pid_ = getpid();
    sink_ = client::RecordSink{this, batch, tail, method, module, thread, intern};
    active_.store(true, std::memory_order_release);
    if (!client::start_recording(&sink_)) {
        active_.store(false, std::memory_order_release);
        sonde_destroy_session(session_);
        return false;
    }
    // API tracing starts once the recorder runs (its calls stage into the threads' arrays).
    // A failure ends the process before the program runs: `sonde record` reports it (through
    // the descriptor SONDE_RECORD_STATUS_FD names) and exits 2.
    const std::string api_error = start_api_tracing();
    report_start(api_error);
    if (!api_error.empty()) _exit(2);
    install_crash_handlers();
    std::atexit(stop_at_exit);
    return true;
}

void Recorder::stop(bool crashing) {
    if (!active_.exchange(false, std::memory_order_acq_rel)) return;
    if (getpid() != pid_) return;
    Inside in;
    // Slots are put back first, so that no traced call stages after the threads' tails are
    // taken. A crashing process keeps them: the tracer's lock may be held by the crashed thread.
    if (!crashing) {
        for (const std::string &w : stop_api_tracing())
            std::fprintf(stderr, "sonde: warning: %s\n", w.c_str());
    }
    client::stop_recording(crashing);
    sonde_flush_data(session_, buffer_);
    if (!crashing) {
        std::lock_guard<std::mutex> g(mu_);
        name_api_functions(*writer_);
    }
    if (!crashing) {
        sonde_stop_session(session_);
        sonde_destroy_session(session_);
    }
    const sonde_status_t st = writer_->finish();
    if (st != SONDE_STATUS_SUCCESS)
        std::fprintf(stderr, "sonde: recording failed: %s\n", writer_->error().c_str());
}

// ---- lifecycle: start from SONDE_RECORD at initialisation, stop at finalisation ----

// API tracing without a recording (`sonde run --api`): the calls go to the clients only. It
// starts at initialisation like a recording and, like one, ends the process with status 2
// before the program runs when it cannot start. Only the initialising thread touches the flag.
bool g_api_for_clients = false;

void start_api_tracing_for_clients() {
    const char *spec = secure_getenv("SONDE_API");
    if (spec == nullptr || *spec == '\0') return;
    std::string error;
    try {
        error = start_api_tracing();
    } catch (...) {
        error = "out of memory";
    }
    if (!error.empty()) {
        std::fprintf(stderr, "sonde: cannot trace API calls: %s\n", error.c_str());
        _exit(2);
    }
    g_api_for_clients = true;
}

void stop_api_tracing_for_clients() {
    if (!g_api_for_clients) return;
    g_api_for_clients = false;
    try {
        for (const std::string &w : stop_api_tracing())
            std::fprintf(stderr, "sonde: warning: %s\n", w.c_str());
    } catch (...) {
    }
}

void on_initialize() {
    static bool tried = false;
    if (tried) return;
    tried = true;
    const char *env = secure_getenv("SONDE_RECORD");
    if (env == nullptr || *env == '\0') {
        start_api_tracing_for_clients();
        return;
    }
    const std::string path = env;
    // The program's own children (a shell, an exec'ed tool) must not record over this file.
    unsetenv("SONDE_RECORD");
    try {
        g_recorder->start(path);
    } catch (...) {
        std::fprintf(stderr, "sonde: cannot record to %s: out of memory\n", path.c_str());
    }
}

void on_finalize() {
    stop_api_tracing_for_clients();
    try {
        g_recorder->stop(false);
    } catch (...) {
        // Out of memory while writing the index: the trace stays readable by scanning.
    }
}

const core::LifecycleObserver kObserver = {on_initialize, on_finalize, nullptr, nullptr};

struct RegisterObserver {
    RegisterObserver() { core::add_lifecycle_observer(&kObserver); }
} g_register_observer;

}  // namespace

}  // namespace sonde::record
