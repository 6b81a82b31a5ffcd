// API tracing: the tracer (see tracer.h): resolution of the spec in the loaded libraries,
// patching of import slots, and the dlopen/dlclose hooks.
#include "apitrace/tracer.h"

#include <dlfcn.h>
#include <fnmatch.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "apitrace/dwarf.h"
#include "apitrace/elf_slots.h"

namespace sonde::apitrace {

namespace {

using dlopen_fn = void *(*)(const char *, int);
using dlclose_fn = int (*)(void *);

struct Patch {
    LoadedModule module;
    void **slot;
    void *old;
};

struct State {
    std::mutex mu;
    bool running = false;
    Sink sink;
    std::vector<Target> targets;
    Prototypes prototypes;
    std::vector<TracedFunction> functions;
    // The wrappers of this tracing run, which patching points slots at; at stop they move to
    // `retired`, never freed (a thread may still run in one) and never installed again: a
    // later run makes its own, so a slot never leads to a wrapper of an earlier run.
    std::vector<Wrapper *> wrappers;
    std::vector<Wrapper *> retired;
    std::set<std::string> matched;   // the spec's library patterns that matched a loaded library
    std::set<std::string> resolved;  // paths of the libraries whose functions were looked up
    std::vector<Patch> patches;
    std::set<void **> patched;
    std::vector<std::string> warnings;
    dlopen_fn real_dlopen = nullptr;
    dlclose_fn real_dlclose = nullptr;
};

// traced_function(): the entries of State::functions, copied once and published in order.
constexpr uint32_t kMaxPublished = 1u << 16;
// The most a prototype file may hold. Declarations are a few dozen bytes each: this is hundreds
// of thousands of them, where a file of a library's whole API is tens of kilobytes.
constexpr size_t kMaxPrototypeBytes = size_t{16} << 20;
std::atomic<const TracedFunction *> g_published[kMaxPublished];
std::atomic<uint32_t> g_num_published{0};

State &state() {
    static State *s = new State();  // outlives static destructors: hooks may run during exit
    return *s;
}

void *hook_dlopen(const char *file, int mode);
int hook_dlclose(void *handle);

// Publishes the functions added to s.functions since the last call (the lock held), before
// any slot is pointed at their wrappers.
void publish(State &s) {
    for (uint32_t i = g_num_published.load(std::memory_order_relaxed);
         i < s.functions.size() && i < kMaxPublished; ++i) {
        g_published[i].store(new TracedFunction(s.functions[i]), std::memory_order_release);
        g_num_published.store(i + 1, std::memory_order_release);
        if (s.sink.added != nullptr) s.sink.added(s.sink.ctx, i);
    }
}

std::string trim(const std::string &s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string part;
    std::istringstream in(s);
    while (std::getline(in, part, sep)) out.push_back(trim(part));
    if (!s.empty() && s.back() == sep) out.push_back("");
    return out;
}

bool is_glob(const std::string &s) { return s.find_first_of("*?[") != std::string::npos; }

// Modules whose slots are never patched: the loader, the vDSO, the module holding this code
// (libsonde; the main program when a test links this code in), and libffi.
bool excluded(const LoadedModule &m) {
    if (m.path.find("ld-linux") != std::string::npos || m.path.find("linux-vdso") != std::string::npos)
        return true;
    if (m.dynamic == nullptr) return true;
    Dl_info self{}, ffi{};
    if (dladdr(reinterpret_cast<void *>(&hook_dlopen), &self) != 0 && !m.path.empty() &&
        reinterpret_cast<uintptr_t>(self.dli_fbase) == m.begin)
        return true;
    if (dladdr(reinterpret_cast<void *>(&ffi_call), &ffi) != 0 &&
        reinterpret_cast<uintptr_t>(ffi.dli_fbase) == m.begin)
        return true;
    return false;
}

// Looks up the functions `t` names in the loaded library `m` and makes their wrappers. With
// `strict`, a missing function or signature fails; otherwise it becomes a warning.
bool resolve(State &s, const LoadedModule &m, const Target &t, bool strict, uint32_t first_id,
             std::vector<TracedFunction> &fns, std::vector<Wrapper *> &made, std::string &error) {
    std::vector<std::string> defined;
    for_each_defined_function(m, [&](const char *name) { defined.emplace_back(name); });
    const std::string lib = base_name(m.path);
    std::vector<std::string> names;
    for (const std::string &f : t.functions) {
        size_t found = 0;
        for (const std::string &d : defined) {
            if (is_glob(f) ? fnmatch(f.c_str(), d.c_str(), 0) == 0 : d == f) {
                names.push_back(d);
                ++found;
                if (!is_glob(f)) break;
            }
        }
        if (found == 0) {
            const std::string what = is_glob(f) ? lib + ": no function matches '" + f + "'"
                                                : lib + ": no function '" + f + "' (" + m.path + ")";
            if (strict) {
                error = what;
                return false;
            }
            s.warnings.push_back(what);
        }
    }
    void *handle = s.real_dlopen(m.path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    // Signatures: the prototypes file, then the library's debug information (read once, when
    // the file leaves a function undeclared), then the built-in table.
    DwarfSignatures dwarf;
    bool dwarf_opened = false;
    for (const std::string &name : names) {
        const Signature *sig = s.prototypes.find(name);
        std::string refused;
        if (sig == nullptr) {
            if (!dwarf_opened) {
                std::string ignored;  // a library the loader loaded is ELF; no DWARF is no error
                dwarf.open(m.path, ignored);
                dwarf_opened = true;
            }
            sig = dwarf.find(name, refused);
        }
        if (sig == nullptr && refused.empty()) sig = builtin_prototypes().find(name);
        std::string what;
        void *original = handle != nullptr ? dlsym(handle, name.c_str()) : nullptr;
        Wrapper *w = nullptr;
        if (!refused.empty()) {
            what = lib + ": " + refused +
                   " (its debug information says so; declare it otherwise in an "
                   "--api-prototypes file)";
        } else if (sig == nullptr) {
            what =
                lib + ": " + name +
                ": no signature known (no debug information declares it; declare it in an --api-prototypes "
                "file)";
        } else if (original == nullptr) {
            what = lib + ": " + name + ": not found by dlsym";
        } else {
            const uint32_t id = first_id + static_cast<uint32_t>(fns.size());
            w = Wrapper::create(*sig, original, id, s.sink, what).release();
        }
        if (w == nullptr) {
            if (strict) {
                if (handle != nullptr) s.real_dlclose(handle);
                error = what;
                return false;
            }
            s.warnings.push_back(what);
            continue;
        }
        made.push_back(w);
        fns.push_back({w->id(), lib, *sig, m.path});
    }
    if (handle != nullptr) s.real_dlclose(handle);
    return true;
}

// Points every import slot of `m` named after a traced function (and bound, or still lazily
// bound, to that function) at its wrapper, and its dlopen/dlclose slots at the hooks.
void patch_module(State &s, const LoadedModule &m) {
    if (excluded(m)) return;
    for_each_import_slot(m, [&](const char *name, void **slot) {
        if (s.patched.count(slot) != 0) return;
        void *value = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        const auto v = reinterpret_cast<uintptr_t>(value);
        const bool unbound = v >= m.begin && v < m.end;  // a lazy slot still points into its PLT
        void *target = nullptr;
        if (std::strcmp(name, "dlopen") == 0) {
            target = reinterpret_cast<void *>(&hook_dlopen);
        } else if (std::strcmp(name, "dlclose") == 0) {
            target = reinterpret_cast<void *>(&hook_dlclose);
        } else {
            for (Wrapper *w : s.wrappers) {
                if (w->signature().name != name) continue;
                if (value == w->original() || (unbound && dlsym(RTLD_DEFAULT, name) == w->original())) {
                    target = w->entry();
                    break;
                }
            }
        }
        if (target == nullptr || target == value) return;
        if (write_slot(m, slot, target)) {
            s.patches.push_back({m, slot, value});
            s.patched.insert(slot);
        }
    });
}

void restore_all(State &s) {
    for (auto it = s.patches.rbegin(); it != s.patches.rend(); ++it)
        write_slot(it->module, it->slot, it->old);
    s.patches.clear();
    s.patched.clear();
}

// Resolves the libraries of the spec that appeared since the last scan (leniently), forgets
// those that went away, and patches every loaded module.
void rescan(State &s) {
    const std::vector<LoadedModule> modules = loaded_modules();
    std::set<std::string> present;
    for (const LoadedModule &m : modules) present.insert(m.path);
    for (auto it = s.resolved.begin(); it != s.resolved.end();)
        it = present.count(*it) ? std::next(it) : s.resolved.erase(it);
    for (const LoadedModule &m : modules) {
        if (s.resolved.count(m.path) != 0) continue;
        bool named = false;
        for (const Target &t : s.targets) {
            if (!library_matches(t.library, m.path)) continue;
            named = true;
            std::vector<TracedFunction> fns;
            std::vector<Wrapper *> made;
            std::string unused;
            resolve(s, m, t, false, static_cast<uint32_t>(s.functions.size()), fns, made, unused);
            s.matched.insert(t.library);
            s.functions.insert(s.functions.end(), fns.begin(), fns.end());
            s.wrappers.insert(s.wrappers.end(), made.begin(), made.end());
        }
        if (named) s.resolved.insert(m.path);
    }
    publish(s);
    for (const LoadedModule &m : modules) patch_module(s, m);
}

void *hook_dlopen(const char *file, int mode) {
    State &s = state();
    void *h = s.real_dlopen(file, mode);
    if (h != nullptr) {
        std::lock_guard<std::mutex> lock(s.mu);
        if (s.running) rescan(s);
    }
    return h;
}

// The library may be unmapped by the real dlclose: every slot goes back first (a wrapper's
// original must not outlive its library), then what is still loaded is patched again. Calls
// made by other threads in between are not traced.
int hook_dlclose(void *handle) {
    State &s = state();
    {
        std::lock_guard<std::mutex> lock(s.mu);
        if (s.running) restore_all(s);
    }
    const int rc = s.real_dlclose(handle);
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.running) rescan(s);
    return rc;
}

}  // namespace

bool parse_spec(const std::string &spec, std::vector<Target> &out, std::string &error) {
    out.clear();
    for (const std::string &part : split(spec, ';')) {
        if (part.empty()) continue;
        const size_t colon = part.find(':');
        if (colon == std::string::npos) {
            error = "--api '" + spec + "': '" + part + "' has no ':' between the library and its functions";
            return false;
        }
        Target t;
        t.library = trim(part.substr(0, colon));
        if (t.library.empty()) {
            error = "--api '" + spec + "': a library name is missing before ':'";
            return false;
        }
        for (const std::string &f : split(part.substr(colon + 1), ',')) {
            if (f.empty()) {
                error = "--api '" + spec + "': an empty function name for '" + t.library + "'";
                return false;
            }
            t.functions.push_back(f);
        }
        if (t.functions.empty()) {
            error = "--api '" + spec + "': no function named for '" + t.library + "'";
            return false;
        }
        out.push_back(std::move(t));
    }
    if (out.empty()) {
        error = "--api '" + spec + "': no library named";
        return false;
    }
    return true;
}

bool start_tracing(const TracerOptions &options, Sink sink, std::string &error) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.running) {
        error = "API tracing already runs in this process";
        return false;
    }
    std::vector<Target> targets;
    if (!parse_spec(options.spec, targets, error)) return false;
    Prototypes prototypes;
    if (!options.prototypes_path.empty()) {
        std::ifstream in(options.prototypes_path, std::ios::binary);
        if (!in) {
            error = options.prototypes_path + ": cannot read: " + std::strerror(errno);
            return false;
        }
        // Read up to the limit: a file that never ends (/dev/zero, a pipe that keeps writing)
        // is refused instead of filling the program's memory.
        std::string text;
        char chunk[16384];
        while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
            text.append(chunk, static_cast<size_t>(in.gcount()));
            if (text.size() > kMaxPrototypeBytes) {
                error = options.prototypes_path + ": more than " + std::to_string(kMaxPrototypeBytes >> 20) +
                        " MiB: not a prototype file";
                return false;
            }
        }
        if (in.bad()) {
            error = options.prototypes_path + ": cannot read: " + std::strerror(errno);
            return false;
        }
        if (!prototypes.parse(text, options.prototypes_path, error)) return false;
    }
    if (s.real_dlopen == nullptr) {
        s.real_dlopen = reinterpret_cast<dlopen_fn>(dlsym(RTLD_DEFAULT, "dlopen"));
        s.real_dlclose = reinterpret_cast<dlclose_fn>(dlsym(RTLD_DEFAULT, "dlclose"));
        if (s.real_dlopen == nullptr || s.real_dlclose == nullptr) {
            error = "dlopen and dlclose cannot be found";
            return false;
        }
    }
    s.sink = sink;
    s.prototypes = prototypes;
    // Strict resolution of what is loaded now: any error leaves the process untouched.
    std::vector<TracedFunction> fns;
    std::vector<Wrapper *> made;
    std::set<std::string> resolved, matched;
    bool ok = true;
    for (const LoadedModule &m : loaded_modules()) {
        for (const Target &t : targets) {
            if (!ok || !library_matches(t.library, m.path)) continue;
            resolved.insert(m.path);
            std::vector<TracedFunction> more;
            std::vector<Wrapper *> more_made;
            ok = resolve(s, m, t, true, static_cast<uint32_t>(s.functions.size() + fns.size()), more,
                         more_made, error);
            made.insert(made.end(), more_made.begin(), more_made.end());
            fns.insert(fns.end(), more.begin(), more.end());
            matched.insert(t.library);
        }
    }
    if (!ok) {
        for (Wrapper *w : made) delete w;  // never installed
        return false;
    }
    s.targets = targets;
    s.matched = matched;
    s.functions.insert(s.functions.end(), fns.begin(), fns.end());
    s.wrappers.insert(s.wrappers.end(), made.begin(), made.end());
    s.resolved = resolved;
    s.warnings.clear();
    s.running = true;
    rescan(s);
    return true;
}

void stop_tracing() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.running) return;
    restore_all(s);
    for (const Target &t : s.targets) {
        if (s.matched.count(t.library) == 0)
            s.warnings.push_back(t.library + ": never loaded; nothing of it was traced");
    }
    s.retired.insert(s.retired.end(), s.wrappers.begin(), s.wrappers.end());
    s.wrappers.clear();
    s.running = false;
}

const TracedFunction *traced_function(uint32_t id) {
    if (id >= g_num_published.load(std::memory_order_acquire)) return nullptr;
    return g_published[id].load(std::memory_order_acquire);
}

uint32_t traced_function_count() { return g_num_published.load(std::memory_order_acquire); }

std::vector<TracedFunction> traced_functions() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    return s.functions;
}

std::vector<std::string> tracing_warnings() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    return s.warnings;
}

size_t patched_slot_count() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    return s.patches.size();
}

}  // namespace sonde::apitrace
