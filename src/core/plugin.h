// Plugin loading, shared by client plugins (src/client/loader.cpp) and analysis tool plugins
// (src/analysis/analyzer.cpp): one shared object opened with dlopen(RTLD_NOW | RTLD_LOCAL), whose
// symbols count only when the object defines them itself.
//
// dlsym on a handle also searches the object's dependencies, so a plugin that merely links a
// library defining an entry point would otherwise be accepted and run that library's code.
// Plugin::symbol takes a definition only when the link map that dladdr1 gives for it is the
// plugin's own (dlinfo RTLD_DI_LINKMAP); the rule holds for required and optional symbols alike.
//
// Threads: a Plugin belongs to one thread at a time; dlopen, dlsym and dlclose are thread-safe.
// A Plugin closes its object when destroyed unless release() gave the object up.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include <sonde/status.h>

namespace sonde::core {

class Plugin {
public:
    Plugin() = default;
    ~Plugin() { close(); }
    Plugin(Plugin &&other) noexcept;
    Plugin &operator=(Plugin &&other) noexcept;
    Plugin(const Plugin &) = delete;
    Plugin &operator=(const Plugin &) = delete;

    // Opens `path` (closing what this Plugin held). A path with a '/' is first checked: it
    // must exist and be a regular file (a FIFO would block dlopen for ever), and a shared
    // object must be whole (its program headers and loadable segments within the file: dlopen
    // would map a missing part, and the program die of SIGBUS at its first touch). A bare file
    // name is left to dlopen's search (stat would look in the working directory, which dlopen
    // does not), as is a file cut while it is being opened. On failure: LOAD_FAILED and *error
    // is "cannot open 'PATH': <reason>", "'PATH' is a directory", "'PATH' is not a regular
    // file", "'PATH' is not a whole shared object: <what lies past the end>" or "dlopen
    // failed: <dlerror, which names the file>".
    sonde_status_t open(const std::string &path, std::string *error);

    bool is_open() const { return handle_ != nullptr; }
    void *handle() const { return handle_; }
    const std::string &path() const { return path_; }

    // The address of `name` when the plugin object defines it itself, nullptr otherwise. When
    // only a dependency defines it and `why_not` is given, *why_not says so and names that
    // object ("it is not defined in the plugin but in its dependency 'D'"); else it is cleared.
    void *symbol(const char *name, std::string *why_not = nullptr) const;

    // symbol() as a function pointer of type Fn.
    template <typename Fn>
    Fn function(const char *name, std::string *why_not = nullptr) const {
        void *sym = symbol(name, why_not);
        Fn fn = nullptr;
        static_assert(sizeof(fn) == sizeof(sym), "function and data pointers differ in size");
        std::memcpy(&fn, &sym, sizeof fn);
        return fn;
    }

    // Checks the optional `const uint32_t` that the plugin may define as `name` to say the least
    // interface version it needs. SUCCESS when the plugin does not define it itself or needs at
    // most `provided`; otherwise INCOMPATIBLE_ABI and *error is "the KIND requires INTERFACE
    // version N, this library provides M".
    sonde_status_t check_required_abi(const char *name, uint32_t provided, const char *kind,
                                      const char *interface, std::string *error) const;

    // Gives the object up: it stays loaded for the rest of the process. Returns its handle.
    void *release();
    // dlcloses the object now (nothing if none is open).
    void close();

private:
    void *handle_ = nullptr;
    std::string path_;
};

}  // namespace sonde::core
