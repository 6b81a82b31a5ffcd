// Function symbols from ELF symbol tables (libelf), C++ names (abi::__cxa_demangle) and source
// positions from DWARF line tables (libdw); see symbols.h.
#include "symbols/symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace sonde::symbols {

std::vector<FunctionSymbol> function_symbols(Elf *elf) {
    std::vector<FunctionSymbol> syms;
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
    std::sort(syms.begin(), syms.end(), [&](const FunctionSymbol &a, const FunctionSymbol &b) {
        if (a.value != b.value) return a.value < b.value;
        if (rank(a.binding) != rank(b.binding)) return rank(a.binding) < rank(b.binding);
        return a.mangled < b.mangled;
    });
    syms.erase(
        std::unique(syms.begin(), syms.end(),
                    [](const FunctionSymbol &a, const FunctionSymbol &b) { return a.value == b.value; }),
        syms.end());
    return syms;
}

const FunctionSymbol *function_at(const std::vector<FunctionSymbol> &symbols, uint64_t value) {
    auto it = std::upper_bound(symbols.begin(), symbols.end(), value,
                               [](uint64_t v, const FunctionSymbol &s) { return v < s.value; });
    if (it == symbols.begin()) return nullptr;
    --it;
    if (value != it->value && value - it->value >= it->size) return nullptr;
    return &*it;
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

bool source_position(Dwarf *dwarf, uint64_t address, SourcePosition *out) {
    if (dwarf == nullptr) return false;
    const Dwarf_Addr addr = address;
    Dwarf_Die cu;
    bool have = dwarf_addrdie(dwarf, addr, &cu) != nullptr;
    if (!have) {
        // No .debug_aranges: walk the compilation units.
        Dwarf_Off off = 0, next = 0;
        size_t hsize = 0;
        while (dwarf_nextcu(dwarf, off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
            if (dwarf_offdie(dwarf, off + hsize, &cu) != nullptr && dwarf_haspc(&cu, addr) > 0) {
                have = true;
                break;
            }
            off = next;
        }
    }
    if (!have) return false;
    Dwarf_Line *line = dwarf_getsrc_die(&cu, addr);
    if (line == nullptr) return false;
    int lineno = 0, column = 0;
    const char *file = dwarf_linesrc(line, nullptr, nullptr);
    if (dwarf_lineno(line, &lineno) != 0 || file == nullptr || lineno <= 0) return false;
    if (dwarf_linecol(line, &column) != 0 || column < 0) column = 0;
    out->file = file;
    out->line = static_cast<uint32_t>(lineno);
    out->column = static_cast<uint32_t>(column);
    return true;
}

ElfFile::ElfFile(const std::string &path) {
    static const bool version_set = elf_version(EV_CURRENT) != EV_NONE;
    if (!version_set) {
        error_ = "libelf is unusable";
        return;
    }
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
        error_ = path + ": " + std::strerror(errno);
        return;
    }
    Elf *elf = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
        if (elf != nullptr) elf_end(elf);
        error_ = path + ": not an ELF file";
        return;
    }
    size_t phnum = 0;
    bool any = false;
    if (elf_getphdrnum(elf, &phnum) == 0) {
        for (size_t i = 0; i < phnum; ++i) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
            if (!any || ph.p_vaddr < first_load_) first_load_ = ph.p_vaddr;
            if (!any || ph.p_vaddr + ph.p_memsz > load_end_) load_end_ = ph.p_vaddr + ph.p_memsz;
            any = true;
        }
    }
    if (!any) {
        elf_end(elf);
        error_ = path + ": has no loadable segment";
        return;
    }
    elf_ = elf;
}

ElfFile::~ElfFile() {
    if (dwarf_ != nullptr) dwarf_end(dwarf_);
    if (elf_ != nullptr) elf_end(elf_);
    if (fd_ >= 0) ::close(fd_);
}

const std::vector<FunctionSymbol> &ElfFile::functions() {
    if (!functions_read_ && elf_ != nullptr) functions_ = function_symbols(elf_);
    functions_read_ = true;
    return functions_;
}

Dwarf *ElfFile::dwarf() {
    if (!dwarf_tried_ && elf_ != nullptr) dwarf_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
    dwarf_tried_ = true;
    return dwarf_;
}

}  // namespace sonde::symbols
