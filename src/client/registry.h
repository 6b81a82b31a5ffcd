// Client concept (include/sonde/client.h): the process-wide registry of clients, observers,
// filters, methods, modules and threads, shared by the files of src/client:
//  - loader.cpp: loading and instantiating clients, the api table, SONDE_CLIENTS;
//  - dispatch.cpp: the registry itself, observer and filter registration, publication of
//    observer lists, delivery, the lifecycle events;
//  - threads.cpp: thread states, registration, THREAD events;
//  - callgraph.cpp: the method table and the enter/leave hot path;
//  - user_events.cpp: MEMORY and USER events;
//  - api_events.cpp: API_CALL events of the functions the API tracer wraps;
//  - modules.cpp: modules, symbols and DWARF, MODULE events;
//  - requests.cpp: the data requests of the api table; api.cpp: the program-side C layer.
//
// Ownership and threads:
//  - Registry::mu (recursive) protects every table below and serialises the slow paths: loading
//    clients, registering observers and filters, a method's or thread's first event, module
//    rescans, data requests. Filters run with it held (so they run one at a time and may make
//    data requests); observers never do.
//  - The hot path (sonde_method_enter/leave) takes no lock: it reads the lock-free method hash
//    table (MethodTable, published by pointer, never freed), the calling thread's ThreadState
//    (owned by that thread) and the published observer lists (Subs, immutable once published,
//    kept until process exit so a reader never sees one freed).
//  - Recording (src/record) sets a RecordSink: each thread then stages compact CallEvents in
//    its own array (ThreadState::rec_*), written by the hot path without a lock, and hands
//    them to the sink when the array is full, when the thread ends, and at stop (see
//    "recording" below for who may touch what).
//  - Clients, methods, modules and thread states are never freed: ids stay valid for the run and
//    a handler on another thread can never see a dangling pointer. A client that failed to load
//    is dlclosed before any observer of it was published.
//
// fork(): the child of a fork has one thread, and the runtime is not initialised there (the
// core's handler). The concept's pthread_atfork child handler (dispatch.cpp) makes the registry
// agree: g_running turns false (nothing is delivered, the USER functions, sonde_register_thread
// and sonde_refresh_modules answer NOT_INITIALIZED, data requests PHASE_FAILURE), every client
// waits for a RUNTIME_INIT of the child's own runtime, the parent's other threads count as
// ended, and the forking thread's stack_mu and rec_mu are re-created if a vanished thread held
// them. If another thread of the parent held Registry::mu at the fork, the tables it guards may
// be half-updated: the lock is re-created (nothing in the child waits for it) and the registry
// is lost for the child (g_registry_lost): every entry point then answers NOT_INITIALIZED (the
// program-side functions) or PHASE_FAILURE (the api table), the lifecycle hooks and the thread
// exit do nothing, also after the child initialises a runtime of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sonde/client.h>

#include "core/clock.h"
#include "symbols/symbols.h"

namespace sonde::client {

constexpr uint32_t kMaxClients = 64;
constexpr uint32_t kMaxThreads = 65536;
constexpr uint32_t kStackCapacity = 65536;  // shadow stack entries per thread (virtual memory)
constexpr uint32_t kMaxRangeDepth = 256;

// Id handles: a kind tag in the top 16 bits (a method id passed as a thread id is caught) and
// index + 1 in the low 32 bits (dense, as client.h promises).
constexpr uint64_t kTagClient = 0x5C01ull << 48;
constexpr uint64_t kTagMethod = 0x5C02ull << 48;
constexpr uint64_t kTagThread = 0x5C03ull << 48;
constexpr uint64_t kTagModule = 0x5C04ull << 48;
constexpr uint64_t kTagApiFunction = 0x5C05ull << 48;
inline uint64_t make_handle(uint64_t tag, uint32_t index) { return tag | (uint64_t{index} + 1); }
// Index of a handle of the given kind, or -1 if the tag or the range is wrong.
inline int64_t handle_index(uint64_t handle, uint64_t tag, uint64_t count) {
    if ((handle & 0xffff000000000000ull) != tag) return -1;
    if ((handle & 0x0000ffff00000000ull) != 0) return -1;
    const uint64_t low = handle & 0xffffffffull;
    if (low == 0 || low > count) return -1;
    return static_cast<int64_t>(low - 1);
}

// ---- modules and symbols (modules.cpp) ----

using Symbol = symbols::FunctionSymbol;

struct Module {
    uint32_t index = 0;
    std::string path;                                     // "" if no file (vdso)
    std::string name;                                     // file name part of path (or the loader's name)
    uint64_t bias = 0;                                    // dlpi_addr
    uint64_t lo = 0, hi = 0;                              // span of PT_LOAD segments in the process
    std::vector<std::pair<uint64_t, uint64_t>> segments;  // [start, end) in the process
    std::atomic<bool> loaded{true};
    std::atomic<uint64_t> accept{~0ull};  // clients whose MODULE filter accepts it
    // Its ELF file (symbols and DWARF), opened on first need (Registry::mu held); null when it
    // cannot be read.
    bool file_tried = false;
    std::unique_ptr<symbols::ElfFile> file;
    std::vector<Symbol> symbols;  // sorted by value
    bool symbols_loaded = false;

    bool contains(uint64_t addr) const {
        for (const auto &s : segments)
            if (addr >= s.first && addr < s.second) return true;
        return false;
    }
};

// ---- methods (callgraph.cpp) ----

struct Method {
    uint64_t fn = 0;  // entry address in the process (hash key)
    uint32_t index = 0;
    std::atomic<uint64_t> notify{0};  // clients that want this method's CALL_GRAPH events
    // notify & the clients observing METHOD_ENTER / METHOD_LEAVE now: the hot path's one test
    // (update_call_masks keeps them, Registry::mu held).
    std::atomic<uint64_t> enter_mask{0};
    std::atomic<uint64_t> leave_mask{0};
    Module *module = nullptr;
    bool has_symbol = false;
    uint32_t visibility = SONDE_VISIBILITY_UNKNOWN;
    uint64_t size = 0;
    uint64_t file_value = 0;  // symbol value in the file (for DWARF)
    std::string mangled, full, name, class_name;
    // Source position, looked up on first request (Registry::mu held).
    bool line_tried = false;
    std::string source_file;
    uint32_t source_line = 0;
};

// Open-addressing table from function address to Method*. Readers probe without a lock; the
// writer (Registry::mu held) inserts, and when half full publishes a twice larger copy. Old
// tables are kept (a reader may still probe one; it then misses and takes the slow path).
// A slot holds the function's address beside its Method, so that a probe compares within the
// table, without loading the Method (a scattered heap object) of every slot it passes. The
// writer stores the Method, then the address (release): a reader that sees the address
// (acquire) sees the Method and its fields.
struct MethodSlot {
    std::atomic<uint64_t> fn;  // 0: empty (no function sits at address 0)
    std::atomic<Method *> method;
};
struct MethodTable {
    uint64_t mask = 0;
    std::unique_ptr<MethodSlot[]> slots;
    explicit MethodTable(uint64_t capacity);  // a power of two
    static uint64_t hash(uint64_t fn) { return (fn * 0x9E3779B97F4A7C15ull) >> 20; }
    Method *find(uint64_t fn) const {
        for (uint64_t i = hash(fn) & mask;; i = (i + 1) & mask) {
            const uint64_t f = slots[i].fn.load(std::memory_order_acquire);
            if (f == fn) return slots[i].method.load(std::memory_order_relaxed);
            if (f == 0) return nullptr;
        }
    }
    // Writer only (Registry::mu held): puts m in the first empty slot of its probe sequence.
    void insert(Method *m) {
        for (uint64_t i = hash(m->fn) & mask;; i = (i + 1) & mask)
            if (slots[i].fn.load(std::memory_order_relaxed) == 0) {
                slots[i].method.store(m, std::memory_order_relaxed);
                slots[i].fn.store(m->fn, std::memory_order_release);
                return;
            }
    }
};

// ---- recording (callgraph.cpp) ----

// One staged event of a recorded thread: 16 bytes, written by the hot path. `kind` is a
// sonde_trace_event_kind; `ticks` a clock::ticks() value.
struct CallEvent {
    uint64_t ticks;
    uint32_t id;
    uint16_t kind;
    uint16_t aux;
};
static_assert(sizeof(CallEvent) == 16, "CallEvent is 16 bytes");
constexpr uint32_t kStageEvents = 512;  // staged events per thread (8 KiB)

struct ThreadState;

// What the recorder (src/record) provides. Every function may be called on any thread.
struct RecordSink {
    void *ctx;
    // A thread's staged events, oldest first: by the thread itself when its array is full or it
    // ends (its rec_mu held, no Registry::mu).
    void (*batch)(void *ctx, uint32_t thread, const CallEvent *begin, const CallEvent *end);
    // A thread's last staged events when recording stops (on the stopping thread, that
    // thread's rec_mu held, no Registry::mu).
    void (*tail)(void *ctx, uint32_t thread, const CallEvent *begin, const CallEvent *end);
    // Registry::mu held: a method was symbolised, a module scanned, a thread registered or
    // named (at its end, or at stop for a live thread).
    void (*method)(void *ctx, Method *m);
    void (*module)(void *ctx, const Module *m);
    void (*thread)(void *ctx, const ThreadState *t, const std::string &name);
    // The string id of a text (marks, ranges, thread names); no Registry::mu held.
    uint32_t (*intern)(void *ctx, const char *text);
};

// ---- threads (threads.cpp) ----

struct ThreadState {
    // Hot fields, written only by the owning thread (depth and stack entries are atomics so
    // that get_thread_stack on another thread may read them).
    std::atomic<uint32_t> depth{0};
    uint32_t in_hook = 0;                    // > 0 while Sonde runs on this thread: hooks return at once
    std::atomic<Method *> *stack = nullptr;  // kStackCapacity entries, mmap'd
    std::atomic<uint64_t> notify{~0ull};     // clients whose THREAD filter accepts this thread
    // Recording: the next free staged event (nullptr when this thread does not record) and the
    // end of the array. rec_pos is written by the owner only, except that start_recording
    // publishes it once (release) for a thread that never recorded; the stopper reads it
    // (acquire) under rec_mu to take what was staged.
    std::atomic<CallEvent *> rec_pos{nullptr};
    CallEvent *rec_end = nullptr;
    // The CALL_GRAPH event struct handed to observers (owner only), prepared for call_items.
    uint64_t call_items = ~0ull;
    sonde_event_data_t call_data{};
    uint32_t index = 0;
    // Cold.
    uint64_t os_tid = 0;
    unsigned long pthread = 0;  // pthread_t
    std::atomic<bool> alive{true};
    std::mutex stack_mu;              // guards `stack` against being unmapped while another thread reads it
    std::string end_name;             // name at thread end (Registry::mu held)
    std::vector<std::string> ranges;  // USER range texts (owner only); reserved kMaxRangeDepth
    // Recording, cold: the array and what of it was already handed over. rec_mu orders the
    // owner's hand-overs with the stopper's; rec_closed (under rec_mu) ends the thread's
    // recording for good.
    std::mutex rec_mu;
    CallEvent *rec_base = nullptr;
    CallEvent *rec_taken = nullptr;
    const RecordSink *rec_sink = nullptr;
    bool rec_closed = false;
};

// ---- traced library functions (api_events.cpp) ----

struct ApiFunction {
    uint32_t id = 0;     // the tracer's function id
    uint32_t index = 0;  // dense, in order of announcement (sonde_api_function_index)
    std::atomic<uint64_t> notify{
        0};                    // clients whose API_CALL filter (and its library's MODULE filter) accept it
    Module *module = nullptr;  // the library, if the registry knew it when announced
    std::string name, declaration, library, path;
};

// ---- clients and observers (loader.cpp, dispatch.cpp) ----

struct Observer {
    sonde_event_handler_t fn = nullptr;
    void *user_data = nullptr;
    uint64_t items = 0;
};

struct Filter {
    sonde_filter_fn_t fn = nullptr;
    void *user_data = nullptr;
};

struct Client {
    uint32_t index = 0;
    uint64_t handle = 0;
    uint64_t bit = 0;
    uint32_t state = SONDE_CLIENT_STATE_FAILED;
    bool instantiating = false;
    bool initialized = false;  // got RUNTIME_INIT and no SHUTDOWN since: data requests allowed
    sonde_status_t status = SONDE_STATUS_SUCCESS;
    std::string path, message;
    void *dl = nullptr;
    Observer observers[SONDE_EVENT_COUNT];
    Filter filters[SONDE_EVENT_GROUP_COUNT];
};

// The published observers of one event: immutable once published.
struct Subs {
    uint32_t count = 0;
    uint64_t mask = 0;         // bits of the clients listed
    uint64_t union_items = 0;  // union of their items
    struct Entry {
        sonde_event_handler_t fn;
        void *user_data;
        uint64_t items;
        uint64_t bit;
        uint32_t client;
    } entries[kMaxClients];
};

struct Registry {
    std::recursive_mutex mu;
    bool env_loaded = false;

    std::vector<Client *> clients;                // index order; never shrinks
    std::vector<std::unique_ptr<Subs>> all_subs;  // owner of every Subs ever published
    std::vector<std::unique_ptr<MethodTable>> all_tables;
    std::vector<Method *> methods;

    std::vector<ThreadState *> threads;
    std::vector<Module *> modules;
    std::vector<ApiFunction *> api_functions;
};

Registry &registry();

// Set in a fork child whose parent had Registry::mu held by another thread (see above).
extern std::atomic<bool> g_registry_lost;
inline bool registry_lost() { return g_registry_lost.load(std::memory_order_acquire); }

// Published for the hot path (constant-initialised, so usable from any static initialiser).
extern std::atomic<bool> g_running;  // between RUNTIME_INIT and SHUTDOWN
extern std::atomic<const Subs *> g_subs[SONDE_EVENT_COUNT];
extern std::atomic<MethodTable *> g_table;

// The calling thread holds Registry::mu through a RegistryLock (so a nested dlopen hook or
// module refresh knows not to rescan under it).
extern thread_local int t_registry_depth;
struct RegistryLock {
    std::unique_lock<std::recursive_mutex> lock;
    RegistryLock() : lock(registry().mu) { ++t_registry_depth; }
    ~RegistryLock() { --t_registry_depth; }
};

// loader.cpp
const sonde_api_t *api_table();
sonde_status_t load_client(const char *path, const char *options, sonde_client_instantiate_fn fn,
                           sonde_client_id_t *out);
// Parses SONDE_CLIENTS and loads each client (at the first initialisation).
void load_env_clients();

// dispatch.cpp
void publish_subs();                   // mu held
Client *find_client(uint64_t handle);  // mu held; nullptr if invalid
// Delivers `full` (filled with the union of items) to the observers of `event` whose bit is in
// `mask`; each gets only its items. Called with no lock held.
void deliver(const Subs *subs, uint64_t mask, sonde_event_data_t &full);
inline const Subs *subs_of(uint32_t event) { return g_subs[event].load(std::memory_order_acquire); }
// Items each event can provide.
uint64_t event_items(uint32_t event);
// Bits of clients whose filter of `group` accepts the element (asks each active client once).
uint64_t ask_filters(uint32_t group, const sonde_filter_element_t &element, uint64_t clients);
void recompute_for_client(Client *c);  // mu held: asks a newly active client's filters
// The api table's register_event and set_event_group_filter.
sonde_status_t api_register_event(sonde_client_id_t client, uint32_t event, uint64_t data_items,
                                  sonde_event_handler_t handler, void *user_data);
sonde_status_t api_set_event_group_filter(sonde_client_id_t client, uint32_t group,
                                          sonde_filter_fn_t should_notify, void *user_data);
// RUNTIME_INIT, SESSION_START/STOP or SHUTDOWN to the clients in `only_clients` (no lock held).
void deliver_lifecycle(uint32_t event, uint64_t session, uint64_t only_clients);

// modules.cpp
void scan_modules(std::vector<Module *> *loaded, std::vector<Module *> *unloaded);  // mu held
Module *module_of(uint64_t addr);                                                   // mu held
void symbolise(Method *m);                                                          // mu held
bool source_position(Method *m);  // mu held; false if no DWARF line
sonde_filter_element_t module_element(const Module *mod);
sonde_status_t refresh_modules();
void deliver_module_event(uint32_t event, const Module *mod, uint64_t only_clients);

// Small helpers of several files, inline so that each caller keeps them inlined.
inline uint64_t now_ns() { return clock::now_ns(); }

// A filter element of `group` named `name`, every other string empty and every id null.
inline sonde_filter_element_t filter_element(uint32_t group, const char *name) {
    sonde_filter_element_t el{};
    el.struct_size = sizeof el;
    el.group = group;
    el.name = name;
    el.class_name = "";
    el.full_name = "";
    el.module_name = "";
    el.path = "";
    return el;
}

// The common part of an explicit event's data: header, items, thread, timestamp.
inline sonde_event_data_t event_base(uint32_t event, const Subs *s, const ThreadState *t) {
    sonde_event_data_t d{};
    d.struct_size = sizeof d;
    d.event = event;
    d.valid_items = s->union_items & event_items(event);
    d.thread.handle = make_handle(kTagThread, t->index);
    if (d.valid_items & SONDE_DATA_TIMESTAMP) d.timestamp = now_ns();
    return d;
}

// api_events.cpp
// The filter element of a traced function, and the clients (of `clients`) that accept it.
sonde_filter_element_t api_function_element(const ApiFunction *a);
uint64_t api_function_accept(const ApiFunction *a, uint64_t clients);  // mu held

// threads.cpp
// The calling thread's state; &g_busy while it is being registered or after it ended (its
// in_hook is set, so every hook returns at once). Read by the hot path.
extern __thread ThreadState *t_thread __attribute__((tls_model("initial-exec")));
extern ThreadState g_busy;
ThreadState *current_thread(bool create);  // nullptr before init or inside Sonde
ThreadState *register_current_thread();    // mu held inside; delivers THREAD_START when running
// The calling thread's first event: registers it once the runtime runs (nullptr before).
__attribute__((noinline)) ThreadState *thread_slow();
void deliver_thread_event(uint32_t event, ThreadState *t, uint64_t only_clients);
sonde_filter_element_t thread_element(const ThreadState *t, const char *name);
std::string thread_name(const ThreadState *t);

// callgraph.cpp
sonde_filter_element_t method_element(const Method *m);
// Recomputes m's enter_mask and leave_mask from its notify and the published observers.
void update_call_masks(Method *m);  // mu held
// Recording (the recorder calls these): start gives every thread a staging array now or at its
// registration and reports the known methods, modules and threads to the sink; false when
// recording already ran in this process (it runs once). stop hands every thread's staged
// events to sink->tail and closes them; events staged later are dropped.
bool start_recording(const RecordSink *sink);
void stop_recording(bool crashing);
extern std::atomic<const RecordSink *> g_record_sink;
// Stages an event on the calling thread if it records (slow paths: marks, ranges, threads);
// record_text interns the text first.
void record_event(ThreadState *t, uint16_t kind, uint32_t id, uint16_t aux);
void record_text(ThreadState *t, uint16_t kind, const char *text, uint16_t aux);
// The owner's staging array is full at p: hands it over; where to stage next, or nullptr.
CallEvent *record_refill(ThreadState *t, CallEvent *p);
// Owner only: room for n (1..kStageEvents) consecutive staged events of t, handing the array
// over first when fewer are left; nullptr when t does not record. The caller fills them and
// publishes them with t->rec_pos.store(p + n, release), so that a hand-over never splits them.
CallEvent *record_claim(ThreadState *t, uint32_t n);
// A thread that registers or ends while recording (threads.cpp calls them).
void record_thread_start(ThreadState *t, const std::string &name);  // mu held
void record_thread_end(ThreadState *t);                             // no lock held

// API calls (api_events.cpp), called by the API tracer's sink (src/record/api_calls.cpp).
// A traced function was published with tracer id `id`: becomes an ApiFunction and asks the
// API_CALL filters (tracer lock held, takes Registry::mu).
void api_function_added(uint32_t id, const std::string &name, const std::string &declaration,
                        const std::string &library, const std::string &path);
// One traced call as the API tracer saw it (src/apitrace's CallRecord, converted by the
// sink): ticks are clock::ticks() values; begin, end and ret are 0 on API_CALL_ENTER.
struct ApiCall {
    uint32_t function;  // the tracer's function id
    uint32_t nargs;
    uint32_t depth;  // traced calls of the thread open around this one
    uint64_t correlation;
    uint64_t begin, end;
    uint64_t ret;
    const uint64_t *args;
};
// API_CALL_ENTER or API_CALL_LEAVE of one traced call, on the calling thread (lock-free).
void api_call_event(uint32_t event, const ApiCall &call);

}  // namespace sonde::client
