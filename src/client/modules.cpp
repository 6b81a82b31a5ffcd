// Client concept: the module table (dl_iterate_phdr) and method symbolisation: each module's
// ELF file is opened once (libelf) for its function symbols and its DWARF, which src/symbols
// reads (symbols, demangling, the class/namespace split of C++ names, source positions).
// Everything here runs with Registry::mu held, except event delivery.
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <utility>

#include "client/registry.h"
#include "symbols/symbols.h"

namespace sonde::client {

namespace {

struct Found {
    std::string name;
    uint64_t bias;
    std::vector<std::pair<uint64_t, uint64_t>> segments;
};

int collect(struct dl_phdr_info *info, size_t, void *data) {
    auto *out = static_cast<std::vector<Found> *>(data);
    Found f;
    f.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
    f.bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        const uint64_t start = info->dlpi_addr + ph.p_vaddr;
        f.segments.emplace_back(start, start + ph.p_memsz);
    }
    if (!f.segments.empty()) out->push_back(std::move(f));
    return 0;
}

std::string self_exe() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    return std::string(buf, static_cast<size_t>(n));
}

std::string base_name(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The module's ELF file, opened once; nullptr when it has no path or cannot be read.
symbols::ElfFile *elf_file(Module *mod) {
    if (!mod->file_tried) {
        mod->file_tried = true;
        if (!mod->path.empty()) {
            auto file = std::make_unique<symbols::ElfFile>(mod->path);
            if (file->ok()) mod->file = std::move(file);
        }
    }
    return mod->file.get();
}

void load_symbols(Module *mod) {
    if (mod->symbols_loaded) return;
    mod->symbols_loaded = true;
    if (symbols::ElfFile *file = elf_file(mod)) mod->symbols = file->functions();
}

}  // namespace

void scan_modules(std::vector<Module *> *loaded, std::vector<Module *> *unloaded) {
    Registry &r = registry();
    std::vector<Found> found;
    dl_iterate_phdr(collect, &found);
    std::vector<bool> still(r.modules.size(), false);
    for (Found &f : found) {
        Module *match = nullptr;
        for (Module *m : r.modules) {
            if (!m->loaded.load(std::memory_order_relaxed)) continue;
            if (m->bias == f.bias && m->segments == f.segments) {
                match = m;
                break;
            }
        }
        if (match != nullptr) {
            still[match->index] = true;
            continue;
        }
        auto *m = new Module();
        m->index = static_cast<uint32_t>(r.modules.size());
        m->bias = f.bias;
        m->segments = std::move(f.segments);
        m->lo = m->segments.front().first;
        m->hi = m->segments.front().second;
        for (const auto &s : m->segments) {
            m->lo = std::min(m->lo, s.first);
            m->hi = std::max(m->hi, s.second);
        }
        if (f.name.empty() && r.modules.empty()) {
            m->path = self_exe();
        } else if (!f.name.empty() && f.name[0] == '/') {
            m->path = f.name;
        } else if (!f.name.empty() && access(f.name.c_str(), R_OK) == 0) {
            m->path = f.name;
        }
        m->name = m->path.empty() ? f.name : base_name(m->path);
        if (m->name.empty()) m->name = "[unknown]";
        const sonde_filter_element_t el = module_element(m);
        m->accept.store(ask_filters(SONDE_EVENT_GROUP_MODULE, el, ~0ull), std::memory_order_relaxed);
        r.modules.push_back(m);
        if (const RecordSink *sink = g_record_sink.load(std::memory_order_acquire))
            sink->module(sink->ctx, m);
        still.push_back(true);
        if (loaded != nullptr) loaded->push_back(m);
    }
    for (Module *m : r.modules) {
        if (still[m->index] || !m->loaded.load(std::memory_order_relaxed)) continue;
        m->loaded.store(false, std::memory_order_relaxed);
        if (unloaded != nullptr) unloaded->push_back(m);
    }
}

Module *module_of(uint64_t addr) {
    for (Module *m : registry().modules)
        if (m->loaded.load(std::memory_order_relaxed) && addr >= m->lo && addr < m->hi && m->contains(addr))
            return m;
    return nullptr;
}

void symbolise(Method *m) {
    m->module = module_of(m->fn);
    if (m->module == nullptr) return;
    load_symbols(m->module);
    const symbols::FunctionSymbol *it = symbols::function_at(m->module->symbols, m->fn - m->module->bias);
    if (it == nullptr) return;
    m->has_symbol = true;
    m->file_value = it->value;
    m->size = it->size;
    m->mangled = it->mangled;
    m->visibility = it->binding == STB_GLOBAL ? SONDE_VISIBILITY_GLOBAL
                    : it->binding == STB_WEAK ? SONDE_VISIBILITY_WEAK
                                              : SONDE_VISIBILITY_LOCAL;
    m->full = symbols::demangle(m->mangled);
    symbols::split_name(m->full, &m->class_name, &m->name);
}

bool source_position(Method *m) {
    if (m->line_tried) return m->source_line != 0;
    m->line_tried = true;
    if (!m->has_symbol || m->module == nullptr) return false;
    symbols::ElfFile *file = elf_file(m->module);
    Dwarf *dw = file != nullptr ? file->dwarf() : nullptr;
    if (dw == nullptr) return false;
    symbols::SourcePosition pos;
    if (!symbols::source_position(dw, m->file_value, &pos)) return false;
    m->source_file = std::move(pos.file);
    m->source_line = pos.line;
    return true;
}

sonde_filter_element_t module_element(const Module *mod) {
    sonde_filter_element_t el = filter_element(SONDE_EVENT_GROUP_MODULE, mod->name.c_str());
    el.module.handle = make_handle(kTagModule, mod->index);
    el.module_name = mod->name.c_str();
    el.path = mod->path.c_str();
    return el;
}

void deliver_module_event(uint32_t event, const Module *mod, uint64_t only_clients) {
    const Subs *s = subs_of(event);
    if (s == nullptr) return;
    const uint64_t mask = s->mask & only_clients & mod->accept.load(std::memory_order_relaxed);
    if (mask == 0) return;
    ThreadState *t = current_thread(true);
    if (t != nullptr) ++t->in_hook;
    sonde_event_data_t d{};
    d.struct_size = sizeof d;
    d.event = event;
    d.valid_items = s->union_items & event_items(event);
    if (t == nullptr) d.valid_items &= ~uint64_t{SONDE_DATA_THREAD_ID};
    if (d.valid_items & SONDE_DATA_TIMESTAMP) d.timestamp = now_ns();
    if (t != nullptr) d.thread.handle = make_handle(kTagThread, t->index);
    d.module.handle = make_handle(kTagModule, mod->index);
    // NAME and PATH share the name field: PATH wins when asked for, since it says more.
    d.name = (d.valid_items & SONDE_DATA_PATH) && !mod->path.empty() ? mod->path.c_str() : mod->name.c_str();
    d.address = mod->lo;
    d.size = mod->hi - mod->lo;
    deliver(s, mask, d);
    if (t != nullptr) --t->in_hook;
}

sonde_status_t refresh_modules() {
    if (!g_running.load(std::memory_order_acquire)) return SONDE_STATUS_ERROR_NOT_INITIALIZED;
    // A dlopen made while this thread holds the registry (loading a client) is picked up by
    // the refresh that follows the load.
    if (t_registry_depth > 0) return SONDE_STATUS_SUCCESS;
    std::vector<Module *> loaded, unloaded;
    {
        RegistryLock lock;
        scan_modules(&loaded, &unloaded);
    }
    for (Module *m : unloaded) deliver_module_event(SONDE_EVENT_MODULE_UNLOAD, m, ~0ull);
    for (Module *m : loaded) deliver_module_event(SONDE_EVENT_MODULE_LOAD, m, ~0ull);
    return SONDE_STATUS_SUCCESS;
}

}  // namespace sonde::client
