// Plugin loading (see plugin.h): stat + dlopen, own-symbol lookup through the link map, the
// required-ABI check, and ownership of the handle.
#include "core/plugin.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

namespace sonde::core {

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
