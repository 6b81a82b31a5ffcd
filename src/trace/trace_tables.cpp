// Coding of the trace tables (see trace_tables.h and docs/trace-format.md, "Tables").
#include "trace/trace_tables.h"

#include <algorithm>
#include <cstring>

#include "trace/trace_format.h"

namespace sonde::trace {

namespace {

void put32(std::vector<unsigned char> *out, uint32_t v) {
    unsigned char b[4];
    fmt::store32(b, v);
    out->insert(out->end(), b, b + 4);
}

void put64(std::vector<unsigned char> *out, uint64_t v) {
    unsigned char b[8];
    fmt::store64(b, v);
    out->insert(out->end(), b, b + 8);
}

void put_string(std::vector<unsigned char> *out, const std::string &s) {
    put32(out, static_cast<uint32_t>(s.size()));
    out->insert(out->end(), s.begin(), s.end());
}

// Bounds-checked reading of a payload.
struct Cursor {
    const unsigned char *p;
    size_t left;
    bool ok = true;
    uint32_t u32() {
        if (left < 4) return fail();
        const uint32_t v = fmt::load32(p);
        p += 4;
        left -= 4;
        return v;
    }
    uint64_t u64() {
        if (left < 8) return fail();
        const uint64_t v = fmt::load64(p);
        p += 8;
        left -= 8;
        return v;
    }
    std::string str() {
        const uint32_t n = u32();
        if (!ok || n > fmt::kMaxString || n > left) {
            fail();
            return {};
        }
        std::string s(reinterpret_cast<const char *>(p), n);
        p += n;
        left -= n;
        return s;
    }
    uint32_t fail() {
        ok = false;
        left = 0;
        return 0;
    }
};

template <typename T>
T &slot(std::vector<T> &v, uint32_t i) {
    if (i >= v.size()) v.resize(static_cast<size_t>(i) + 1);
    return v[i];
}

}  // namespace

void encode_strings(const std::vector<StringEntry> &entries, std::vector<unsigned char> *out) {
    for (const StringEntry &e : entries) {
        put32(out, e.id);
        put_string(out, e.text);
    }
}

void encode_modules(const std::vector<ModuleEntry> &entries, std::vector<unsigned char> *out) {
    for (const ModuleEntry &e : entries) {
        put32(out, e.index);
        put32(out, 0);
        put64(out, e.address);
        put64(out, e.size);
        put_string(out, e.path);
        put_string(out, e.name);
    }
}

void encode_methods(const std::vector<MethodEntry> &entries, std::vector<unsigned char> *out) {
    for (const MethodEntry &e : entries) {
        put32(out, e.index);
        put32(out, e.module);
        put64(out, e.address);
        put64(out, e.size);
        put32(out, e.source_line);
        put32(out, e.visibility);
        put_string(out, e.name);
        put_string(out, e.class_name);
        put_string(out, e.full_name);
        put_string(out, e.mangled_name);
        put_string(out, e.source_file);
    }
}

void encode_threads(const std::vector<ThreadEntry> &entries, std::vector<unsigned char> *out) {
    for (const ThreadEntry &e : entries) {
        put32(out, e.shard);
        put32(out, 0);
        put64(out, e.os_tid);
        put_string(out, e.name);
    }
}

void encode_api_functions(const std::vector<ApiFunctionEntry> &entries, std::vector<unsigned char> *out) {
    for (const ApiFunctionEntry &e : entries) {
        put32(out, e.index);
        put32(out, e.return_class);
        put_string(out, e.library);
        put_string(out, e.name);
        put_string(out, e.return_type);
        put32(out, static_cast<uint32_t>(e.arg_classes.size()));
        for (size_t i = 0; i < e.arg_classes.size(); ++i) {
            put32(out, e.arg_classes[i]);
            put_string(out, i < e.arg_types.size() ? e.arg_types[i] : std::string());
            put_string(out, i < e.arg_names.size() ? e.arg_names[i] : std::string());
        }
    }
}

void encode_lines(const std::vector<LineEntry> &entries, std::vector<unsigned char> *out) {
    for (const LineEntry &e : entries) {
        put32(out, e.module);
        put32(out, e.line);
        put64(out, e.address);
        put64(out, e.size);
        put32(out, e.file);
        put32(out, e.column);
    }
}

void Tables::link() {
    for (size_t i = 0; i < threads.size(); ++i) threads[i].shard = static_cast<uint32_t>(i);
    for (size_t i = 0; i < methods.size(); ++i) methods[i].index = static_cast<uint32_t>(i);
    for (size_t i = 0; i < modules.size(); ++i) modules[i].index = static_cast<uint32_t>(i);
    for (size_t i = 0; i < api_functions.size(); ++i) {
        ApiFunctionEntry &e = api_functions[i];
        e.index = static_cast<uint32_t>(i);
        e.arg_type_ptrs.clear();
        e.arg_name_ptrs.clear();
        for (const std::string &t : e.arg_types) e.arg_type_ptrs.push_back(t.c_str());
        for (const std::string &n : e.arg_names) e.arg_name_ptrs.push_back(n.c_str());
    }
    std::stable_sort(lines.begin(), lines.end(), [](const LineEntry &a, const LineEntry &b) {
        return a.address != b.address ? a.address < b.address : a.size < b.size;
    });
    for (LineEntry &e : lines) e.file_text = e.file < strings.size() ? strings[e.file].c_str() : "";
}

std::string Tables::apply(uint32_t type, uint32_t count, const unsigned char *data, size_t size) {
    Cursor c{data, size};
    for (uint32_t i = 0; i < count; ++i) {
        switch (type) {
            case fmt::kTableStrings: {
                const uint32_t id = c.u32();
                std::string text = c.str();
                if (!c.ok) break;
                if (id >= (1u << 24)) return "string id " + std::to_string(id) + " out of range";
                slot(strings, id) = std::move(text);
                break;
            }
            case fmt::kTableModules: {
                ModuleEntry e;
                e.index = c.u32();
                c.u32();
                e.address = c.u64();
                e.size = c.u64();
                e.path = c.str();
                e.name = c.str();
                if (!c.ok) break;
                if (e.index >= (1u << 20)) return "module index " + std::to_string(e.index) + " out of range";
                slot(modules, e.index) = std::move(e);
                break;
            }
            case fmt::kTableMethods: {
                MethodEntry e;
                e.index = c.u32();
                e.module = c.u32();
                e.address = c.u64();
                e.size = c.u64();
                e.source_line = c.u32();
                e.visibility = c.u32();
                e.name = c.str();
                e.class_name = c.str();
                e.full_name = c.str();
                e.mangled_name = c.str();
                e.source_file = c.str();
                if (!c.ok) break;
                if (e.index >= fmt::kMaxMethodIndex)
                    return "method index " + std::to_string(e.index) + " out of range";
                e.present = true;
                slot(methods, e.index) = std::move(e);
                break;
            }
            case fmt::kTableThreads: {
                ThreadEntry e;
                e.shard = c.u32();
                c.u32();
                e.os_tid = c.u64();
                e.name = c.str();
                if (!c.ok) break;
                if (e.shard > fmt::kMaxShard)
                    return "thread shard " + std::to_string(e.shard) + " out of range";
                e.present = true;
                slot(threads, e.shard) = std::move(e);
                break;
            }
            case fmt::kTableApiFunctions: {
                ApiFunctionEntry e;
                e.index = c.u32();
                e.return_class = c.u32();
                e.library = c.str();
                e.name = c.str();
                e.return_type = c.str();
                const uint32_t nargs = c.u32();
                if (c.ok && nargs > fmt::kMaxApiArgs)
                    return "API function " + std::to_string(e.index) + ": " + std::to_string(nargs) +
                           " arguments (at most " + std::to_string(fmt::kMaxApiArgs) + ")";
                for (uint32_t a = 0; c.ok && a < nargs; ++a) {
                    e.arg_classes.push_back(c.u32());
                    e.arg_types.push_back(c.str());
                    e.arg_names.push_back(c.str());
                }
                if (!c.ok) break;
                if (e.index >= fmt::kMaxMethodIndex)
                    return "API function index " + std::to_string(e.index) + " out of range";
                e.present = true;
                slot(api_functions, e.index) = std::move(e);
                break;
            }
            case fmt::kTableLines: {
                LineEntry e;
                e.module = c.u32();
                e.line = c.u32();
                e.address = c.u64();
                e.size = c.u64();
                e.file = c.u32();
                e.column = c.u32();
                if (!c.ok) break;
                if (e.size == 0 || e.address + (e.size - 1) < e.address)
                    return "line entry " + std::to_string(i) + ": empty range or a range past 2^64";
                lines.push_back(e);
                break;
            }
            default: return {};
        }
        if (!c.ok) return "table entry " + std::to_string(i) + " runs past the end of the table";
    }
    return {};
}

}  // namespace sonde::trace
