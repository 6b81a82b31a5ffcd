// Client concept: the module table (dl_iterate_phdr), method symbolisation from the ELF symbol
// tables (libelf; .symtab so that static functions are named, else .dynsym), demangling with
// abi::__cxa_demangle, the class/namespace split of C++ names, and source positions from DWARF
// (libdw). Everything here runs with Registry::mu held, except event delivery.
#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "client/registry.h"

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

bool open_elf(Module *mod) {
    if (mod->elf != nullptr) return true;
    if (mod->path.empty() || mod->fd == -2) return false;
    static bool version_set = [] { return elf_version(EV_CURRENT) != EV_NONE; }();
    if (!version_set) return false;
    const int fd = open(mod->path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        mod->fd = -2;
        return false;
    }
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
        if (elf != nullptr) elf_end(elf);
        close(fd);
        mod->fd = -2;
        return false;
    }
    mod->fd = fd;
    mod->elf = elf;
    return true;
}

void load_symbols(Module *mod) {
    if (mod->symbols_loaded) return;
    mod->symbols_loaded = true;
    if (!open_elf(mod)) return;
    Elf *elf = static_cast<Elf *>(mod->elf);
    std::vector<Symbol> syms;
    // .symtab first (it names static functions); .dynsym adds nothing when .symtab exists.
    for (const uint32_t want : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
        Elf_Scn *scn = nullptr;
        while ((scn = elf_nextscn(elf, scn)) != nullptr) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != want || sh.sh_entsize == 0) continue;
            Elf_Data *data = elf_getdata(scn, nullptr);
            if (data == nullptr) continue;
            const size_t n = sh.sh_size / sh.sh_entsize;
            for (size_t i = 0; i < n; ++i) {
                GElf_Sym s;
                if (gelf_getsym(data, static_cast<int>(i), &s) == nullptr) continue;
                const int type = GELF_ST_TYPE(s.st_info);
                if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_value == 0)
                    continue;
                const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
                if (name == nullptr || *name == '\0') continue;
                syms.push_back({s.st_value, s.st_size, name, static_cast<uint8_t>(GELF_ST_BIND(s.st_info))});
            }
        }
        if (!syms.empty()) break;
    }
    // One symbol per address: prefer global, then weak, then local names.
    auto rank = [](uint8_t b) { return b == STB_GLOBAL ? 0 : b == STB_WEAK ? 1 : 2; };
    std::sort(syms.begin(), syms.end(), [&](const Symbol &a, const Symbol &b) {
        if (a.value != b.value) return a.value < b.value;
        if (rank(a.binding) != rank(b.binding)) return rank(a.binding) < rank(b.binding);
        return a.mangled < b.mangled;
    });
    syms.erase(std::unique(syms.begin(), syms.end(),
                           [](const Symbol &a, const Symbol &b) { return a.value == b.value; }),
               syms.end());
    mod->symbols = std::move(syms);
}

std::string demangle(const std::string &mangled) {
    if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return mangled;
    int status = 0;
    char *out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    if (status != 0 || out == nullptr) return mangled;
    std::string s(out);
    std::free(out);
    return s;
}

}  // namespace

void split_name(const std::string &full, std::string *scope, std::string *name) {
    // "void ns::A<int>::f(int) const" -> scope "ns::A<int>", name "f". Strip the parameter list
    // (the last balanced "(...)" group), then split at the last "::" outside <>, () and {} and
    // drop a return type (text before the last space outside brackets).
    std::string s = full;
    size_t end = s.size();
    // Trailing qualifiers after the parameter list.
    const size_t close = s.rfind(')');
    if (close != std::string::npos && s.find('(') != std::string::npos) {
        int depth = 0;
        size_t i = close + 1;
        while (i-- > 0) {
            if (s[i] == ')')
                ++depth;
            else if (s[i] == '(' && --depth == 0)
                break;
        }
        if (i != static_cast<size_t>(-1) && i > 0) end = i;
    }
    s = s.substr(0, end);
    // operator names contain brackets of their own: keep "operator..." whole.
    size_t op = s.rfind("operator");
    const size_t limit =
        op != std::string::npos && (op == 0 || s[op - 1] == ':' || s[op - 1] == ' ') ? op : s.size();
    int depth = 0;
    size_t last_scope = std::string::npos, last_space = std::string::npos;
    for (size_t i = 0; i < limit; ++i) {
        const char ch = s[i];
        if (ch == '<' || ch == '(' || ch == '{' || ch == '[')
            ++depth;
        else if (ch == '>' || ch == ')' || ch == '}' || ch == ']')
            --depth;
        else if (depth == 0 && ch == ':' && i + 1 < limit && s[i + 1] == ':') {
            last_scope = i;
            ++i;
        } else if (depth == 0 && ch == ' ') {
            last_space = i;
        }
    }
    size_t begin = 0;
    if (last_space != std::string::npos && (last_scope == std::string::npos || last_space < last_scope))
        begin = last_space + 1;
    if (last_scope != std::string::npos && last_scope >= begin) {
        *scope = s.substr(begin, last_scope - begin);
        *name = s.substr(last_scope + 2);
    } else {
        scope->clear();
        *name = s.substr(begin);
    }
}

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
    const std::vector<Symbol> &syms = m->module->symbols;
    const uint64_t value = m->fn - m->module->bias;
    auto it = std::upper_bound(syms.begin(), syms.end(), value,
                               [](uint64_t v, const Symbol &s) { return v < s.value; });
    if (it == syms.begin()) return;
    --it;
    if (value != it->value && value >= it->value + it->size) return;
    m->has_symbol = true;
    m->file_value = it->value;
    m->size = it->size;
    m->mangled = it->mangled;
    m->visibility = it->binding == STB_GLOBAL ? SONDE_VISIBILITY_GLOBAL
                    : it->binding == STB_WEAK ? SONDE_VISIBILITY_WEAK
                                              : SONDE_VISIBILITY_LOCAL;
    m->full = demangle(m->mangled);
    split_name(m->full, &m->class_name, &m->name);
}

bool source_position(Method *m) {
    if (m->line_tried) return m->source_line != 0;
    m->line_tried = true;
    if (!m->has_symbol || m->module == nullptr) return false;
    Module *mod = m->module;
    if (!mod->dwarf_tried) {
        mod->dwarf_tried = true;
        if (open_elf(mod)) mod->dwarf = dwarf_begin_elf(static_cast<Elf *>(mod->elf), DWARF_C_READ, nullptr);
    }
    auto *dw = static_cast<Dwarf *>(mod->dwarf);
    if (dw == nullptr) return false;
    const Dwarf_Addr addr = m->file_value;
    Dwarf_Die cu;
    bool have = dwarf_addrdie(dw, addr, &cu) != nullptr;
    if (!have) {
        // No .debug_aranges: walk the compilation units.
        Dwarf_Off off = 0, next = 0;
        size_t hsize = 0;
        while (dwarf_nextcu(dw, off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
            if (dwarf_offdie(dw, off + hsize, &cu) != nullptr && dwarf_haspc(&cu, addr) > 0) {
                have = true;
                break;
            }
            off = next;
        }
    }
    if (!have) return false;
    Dwarf_Line *line = dwarf_getsrc_die(&cu, addr);
    if (line == nullptr) return false;
    int lineno = 0;
    const char *file = dwarf_linesrc(line, nullptr, nullptr);
    if (dwarf_lineno(line, &lineno) != 0 || file == nullptr || lineno <= 0) return false;
    m->source_file = file;
    m->source_line = static_cast<uint32_t>(lineno);
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
