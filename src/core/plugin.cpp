// Plugin loading (see plugin.h): stat, a check that the file is whole, dlopen, own-symbol
// lookup through the link map, the required-ABI check, and ownership of the handle.
#include "core/plugin.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

namespace sonde::core {

namespace {

// Reads n bytes at `offset`, retrying short reads; false when the file ends first or fails.
bool read_at(int fd, void *buf, size_t n, uint64_t offset) {
    auto *p = static_cast<unsigned char *>(buf);
    while (n != 0) {
        const ssize_t got = pread(fd, p, n, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= static_cast<size_t>(got);
        offset += static_cast<uint64_t>(got);
    }
    return true;
}

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);

// The ELF class of this library, which a plugin it can load shares.
constexpr unsigned char kOwnClass = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;

// a + b > limit, without overflow.
bool ends_past(uint64_t a, uint64_t b, uint64_t limit) { return a > limit || b > limit - a; }

// Why the shared object in `fd` (`size` bytes) is cut short, or "". dlopen maps a loadable
// segment whether or not the file holds all of it, and the first touch of a page past the end
// of the file raises SIGBUS in the calling program: a copy interrupted, or a plugin still being
// written, would kill the program instead of failing to load. So the program headers and every
// loadable segment must lie within the file. Anything else (not ELF, another class, fewer bytes
// than a header, extended numbering) is left to dlopen, which refuses it with a message.
std::string cut_short(int fd, uint64_t size) {
    Ehdr eh;
    if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0)) return "";
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != kOwnClass ||
        eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == PN_XNUM)
        return "";
    const std::string end = " past the end of the file (" + std::to_string(size) + " bytes): it is cut short";
    const uint64_t table = uint64_t{eh.e_phnum} * sizeof(Phdr);
    if (ends_past(eh.e_phoff, table, size)) return "its program headers lie" + end;
    std::vector<Phdr> ph(eh.e_phnum);
    if (!ph.empty() && !read_at(fd, ph.data(), table, eh.e_phoff))
        return "its program headers cannot be read";
    for (const Phdr &p : ph)
        if (p.p_type == PT_LOAD && ends_past(p.p_offset, p.p_filesz, size))
            return "its loaded segment at offset " + std::to_string(p.p_offset) + " ends" + end;
    return "";
}

}  // namespace

Plugin::Plugin(Plugin &&other) noexcept : handle_(other.handle_), path_(std::move(other.path_)) {
    other.handle_ = nullptr;
}

Plugin &Plugin::operator=(Plugin &&other) noexcept {
    if (this != &other) {
        close();
        handle_ = other.handle_;
        path_ = std::move(other.path_);
        other.handle_ = nullptr;
    }
    return *this;
}

sonde_status_t Plugin::open(const std::string &path, std::string *error) {
    close();
    path_ = path;
    if (path.find('/') != std::string::npos) {
        struct stat sb;
        if (stat(path.c_str(), &sb) != 0) {
            *error = "cannot open '" + path + "': " + std::strerror(errno);
            return SONDE_STATUS_ERROR_LOAD_FAILED;
        }
        // Anything but a regular file is refused: dlopen would block for ever opening a FIFO
        // with no writer (or a device that never answers). A regular file that cannot be opened
        // here is left to dlopen, which says why.
        if (!S_ISREG(sb.st_mode)) {
            *error = "'" + path + "' is " + (S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
            return SONDE_STATUS_ERROR_LOAD_FAILED;
        }
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            struct stat st;
            const std::string why =
                fstat(fd, &st) == 0 ? cut_short(fd, static_cast<uint64_t>(st.st_size)) : "";
            ::close(fd);
            if (!why.empty()) {
                *error = "'" + path + "' is not a whole shared object: " + why;
                return SONDE_STATUS_ERROR_LOAD_FAILED;
            }
        }
    }
    dlerror();
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
        const char *why = dlerror();
        *error = std::string("dlopen failed: ") + (why != nullptr ? why : "unknown error");
        return SONDE_STATUS_ERROR_LOAD_FAILED;
    }
    return SONDE_STATUS_SUCCESS;
}

void *Plugin::symbol(const char *name, std::string *why_not) const {
    if (why_not != nullptr) why_not->clear();
    if (handle_ == nullptr) return nullptr;
    void *sym = dlsym(handle_, name);
    if (sym == nullptr) return nullptr;
    struct link_map *own = nullptr, *found = nullptr;
    Dl_info info{};
    if (dlinfo(handle_, RTLD_DI_LINKMAP, &own) != 0) return nullptr;
    if (dladdr1(sym, &info, reinterpret_cast<void **>(&found), RTLD_DL_LINKMAP) == 0 || found == nullptr)
        return nullptr;
    if (found == own) return sym;
    if (why_not != nullptr) {
        const char *where = found->l_name != nullptr && *found->l_name != '\0' ? found->l_name
                            : info.dli_fname != nullptr                        ? info.dli_fname
                                                                               : "?";
        *why_not = std::string("it is not defined in the plugin but in its dependency '") + where + "'";
    }
    return nullptr;
}

sonde_status_t Plugin::check_required_abi(const char *name, uint32_t provided, const char *kind,
                                          const char *interface, std::string *error) const {
    const auto *need = static_cast<const uint32_t *>(symbol(name));
    if (need == nullptr || *need <= provided) return SONDE_STATUS_SUCCESS;
    *error = std::string("the ") + kind + " requires " + interface + " version " + std::to_string(*need) +
             ", this library provides " + std::to_string(provided);
    return SONDE_STATUS_ERROR_INCOMPATIBLE_ABI;
}

void *Plugin::release() {
    void *h = handle_;
    handle_ = nullptr;
    return h;
}

void Plugin::close() {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = nullptr;
}

}  // namespace sonde::core
