// API tracing: loaded modules as ELF images (see elf_slots.h).
#include "apitrace/elf_slots.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace sonde::apitrace {

namespace {

int collect(struct dl_phdr_info *info, size_t, void *data) {
    auto *out = static_cast<std::vector<LoadedModule> *>(data);
    LoadedModule m;
    m.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
    m.base = info->dlpi_addr;
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    bool first = true;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        const uintptr_t lo = m.base + ph.p_vaddr, hi = lo + ph.p_memsz;
        if (ph.p_type == PT_LOAD) {
            if (first || lo < m.begin) m.begin = lo;
            if (first || hi > m.end) m.end = hi;
            first = false;
        } else if (ph.p_type == PT_DYNAMIC) {
            m.dynamic = reinterpret_cast<const void *>(lo);
        } else if (ph.p_type == PT_GNU_RELRO) {
            m.relro_begin = lo & ~(page - 1);
            m.relro_end = (hi + page - 1) & ~(page - 1);
        }
    }
    out->push_back(std::move(m));
    return 0;
}

// The tables of one module's PT_DYNAMIC. The loader has relocated most pointers in place; a
// value below the base (the vDSO's, or an unrelocated one) is relative.
struct Dynamic {
    const ElfW(Sym) *symtab = nullptr;
    const char *strtab = nullptr;
    const uint32_t *gnu_hash = nullptr;
    const uint32_t *hash = nullptr;
    const ElfW(Rela) *jmprel = nullptr;
    size_t pltrelsz = 0;
    const ElfW(Rela) *rela = nullptr;
    size_t relasz = 0;
    bool plt_is_rela = true;
};

Dynamic read_dynamic(const LoadedModule &m) {
    Dynamic d;
    if (m.dynamic == nullptr) return d;
    auto addr = [&](ElfW(Addr) p) { return p < m.base ? p + m.base : p; };
    for (auto *dyn = static_cast<const ElfW(Dyn) *>(m.dynamic); dyn->d_tag != DT_NULL; ++dyn) {
        switch (dyn->d_tag) {
            case DT_SYMTAB: d.symtab = reinterpret_cast<const ElfW(Sym) *>(addr(dyn->d_un.d_ptr)); break;
            case DT_STRTAB: d.strtab = reinterpret_cast<const char *>(addr(dyn->d_un.d_ptr)); break;
            case DT_GNU_HASH: d.gnu_hash = reinterpret_cast<const uint32_t *>(addr(dyn->d_un.d_ptr)); break;
            case DT_HASH: d.hash = reinterpret_cast<const uint32_t *>(addr(dyn->d_un.d_ptr)); break;
            case DT_JMPREL: d.jmprel = reinterpret_cast<const ElfW(Rela) *>(addr(dyn->d_un.d_ptr)); break;
            case DT_PLTRELSZ: d.pltrelsz = dyn->d_un.d_val; break;
            case DT_PLTREL: d.plt_is_rela = dyn->d_un.d_val == DT_RELA; break;
            case DT_RELA: d.rela = reinterpret_cast<const ElfW(Rela) *>(addr(dyn->d_un.d_ptr)); break;
            case DT_RELASZ: d.relasz = dyn->d_un.d_val; break;
            default: break;
        }
    }
    return d;
}

// The number of dynamic symbols: DT_HASH's nchain, or the end of the last DT_GNU_HASH chain.
size_t symbol_count(const Dynamic &d) {
    if (d.hash != nullptr) return d.hash[1];
    if (d.gnu_hash == nullptr) return 0;
    const uint32_t nbuckets = d.gnu_hash[0], symoffset = d.gnu_hash[1], bloom_size = d.gnu_hash[2];
    const auto *buckets =
        reinterpret_cast<const uint32_t *>(reinterpret_cast<const ElfW(Addr) *>(d.gnu_hash + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; ++i)
        if (buckets[i] > last) last = buckets[i];
    if (last < symoffset) return symoffset;
    while ((chain[last - symoffset] & 1u) == 0) ++last;
    return last + 1;
}

}  // namespace

std::vector<LoadedModule> loaded_modules() {
    std::vector<LoadedModule> out;
    dl_iterate_phdr(collect, &out);
    return out;
}

std::string base_name(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool library_matches(const std::string &pattern, const std::string &path) {
    if (pattern.empty() || path.empty()) return false;
    if (pattern.find('/') != std::string::npos) return pattern == path;
    const std::string name = base_name(path);
    auto prefix_of = [&](const std::string &p) {
        return name == p ||
               (name.size() > p.size() && name.compare(0, p.size(), p) == 0 && name[p.size()] == '.');
    };
    return prefix_of(pattern) || prefix_of("lib" + pattern);
}

void for_each_defined_function(const LoadedModule &m, const std::function<void(const char *)> &fn) {
    const Dynamic d = read_dynamic(m);
    if (d.symtab == nullptr || d.strtab == nullptr) return;
    const size_t n = symbol_count(d);
    for (size_t i = 1; i < n; ++i) {
        const ElfW(Sym) &s = d.symtab[i];
        const unsigned type = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
        if (s.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
        if (bind != STB_GLOBAL && bind != STB_WEAK) continue;
        if (ELF64_ST_VISIBILITY(s.st_other) != STV_DEFAULT &&
            ELF64_ST_VISIBILITY(s.st_other) != STV_PROTECTED)
            continue;
        fn(d.strtab + s.st_name);
    }
}

void for_each_import_slot(const LoadedModule &m, const std::function<void(const char *, void **)> &fn) {
    const Dynamic d = read_dynamic(m);
    if (d.symtab == nullptr || d.strtab == nullptr) return;
    auto walk = [&](const ElfW(Rela) * rel, size_t bytes) {
        if (rel == nullptr) return;
        for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); ++i) {
            const unsigned type = ELF64_R_TYPE(rel[i].r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            const ElfW(Sym) &s = d.symtab[ELF64_R_SYM(rel[i].r_info)];
            if (s.st_shndx != SHN_UNDEF || s.st_name == 0) continue;
            fn(d.strtab + s.st_name, reinterpret_cast<void **>(m.base + rel[i].r_offset));
        }
    };
    if (d.plt_is_rela) walk(d.jmprel, d.pltrelsz);
    walk(d.rela, d.relasz);
}

bool write_slot(const LoadedModule &m, void **slot, void *value) {
    const auto at = reinterpret_cast<uintptr_t>(slot);
    const bool relro = at >= m.relro_begin && at < m.relro_end;
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    void *page_start = reinterpret_cast<void *>(at & ~(page - 1));
    if (relro && mprotect(page_start, page, PROT_READ | PROT_WRITE) != 0) return false;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (relro) mprotect(page_start, page, PROT_READ);
    return true;
}

}  // namespace sonde::apitrace
