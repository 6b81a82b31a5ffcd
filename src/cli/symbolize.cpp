// The names of a memory trace's pcs (symbolize.h).
#include "cli/symbolize.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include <sonde/client.h>

#include "symbols/symbols.h"

namespace sonde::cli {

namespace {

uint32_t visibility_of(uint8_t binding) {
    return binding == STB_GLOBAL ? SONDE_VISIBILITY_GLOBAL
           : binding == STB_WEAK ? SONDE_VISIBILITY_WEAK
                                 : SONDE_VISIBILITY_LOCAL;
}

// Names the pcs of one module from its file.
void symbolize_module(const TraceModule &m, const uint64_t *pcs, size_t n, Symbolized *out) {
    if (m.path.empty()) return;  // the vdso: no file
    symbols::ElfFile file(m.path);
    if (!file.ok()) {
        out->notes.push_back(file.error() + " (" + std::to_string(n) + " pcs of it stay unnamed)");
        return;
    }
    if (file.load_span() != m.size) {
        out->notes.push_back(m.path + " is not the file the program mapped (its segments span " +
                             std::to_string(file.load_span()) + " bytes, the mapping " +
                             std::to_string(m.size) + "); " + std::to_string(n) + " pcs of it stay unnamed");
        return;
    }
    const uint64_t bias = m.address - file.first_load_address();
    Dwarf *dwarf = file.dwarf();
    if (dwarf == nullptr)
        out->notes.push_back(m.path +
                             " has no DWARF (build it with -g): its functions are named, not its lines");
    std::map<uint64_t, size_t> function_of;  // symbol value -> out->functions index
    for (size_t i = 0; i < n; ++i) {
        // The pc is the return address of the callback's call: the call ends at pc - 1.
        const uint64_t call = pcs[i] - 1 - bias;
        const symbols::FunctionSymbol *sym = symbols::function_at(file.functions(), call);
        if (sym != nullptr && function_of.count(sym->value) == 0) {
            function_of.emplace(sym->value, out->functions.size());
            NamedFunction f;
            f.module = m.index;
            f.address = sym->value + bias;
            f.size = sym->size;
            f.mangled = sym->mangled;
            f.full_name = symbols::demangle(sym->mangled);
            symbols::split_name(f.full_name, &f.scope, &f.name);
            f.visibility = visibility_of(sym->binding);
            symbols::SourcePosition at;
            if (symbols::source_position(dwarf, sym->value, &at)) {
                f.file = std::move(at.file);
                f.line = at.line;
            }
            out->functions.push_back(std::move(f));
        }
        symbols::SourcePosition at;
        if (!symbols::source_position(dwarf, call, &at)) continue;
        NamedLine l;
        l.module = m.index;
        l.address = pcs[i];
        l.file = std::move(at.file);
        l.line = at.line;
        l.column = at.column;
        out->lines.push_back(std::move(l));
    }
}

}  // namespace

std::vector<TraceModule> trace_modules(const sonde_trace_reader_t *reader) {
    std::vector<TraceModule> out;
    sonde_trace_event_info_t info{};
    info.struct_size = sizeof info;
    if (sonde_trace_reader_event_info(reader, &info) != SONDE_STATUS_SUCCESS) return out;
    for (uint32_t i = 0; i < info.num_modules; ++i) {
        sonde_trace_module_t m{};
        m.struct_size = sizeof m;
        if (sonde_trace_reader_get_module(reader, i, &m) != SONDE_STATUS_SUCCESS || m.size == 0) continue;
        out.push_back(TraceModule{i, m.path, m.name, m.address, m.size});
    }
    return out;
}

Symbolized symbolize(const std::vector<TraceModule> &modules, const std::vector<uint64_t> &pcs) {
    Symbolized out;
    for (const TraceModule &m : modules) {
        // pcs is sorted: the module's are one run. A pc names the call before it, so a return
        // address one past the module's end still belongs to it.
        const auto lo = std::upper_bound(pcs.begin(), pcs.end(), m.address);
        const auto hi = std::upper_bound(lo, pcs.end(), m.address + m.size);
        if (lo != hi) symbolize_module(m, &*lo, static_cast<size_t>(hi - lo), &out);
    }
    std::sort(out.functions.begin(), out.functions.end(),
              [](const NamedFunction &a, const NamedFunction &b) { return a.address < b.address; });
    std::sort(out.lines.begin(), out.lines.end(),
              [](const NamedLine &a, const NamedLine &b) { return a.address < b.address; });
    return out;
}

std::string store_symbols(const std::string &path, const Symbolized &symbols) {
    if (symbols.functions.empty() && symbols.lines.empty()) return "";  // nothing to add
    char error[512];
    sonde_trace_writer_t *w = nullptr;
    sonde_status_t st = sonde_trace_writer_reopen(path.c_str(), error, sizeof error, &w);
    if (st != SONDE_STATUS_SUCCESS) return error;
    sonde_trace_reader_t *r = nullptr;
    uint32_t first = 0;  // method indexes after the trace's own
    if (sonde_trace_reader_open(path.c_str(), SONDE_TRACE_FORMAT_SONDE, error, sizeof error, &r) ==
        SONDE_STATUS_SUCCESS) {
        sonde_trace_event_info_t info{};
        info.struct_size = sizeof info;
        if (sonde_trace_reader_event_info(r, &info) == SONDE_STATUS_SUCCESS) first = info.num_methods;
        sonde_trace_reader_close(r);
    }
    for (size_t i = 0; i < symbols.functions.size() && st == SONDE_STATUS_SUCCESS; ++i) {
        const NamedFunction &f = symbols.functions[i];
        sonde_trace_method_t m{};
        m.struct_size = sizeof m;
        m.index = first + static_cast<uint32_t>(i);
        m.name = f.name.c_str();
        m.class_name = f.scope.c_str();
        m.full_name = f.full_name.c_str();
        m.mangled_name = f.mangled.c_str();
        m.source_file = f.file.c_str();
        m.source_line = f.line;
        m.module = f.module;
        m.address = f.address;
        m.size = f.size;
        m.visibility = f.visibility;
        st = sonde_trace_writer_add_method(w, &m);
    }
    for (size_t i = 0; i < symbols.lines.size() && st == SONDE_STATUS_SUCCESS; ++i) {
        const NamedLine &l = symbols.lines[i];
        sonde_trace_line_t e{};
        e.struct_size = sizeof e;
        e.module = l.module;
        e.address = l.address;
        e.size = l.size;
        e.file = l.file.c_str();
        e.line = l.line;
        e.column = l.column;
        st = sonde_trace_writer_add_line(w, &e);
    }
    const std::string why = st != SONDE_STATUS_SUCCESS ? sonde_trace_writer_error(w) : std::string();
    const sonde_status_t closed = sonde_trace_writer_close(w);
    if (st != SONDE_STATUS_SUCCESS) return why.empty() ? sonde_status_string(st) : why;
    if (closed != SONDE_STATUS_SUCCESS) return path + ": " + sonde_status_string(closed);
    return "";
}

}  // namespace sonde::cli
