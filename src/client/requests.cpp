// Client concept: the data requests of the api table (method, module and thread information,
// thread stacks, module and thread lists) and the string/array protocol they share. Each takes
// Registry::mu; none is on a hot path.

#include "client/registry.h"
#include "client/requests.h"
#include "core/abi_struct.h"
#include "core/guarded.h"

namespace sonde::client {

sonde_status_t check_string(const sonde_string_t &s) {
    return lacks_storage(s) ? SONDE_STATUS_ERROR_NULL_POINTER : SONDE_STATUS_SUCCESS;
}

bool put_string(sonde_string_t &s, const std::string &v) { return fill_string(s, v); }

namespace {

// Common checks of every request: info pointer, client, phase. Registry::mu held.
sonde_status_t check_client(sonde_client_id_t client) {
    if (registry_lost()) return SONDE_STATUS_ERROR_PHASE_FAILURE;  // the tables are not read
    Client *c = find_client(client.handle);
    if (c == nullptr || c->state != SONDE_CLIENT_STATE_ACTIVE) return SONDE_STATUS_ERROR_ILLEGAL_ID;
    if (!c->initialized || !g_running.load(std::memory_order_acquire))
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    return SONDE_STATUS_SUCCESS;
}

// Puts a requested string item; records a too-short buffer.
void put_item(uint64_t requested, uint64_t item, sonde_string_t &s, const std::string &v, uint64_t *valid,
              bool *too_short) {
    if ((requested & item) == 0) return;
    if (put_string(s, v))
        *valid |= item;
    else
        *too_short = true;
}

// Puts a requested fixed-size item.
template <typename T, typename V>
void put_value(uint64_t requested, uint64_t item, T &field, V value, uint64_t *valid) {
    if ((requested & item) == 0) return;
    field = static_cast<T>(value);
    *valid |= item;
}

sonde_status_t result(bool too_short, bool partial) {
    if (too_short) return SONDE_STATUS_ERROR_BUFFER_TOO_SHORT;
    return partial ? SONDE_STATUS_PARTIAL_INFO : SONDE_STATUS_SUCCESS;
}

ThreadState *thread_of(sonde_thread_id_t id, sonde_status_t *st) {
    Registry &r = registry();
    if (id.handle == 0) {
        ThreadState *t = current_thread(true);
        if (t == nullptr) *st = SONDE_STATUS_ERROR_ILLEGAL_ID;
        return t;
    }
    const int64_t i = handle_index(id.handle, kTagThread, r.threads.size());
    if (i < 0) {
        *st = SONDE_STATUS_ERROR_ILLEGAL_ID;
        return nullptr;
    }
    return r.threads[static_cast<size_t>(i)];
}

template <typename Array, typename Id>
sonde_status_t put_ids(Array *a, uint64_t tag, size_t count) {
    if (a == nullptr || lacks_storage(*a)) return SONDE_STATUS_ERROR_NULL_POINTER;
    return fill_array(*a, count, [tag](size_t i) { return Id{make_handle(tag, static_cast<uint32_t>(i))}; });
}

// The size of each info struct in 1.1, the release that introduced it: the smallest accepted.
constexpr size_t first_size(const sonde_method_info_t *) { return SONDE_METHOD_INFO_SIZE_1_1; }
constexpr size_t first_size(const sonde_module_info_t *) { return SONDE_MODULE_INFO_SIZE_1_1; }
constexpr size_t first_size(const sonde_thread_info_t *) { return SONDE_THREAD_INFO_SIZE_1_1; }
constexpr size_t first_size(const sonde_client_info_t *) { return SONDE_CLIENT_INFO_SIZE_1_1; }

// The checks every info request starts with, in order (Registry::mu held). An info struct is
// input (string storage) and output (the items): `copy` receives what the caller's struct_size
// covers; the request fills it and writes it back with epilogue().
template <typename Info>
sonde_status_t prologue(sonde_client_id_t client, const Info *info, uint64_t requested, uint64_t allowed,
                        Info *copy) {
    if (info == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    sonde_status_t st = check_client(client);
    if (st != SONDE_STATUS_SUCCESS) return st;
    st = read_abi_struct(info, first_size(info), copy, AbiTail::kOutput);
    if (st != SONDE_STATUS_SUCCESS) return st;
    if ((requested & ~allowed) != 0) return SONDE_STATUS_ERROR_NOT_SUPPORTED;
    return SONDE_STATUS_SUCCESS;
}

// Writes the filled copy back, no more than the caller's struct_size covers.
template <typename Info>
sonde_status_t epilogue(const Info &copy, Info *info, bool too_short, bool partial) {
    (void)write_abi_struct(copy, first_size(info), info);  // the size passed read_abi_struct
    return result(too_short, partial);
}

}  // namespace

sonde_status_t api_get_method_info(sonde_client_id_t client, sonde_method_id_t method, uint64_t requested,
                                   sonde_method_info_t *info) {
    return guarded([&]() -> sonde_status_t {
        constexpr uint64_t kAllowed = SONDE_DATA_NAME | SONDE_DATA_CLASS_NAME | SONDE_DATA_FULL_NAME |
                                      SONDE_DATA_MANGLED_NAME | SONDE_DATA_MODULE_ID |
                                      SONDE_DATA_SOURCE_FILE | SONDE_DATA_SOURCE_LINE | SONDE_DATA_ADDRESS |
                                      SONDE_DATA_SIZE | SONDE_DATA_VISIBILITY;
        Registry &r = registry();
        RegistryLock lock;
        sonde_method_info_t out;
        const sonde_status_t st = prologue(client, info, requested, kAllowed, &out);
        if (st != SONDE_STATUS_SUCCESS) return st;
        const int64_t i = handle_index(method.handle, kTagMethod, r.methods.size());
        if (i < 0) return SONDE_STATUS_ERROR_ILLEGAL_ID;
        for (const sonde_string_t *s :
             {&out.name, &out.class_name, &out.full_name, &out.mangled_name, &out.source_file})
            if (check_string(*s) != SONDE_STATUS_SUCCESS) return SONDE_STATUS_ERROR_NULL_POINTER;
        Method *m = r.methods[static_cast<size_t>(i)];
        uint64_t valid = 0;
        bool too_short = false, partial = false;
        if (m->has_symbol) {
            put_item(requested, SONDE_DATA_NAME, out.name, m->name, &valid, &too_short);
            put_item(requested, SONDE_DATA_CLASS_NAME, out.class_name, m->class_name, &valid, &too_short);
            put_item(requested, SONDE_DATA_FULL_NAME, out.full_name, m->full, &valid, &too_short);
            put_item(requested, SONDE_DATA_MANGLED_NAME, out.mangled_name, m->mangled, &valid, &too_short);
            put_value(requested, SONDE_DATA_SIZE, out.size, m->size, &valid);
            put_value(requested, SONDE_DATA_VISIBILITY, out.visibility, m->visibility, &valid);
        } else if (requested & (SONDE_DATA_NAME | SONDE_DATA_CLASS_NAME | SONDE_DATA_FULL_NAME |
                                SONDE_DATA_MANGLED_NAME | SONDE_DATA_SIZE | SONDE_DATA_VISIBILITY)) {
            partial = true;
        }
        if (requested & (SONDE_DATA_SOURCE_FILE | SONDE_DATA_SOURCE_LINE)) {
            if (source_position(m)) {
                put_item(requested, SONDE_DATA_SOURCE_FILE, out.source_file, m->source_file, &valid,
                         &too_short);
                put_value(requested, SONDE_DATA_SOURCE_LINE, out.source_line, m->source_line, &valid);
            } else {
                partial = true;
            }
        }
        if (requested & SONDE_DATA_MODULE_ID) {
            if (m->module != nullptr) {
                out.module.handle = make_handle(kTagModule, m->module->index);
                valid |= SONDE_DATA_MODULE_ID;
            } else {
                partial = true;
            }
        }
        put_value(requested, SONDE_DATA_ADDRESS, out.address, m->fn, &valid);
        out.valid_items = valid;
        return epilogue(out, info, too_short, partial);
    });
}

sonde_status_t api_get_module_info(sonde_client_id_t client, sonde_module_id_t module, uint64_t requested,
                                   sonde_module_info_t *info) {
    return guarded([&]() -> sonde_status_t {
        constexpr uint64_t kAllowed =
            SONDE_DATA_NAME | SONDE_DATA_PATH | SONDE_DATA_ADDRESS | SONDE_DATA_SIZE | SONDE_DATA_STATE;
        Registry &r = registry();
        RegistryLock lock;
        sonde_module_info_t out;
        const sonde_status_t st = prologue(client, info, requested, kAllowed, &out);
        if (st != SONDE_STATUS_SUCCESS) return st;
        const int64_t i = handle_index(module.handle, kTagModule, r.modules.size());
        if (i < 0) return SONDE_STATUS_ERROR_ILLEGAL_ID;
        if (check_string(out.name) != SONDE_STATUS_SUCCESS || check_string(out.path) != SONDE_STATUS_SUCCESS)
            return SONDE_STATUS_ERROR_NULL_POINTER;
        const Module *mod = r.modules[static_cast<size_t>(i)];
        uint64_t valid = 0;
        bool too_short = false, partial = false;
        put_item(requested, SONDE_DATA_NAME, out.name, mod->name, &valid, &too_short);
        if (requested & SONDE_DATA_PATH) {
            if (mod->path.empty())
                partial = true;  // no file behind it (the vdso)
            else
                put_item(requested, SONDE_DATA_PATH, out.path, mod->path, &valid, &too_short);
        }
        put_value(requested, SONDE_DATA_ADDRESS, out.address, mod->lo, &valid);
        put_value(requested, SONDE_DATA_SIZE, out.size, mod->hi - mod->lo, &valid);
        const bool loaded = mod->loaded.load(std::memory_order_relaxed);
        put_value(requested, SONDE_DATA_STATE, out.loaded, loaded ? 1 : 0, &valid);
        out.valid_items = valid;
        return epilogue(out, info, too_short, partial);
    });
}

sonde_status_t api_get_thread_info(sonde_client_id_t client, sonde_thread_id_t thread, uint64_t requested,
                                   sonde_thread_info_t *info) {
    return guarded([&]() -> sonde_status_t {
        constexpr uint64_t kAllowed =
            SONDE_DATA_NAME | SONDE_DATA_OS_THREAD_ID | SONDE_DATA_STACK_DEPTH | SONDE_DATA_STATE;
        RegistryLock lock;
        sonde_thread_info_t out;
        sonde_status_t st = prologue(client, info, requested, kAllowed, &out);
        if (st != SONDE_STATUS_SUCCESS) return st;
        ThreadState *t = thread_of(thread, &st);
        if (t == nullptr) return st;
        if (check_string(out.name) != SONDE_STATUS_SUCCESS) return SONDE_STATUS_ERROR_NULL_POINTER;
        uint64_t valid = 0;
        bool too_short = false, partial = false;
        const bool alive = t->alive.load(std::memory_order_acquire);
        if (requested & SONDE_DATA_NAME) {
            const std::string name = thread_name(t);
            if (name.empty() && alive)
                partial = true;  // the thread ended while we looked
            else
                put_item(requested, SONDE_DATA_NAME, out.name, name, &valid, &too_short);
        }
        put_value(requested, SONDE_DATA_OS_THREAD_ID, out.os_thread_id, t->os_tid, &valid);
        const uint32_t depth = alive ? t->depth.load(std::memory_order_acquire) : 0;
        put_value(requested, SONDE_DATA_STACK_DEPTH, out.stack_depth, depth, &valid);
        put_value(requested, SONDE_DATA_STATE, out.alive, alive ? 1 : 0, &valid);
        out.valid_items = valid;
        return epilogue(out, info, too_short, partial);
    });
}

sonde_status_t api_get_thread_stack(sonde_client_id_t client, sonde_thread_id_t thread,
                                    sonde_method_array_t *stack) {
    return guarded([&]() -> sonde_status_t {
        if (stack == nullptr || lacks_storage(*stack)) return SONDE_STATUS_ERROR_NULL_POINTER;
        RegistryLock lock;
        sonde_status_t st = check_client(client);
        if (st != SONDE_STATUS_SUCCESS) return st;
        ThreadState *t = thread_of(thread, &st);
        if (t == nullptr) return st;
        std::lock_guard<std::mutex> g(t->stack_mu);
        if (t->stack == nullptr) return SONDE_STATUS_ERROR;  // the thread has ended: no stack left
        const uint32_t depth = t->depth.load(std::memory_order_acquire);
        const uint32_t recorded = std::min(depth, kStackCapacity);
        const sonde_status_t filled = fill_array(*stack, recorded, [&](size_t i) {
            const Method *m = t->stack[recorded - 1 - i].load(std::memory_order_relaxed);
            return sonde_method_id_t{m != nullptr ? make_handle(kTagMethod, m->index) : 0};
        });
        if (filled != SONDE_STATUS_SUCCESS) return filled;
        return depth > recorded ? SONDE_STATUS_PARTIAL_INFO : SONDE_STATUS_SUCCESS;
    });
}

sonde_status_t api_get_module_list(sonde_client_id_t client, sonde_module_array_t *modules) {
    return guarded([&]() -> sonde_status_t {
        if (modules == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        RegistryLock lock;
        const sonde_status_t st = check_client(client);
        if (st != SONDE_STATUS_SUCCESS) return st;
        return put_ids<sonde_module_array_t, sonde_module_id_t>(modules, kTagModule,
                                                                registry().modules.size());
    });
}

sonde_status_t api_get_thread_list(sonde_client_id_t client, sonde_thread_array_t *threads) {
    return guarded([&]() -> sonde_status_t {
        if (threads == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
        RegistryLock lock;
        const sonde_status_t st = check_client(client);
        if (st != SONDE_STATUS_SUCCESS) return st;
        return put_ids<sonde_thread_array_t, sonde_thread_id_t>(threads, kTagThread,
                                                                registry().threads.size());
    });
}

sonde_status_t client_list(sonde_client_array_t *clients) {
    if (clients == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    RegistryLock lock;
    return put_ids<sonde_client_array_t, sonde_client_id_t>(clients, kTagClient, registry().clients.size());
}

sonde_status_t client_info(sonde_client_id_t client, sonde_client_info_t *info) {
    if (info == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    RegistryLock lock;
    sonde_client_info_t out;
    const sonde_status_t st = read_abi_struct(info, first_size(info), &out, AbiTail::kOutput);
    if (st != SONDE_STATUS_SUCCESS) return st;
    const Client *c = find_client(client.handle);
    if (c == nullptr) return SONDE_STATUS_ERROR_ILLEGAL_ID;
    if (check_string(out.path) != SONDE_STATUS_SUCCESS || check_string(out.message) != SONDE_STATUS_SUCCESS)
        return SONDE_STATUS_ERROR_NULL_POINTER;
    out.state = c->state;
    out.status = c->status;
    const bool a = put_string(out.path, c->path);
    const bool b = put_string(out.message, c->message);
    return epilogue(out, info, !(a && b), false);
}

}  // namespace sonde::client
