// Detection of -finstrument-functions hooks and sanitizer-coverage load/store callbacks in a program's ELF symbol tables (libelf), for the
// warnings of `sonde run` and `sonde record`.
#include "cli/instrumented.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

std::string find_program(const std::string &name) {
    if (name.find('/') != std::string::npos) return name;
    const char *path = getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t pos = 0;
    while (pos <= dirs.size()) {
        size_t end = dirs.find(':', pos);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(pos, end - pos);
        pos = end + 1;
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
}

namespace {

// Whether `path`'s symbol tables name a symbol that `match` accepts; true when it cannot be
// told (not ELF, unreadable).
template <typename Match>
bool has_symbol(const std::string &path, Match match) {
    if (path.empty() || elf_version(EV_CURRENT) == EV_NONE) return true;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    bool found = false, is_elf = elf != nullptr && elf_kind(elf) == ELF_K_ELF;
    Elf_Scn *scn = nullptr;
    while (is_elf && !found && (scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
            sh.sh_entsize == 0)
            continue;
        Elf_Data *data = elf_getdata(scn, nullptr);
        if (data == nullptr) continue;
        const size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n && !found; ++i) {
            GElf_Sym s;
            if (gelf_getsym(data, static_cast<int>(i), &s) == nullptr) continue;
            const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
            found = name != nullptr && match(name, s);
        }
    }
    if (elf != nullptr) elf_end(elf);
    close(fd);
    return found || !is_elf;
}

}  // namespace

bool calls_instrument_hooks(const std::string &path) {
    return has_symbol(path, [](const char *name, const GElf_Sym &) {
        return std::strcmp(name, "__cyg_profile_func_enter") == 0;
    });
}

bool calls_memtrace_callbacks(const std::string &path) {
    return has_symbol(path, [](const char *name, const GElf_Sym &) {
        return std::strncmp(name, "__sanitizer_cov_load", 20) == 0 ||
               std::strncmp(name, "__sanitizer_cov_store", 21) == 0;
    });
}

bool defines_guard_callback(const std::string &path) {
    if (path.empty()) return false;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;  // cannot be told
    close(fd);
    bool is_elf = false;
    const bool found = has_symbol(path, [&is_elf](const char *name, const GElf_Sym &s) {
        is_elf = true;
        return s.st_shndx != SHN_UNDEF && std::strcmp(name, "__sanitizer_cov_trace_pc_guard") == 0;
    });
    return found && is_elf;
}

std::string preload_obstacle(const std::string &path) {
    if (path.empty() || elf_version(EV_CURRENT) == EV_NONE) return "";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    std::string why;
    GElf_Ehdr eh;
    size_t phnum = 0;
    if (elf != nullptr && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh) != nullptr &&
        eh.e_type == ET_EXEC && elf_getphdrnum(elf, &phnum) == 0) {
        bool interp = false;
        for (size_t i = 0; i < phnum && !interp; ++i) {
            GElf_Phdr ph;
            interp = gelf_getphdr(elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_INTERP;
        }
        if (!interp)
            why = "is statically linked (no program interpreter), so LD_PRELOAD cannot load Sonde into it";
    }
    if (elf != nullptr) elf_end(elf);
    close(fd);
    return why;
}

std::string memtrace_refusal(const std::string &program, bool blocks) {
    const std::string path = find_program(program);
    if (!calls_memtrace_callbacks(path))
        return program +
               " is not instrumented for memory references (it has no "
               "__sanitizer_cov_load/__sanitizer_cov_store "
               "callbacks); build it with\n"
               "  clang -fsanitize-coverage=trace-pc-guard,trace-loads,trace-stores ... "
               "$(pkg-config --libs sonde-instrument)";
    if (blocks && defines_guard_callback(path))
        return "--blocks: " + program +
               " has its own __sanitizer_cov_trace_pc_guard (clang's sanitizer runtime), so its basic blocks "
               "cannot be recorded; link it with -fno-sanitize-link-runtime";
    return "";
}

void warn_uninstrumented(const char *verb, const std::string &program) {
    std::fprintf(stderr,
                 "%s: warning: %s has no instrumentation hooks (it never calls __cyg_profile_func_enter), "
                 "so no function call is reported; build it with -finstrument-functions\n",
                 verb, program.c_str());
}

std::string instrument_library_path() {
    const char *env = getenv("SONDE_INSTRUMENT_LIBRARY");
    if (env != nullptr && *env != '\0') return env;
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const std::string self = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
    const std::string build_root = SONDE_BUILD_ROOT;
    if (self.compare(0, build_root.size() + 1, build_root + "/") == 0 &&
        access(SONDE_INSTRUMENT_BUILD_PATH, R_OK) == 0)
        return SONDE_INSTRUMENT_BUILD_PATH;
    // Installed: next to this executable's library directory (bin/../<libdir>), so that a
    // moved prefix uses its own copy, not the one at the configured prefix.
    const size_t slash = self.rfind('/');
    if (slash != std::string::npos) {
        const std::string beside = self.substr(0, slash) + "/../" SONDE_LIBDIR "/libsonde-instrument.so";
        char abs[4096];
        if (access(beside.c_str(), R_OK) == 0) return realpath(beside.c_str(), abs) != nullptr ? abs : beside;
    }
    if (access(SONDE_INSTRUMENT_INSTALL_PATH, R_OK) == 0) return SONDE_INSTRUMENT_INSTALL_PATH;
    return "";
}
