// What `sonde run` checks of a client plugin before it starts the program (see client_check.h).
#include "cli/client_check.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <sonde/client.h>

namespace sonde::cli {

namespace {

// An open ELF file; closed and released on scope exit.
struct ElfFile {
    int fd = -1;
    Elf *elf = nullptr;
    ElfFile() = default;
    ElfFile(const ElfFile &) = delete;
    ElfFile &operator=(const ElfFile &) = delete;
    ~ElfFile() {
        if (elf != nullptr) elf_end(elf);
        if (fd >= 0) close(fd);
    }
    bool open(const char *path) {
        fd = ::open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return false;
        elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
        return true;
    }
};

std::string q(const std::string &s) { return "'" + s + "'"; }

const char *type_name(unsigned type) {
    switch (type) {
        case ET_REL: return "a relocatable object (.o)";
        case ET_EXEC: return "an executable";
        case ET_CORE: return "a core file";
        default: return "not a shared object";
    }
}

// The class and machine of this program, which the program to run shares: the instrumentation
// library it preloads is built like the launcher.
bool own_identity(int *elf_class, unsigned *machine) {
    ElfFile self;
    GElf_Ehdr eh;
    if (!self.open("/proc/self/exe") || self.elf == nullptr || gelf_getehdr(self.elf, &eh) == nullptr)
        return false;
    *elf_class = gelf_getclass(self.elf);
    *machine = eh.e_machine;
    return true;
}

struct Symbol {
    bool found = false;    // present in the dynamic symbol table
    bool defined = false;  // defined by this object (not SHN_UNDEF), exported
    GElf_Sym sym{};
};

// Looks `name` up in every SHT_DYNSYM section.
Symbol find_dynamic_symbol(Elf *elf, const char *name) {
    Symbol out;
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0) continue;
        Elf_Data *data = elf_getdata(scn, nullptr);
        if (data == nullptr) continue;
        const size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < count; ++i) {
            GElf_Sym sym;
            if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
            const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (n == nullptr || std::strcmp(n, name) != 0) continue;
            const unsigned bind = GELF_ST_BIND(sym.st_info);
            const unsigned vis = GELF_ST_VISIBILITY(sym.st_other);
            const bool exported = (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
                                  (vis == STV_DEFAULT || vis == STV_PROTECTED);
            out.found = true;
            if (sym.st_shndx != SHN_UNDEF && exported) {
                out.defined = true;
                out.sym = sym;
                return out;
            }
        }
    }
    return out;
}

// The 32-bit value of a defined data symbol, read from its section; false when it cannot be read.
bool read_u32(Elf *elf, const GElf_Sym &sym, uint32_t *value) {
    if (sym.st_size < 4 || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) return false;
    Elf_Scn *scn = elf_getscn(elf, sym.st_shndx);
    GElf_Shdr sh;
    if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr) return false;
    if (sh.sh_type == SHT_NOBITS) {
        *value = 0;
        return true;
    }
    if (sym.st_value < sh.sh_addr || sym.st_value - sh.sh_addr + 4 > sh.sh_size) return false;
    Elf_Data *data = elf_rawdata(scn, nullptr);
    const uint64_t off = sym.st_value - sh.sh_addr;
    if (data == nullptr || data->d_buf == nullptr || off + 4 > data->d_size) return false;
    const auto *b = static_cast<const unsigned char *>(data->d_buf) + off;
    GElf_Ehdr eh;
    if (gelf_getehdr(elf, &eh) == nullptr) return false;
    *value = eh.e_ident[EI_DATA] == ELFDATA2MSB
                 ? (uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3])
                 : (uint32_t{b[3]} << 24 | uint32_t{b[2]} << 16 | uint32_t{b[1]} << 8 | b[0]);
    return true;
}

// a + b * c > limit, without overflow.
bool past(uint64_t a, uint64_t b, uint64_t c, uint64_t limit) {
    if (a > limit) return true;
    return c != 0 && b > (limit - a) / c;
}

// Why the file cannot be a whole ELF object of `size` bytes: its header places its program
// headers, a loaded segment or its section headers past the end (a copy cut short), or it has
// no segment to load; "" when it could be. libelf opens such a file, and with no section
// headers to read the check would pass it, to be refused by dlopen inside the program.
std::string extent_problem(Elf *elf, const GElf_Ehdr &eh, uint64_t size) {
    const std::string end = " past the end of the file (" + std::to_string(size) + " bytes): it is cut short";
    // The header's own counts: libelf's count leaves out the entries past the end of the file.
    size_t phnum = eh.e_phnum;
    if (phnum == PN_XNUM && elf_getphdrnum(elf, &phnum) != 0)
        return std::string("a bad program header table: ") + elf_errmsg(-1);
    if (past(eh.e_phoff, phnum, eh.e_phentsize, size)) return "its program headers lie" + end;
    bool load = false;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr)
            return "program header " + std::to_string(i) + " cannot be read: " + elf_errmsg(-1);
        if (ph.p_type != PT_LOAD) continue;
        load = true;
        if (past(ph.p_offset, 1, ph.p_filesz, size))
            return "its loaded segment at offset " + std::to_string(ph.p_offset) + " ends" + end;
    }
    if (!load) return "it has no segment to load";
    if (eh.e_shoff != 0) {
        size_t shnum = eh.e_shnum;
        if (shnum == 0 && elf_getshdrnum(elf, &shnum) != 0) shnum = 1;  // extended numbering: at least one
        if (past(eh.e_shoff, shnum, eh.e_shentsize, size)) return "its section headers lie" + end;
    }
    return "";
}

}  // namespace

std::string check_client_plugin(const std::string &path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return q(path) + ": " + std::strerror(errno);
    if (S_ISDIR(st.st_mode)) return q(path) + " is a directory";
    if (!S_ISREG(st.st_mode)) return q(path) + " is not a regular file";
    if (elf_version(EV_CURRENT) == EV_NONE) return "libelf is unusable: " + std::string(elf_errmsg(-1));
    ElfFile f;
    if (!f.open(path.c_str())) return q(path) + ": cannot read: " + std::strerror(errno);
    if (f.elf == nullptr || elf_kind(f.elf) != ELF_K_ELF) return q(path) + " is not an ELF file";
    int own_class = 0;
    unsigned own_machine = 0;
    if (!own_identity(&own_class, &own_machine)) return "cannot read this program's own ELF header";
    const int cls = gelf_getclass(f.elf);
    if (cls != own_class)
        return q(path) + " is a " +
               (cls == ELFCLASS32   ? "32"
                : cls == ELFCLASS64 ? "64"
                                    : "?") +
               "-bit ELF object; the program runs " + (own_class == ELFCLASS32 ? "32" : "64") + "-bit ones";
    GElf_Ehdr eh;
    if (gelf_getehdr(f.elf, &eh) == nullptr) return q(path) + ": bad ELF header: " + elf_errmsg(-1);
    if (eh.e_machine != own_machine)
        return q(path) + " is built for another machine (ELF machine " + std::to_string(eh.e_machine) +
               ", this one is " + std::to_string(own_machine) + ")";
    if (eh.e_type != ET_DYN) return q(path) + " is " + type_name(eh.e_type) + ", not a shared object";
    const std::string damaged = extent_problem(f.elf, eh, static_cast<uint64_t>(st.st_size));
    if (!damaged.empty()) return q(path) + " is not a whole shared object: " + damaged;
    size_t sections = 0;
    if (elf_getshdrnum(f.elf, &sections) != 0) return q(path) + ": bad ELF section table: " + elf_errmsg(-1);
    // Without section headers (sstrip) the symbols cannot be read here; the loader still checks.
    if (sections == 0) return "";
    const Symbol entry = find_dynamic_symbol(f.elf, SONDE_CLIENT_ENTRY_NAME);
    if (!entry.defined) {
        if (entry.found)
            return q(path) +
                   " does not define " SONDE_CLIENT_ENTRY_NAME
                   " itself: it refers to one defined elsewhere (a dependency), which does not count";
        return q(path) + " has no entry point: it does not export " SONDE_CLIENT_ENTRY_NAME;
    }
    const unsigned type = GELF_ST_TYPE(entry.sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC)
        return q(path) + ": " SONDE_CLIENT_ENTRY_NAME " is not a function";
    const Symbol need = find_dynamic_symbol(f.elf, SONDE_CLIENT_REQUIRED_ABI_NAME);
    uint32_t required = 0;
    if (need.defined && read_u32(f.elf, need.sym, &required) && required > SONDE_CLIENT_ABI_VERSION)
        return q(path) + " requires client ABI version " + std::to_string(required) +
               ", this Sonde provides " + std::to_string(SONDE_CLIENT_ABI_VERSION);
    return "";
}

}  // namespace sonde::cli
