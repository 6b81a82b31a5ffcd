// Exports (see export.h). leave() of the chrome and csv writers runs once per call: it appends
// one line to a buffer, with names escaped once per function and cached.
#include "report/export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "report/format.h"

namespace sonde::report {

bool parse_export_format(const std::string &text, ExportFormat *format) {
    if (text == "chrome")
        *format = ExportFormat::chrome;
    else if (text == "folded")
        *format = ExportFormat::folded;
    else if (text == "csv")
        *format = ExportFormat::csv;
    else
        return false;
    return true;
}

void StreamWriter::flush() {
    if (!buf_.empty()) out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
    if (!out_) throw Error("write error");
}

// --- chrome ---------------------------------------------------------------------------------

ChromeWriter::ChromeWriter(const FunctionTable &functions, std::ostream &out, uint64_t pid,
                           std::string version)
    : StreamWriter(out), functions_(functions), version_(std::move(version)) {
    buf_.append("{\"traceEvents\":[");
    pid_ = ",\"pid\":";
    append_uint(pid_, pid != 0 ? pid : 1);
}

void ChromeWriter::separator() {
    buf_.append(first_ ? "\n" : ",\n");
    first_ = false;
}

const std::string &ChromeWriter::name_json(uint32_t function) {
    if (function >= names_.size()) names_.resize(functions_.size());
    std::string &s = names_[function];
    if (s.empty()) append_json_string(s, functions_.name(function));
    return s;
}

void ChromeWriter::begin_thread(const ThreadInfo &info) {
    ids_ = pid_ + ",\"tid\":";
    append_uint(ids_, info.tid != 0 ? info.tid : info.id);
    separator();
    buf_.append("{\"name\":\"thread_name\",\"ph\":\"M\"");
    buf_.append(ids_);
    buf_.append(",\"args\":{\"name\":");
    append_json_string(buf_, info.name.empty() ? "thread " + std::to_string(info.id) : info.name);
    buf_.append("}}");
    separator();
    buf_.append("{\"name\":\"thread_sort_index\",\"ph\":\"M\"");
    buf_.append(ids_);
    buf_.append(",\"args\":{\"sort_index\":");
    append_uint(buf_, info.id);
    buf_.append("}}");
}

void ChromeWriter::leave(const Call &c) {
    separator();
    buf_.append("{\"name\":");
    buf_.append(name_json(c.function));
    buf_.append(",\"ph\":\"X\",\"ts\":");
    append_us(buf_, c.begin);
    buf_.append(",\"dur\":");
    append_us(buf_, c.end - c.begin);
    buf_.append(ids_);
    buf_.push_back('}');
    maybe_flush();
}

void ChromeWriter::mark(std::string_view text, uint64_t ts) {
    separator();
    buf_.append("{\"name\":");
    append_json_string(buf_, text);
    buf_.append(",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
    append_us(buf_, ts);
    buf_.append(ids_);
    buf_.push_back('}');
    maybe_flush();
}

namespace {

// One API value as JSON: integers as numbers, doubles as numbers (non-finite ones as text),
// pointers as "0x..." text, strings as their copied text ("..." appended when cut short).
void append_api_value(std::string &out, uint32_t cls, const ApiValue &v) {
    char buf[64];
    switch (cls) {
        case api_signed:
            std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v.bits));
            out.append(buf);
            return;
        case api_unsigned: append_uint(out, v.bits); return;
        case api_double: {
            double d;
            std::memcpy(&d, &v.bits, sizeof d);
            if (std::isfinite(d)) {
                std::snprintf(buf, sizeof buf, "%.17g", d);
                out.append(buf);
            } else {
                append_json_string(out, std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf"));
            }
            return;
        }
        case api_string:
            if (v.has_text) {
                append_json_string(out, v.truncated ? std::string(v.text) + "..." : std::string(v.text));
                return;
            }
            break;
        default: break;
    }
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v.bits));
    append_json_string(out, buf);
}

}  // namespace

void ChromeWriter::api_call(const ApiCall &c) {
    const ApiFunctionInfo &f = *c.function;
    separator();
    buf_.append("{\"name\":");
    append_json_string(buf_, f.name);
    buf_.append(",\"cat\":");
    append_json_string(buf_, "api:" + f.library);
    buf_.append(",\"ph\":\"X\",\"ts\":");
    append_us(buf_, c.begin);
    buf_.append(",\"dur\":");
    append_us(buf_, c.end - std::min(c.begin, c.end));
    buf_.append(ids_);
    buf_.append(",\"args\":{");
    for (size_t i = 0; i < c.args.size() && i < f.arg_classes.size(); ++i) {
        append_json_string(buf_, i < f.arg_names.size() ? f.arg_names[i] : "arg" + std::to_string(i + 1));
        buf_.push_back(':');
        append_api_value(buf_, f.arg_classes[i], c.args[i]);
        buf_.push_back(',');
    }
    buf_.append("\"ret\":");
    if (f.return_class == api_void)
        buf_.append("null");
    else
        append_api_value(buf_, f.return_class, c.ret);
    buf_.append(",\"correlation\":");
    append_uint(buf_, c.correlation);
    buf_.append("}}");
    maybe_flush();
}

void ChromeWriter::finish(const std::vector<std::string> &warnings) {
    buf_.append("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"sonde_version\":");
    append_json_string(buf_, version_);
    buf_.append(",\"warnings\":[");
    for (size_t i = 0; i < warnings.size(); ++i) {
        if (i != 0) buf_.push_back(',');
        append_json_string(buf_, warnings[i]);
    }
    buf_.append("]}}\n");
    flush();
    out_.flush();
    if (!out_) throw Error("write error");
}

// --- folded ---------------------------------------------------------------------------------

std::string folded_frame(const std::string &name) {
    std::string s = valid_utf8(name);
    for (char &c : s) {
        if (c == ';') c = ':';
        if (c == '\n' || c == '\r') c = ' ';
    }
    return s;
}

void FoldedWriter::finish(const std::vector<std::string> &) {
    std::vector<std::string> frames(functions_.size());
    for (size_t i = 0; i < frames.size(); ++i)
        frames[i] = folded_frame(functions_.name(static_cast<uint32_t>(i)));
    // Depth-first, children by frame name, with an explicit stack (trees can be deep).
    struct Item {
        uint32_t node;
        size_t prefix;  // length of the path before this node's frame
    };
    std::string path;
    auto sorted_children = [&](uint32_t n) {
        std::vector<uint32_t> c = tree_.children(n);
        std::sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
            const std::string &fa = frames[tree_.node(a).function], &fb = frames[tree_.node(b).function];
            return fa != fb ? fa > fb : a > b;  // reversed: the stack pops the smallest first
        });
        return c;
    };
    std::vector<Item> todo;
    for (uint32_t c : sorted_children(CallTree::root)) todo.push_back(Item{c, 0});
    while (!todo.empty()) {
        const Item it = todo.back();
        todo.pop_back();
        const CallTree::Node &n = tree_.node(it.node);
        path.resize(it.prefix);
        if (it.prefix != 0) path.push_back(';');
        path.append(frames[n.function]);
        if (n.self_ns != 0) {
            buf_.append(path);
            buf_.push_back(' ');
            append_uint(buf_, n.self_ns);
            buf_.push_back('\n');
            maybe_flush();
        }
        for (uint32_t c : sorted_children(it.node)) todo.push_back(Item{c, path.size()});
    }
    flush();
    out_.flush();
    if (!out_) throw Error("write error");
}

// --- csv ------------------------------------------------------------------------------------

CsvWriter::CsvWriter(const FunctionTable &functions, std::ostream &out)
    : StreamWriter(out), functions_(functions) {
    buf_.append("thread,depth,name,begin_ns,duration_ns\n");
}

void CsvWriter::begin_thread(const ThreadInfo &info) {
    thread_.clear();
    append_uint(thread_, info.id);
    thread_.push_back(',');
}

void CsvWriter::leave(const Call &c) {
    if (c.function >= names_.size()) names_.resize(functions_.size());
    std::string &name = names_[c.function];
    if (name.empty()) {
        append_csv_field(name, functions_.name(c.function));
        name.push_back(',');
    }
    buf_.append(thread_);
    append_uint(buf_, c.depth);
    buf_.push_back(',');
    buf_.append(name);
    append_uint(buf_, c.begin);
    buf_.push_back(',');
    append_uint(buf_, c.end - c.begin);
    buf_.push_back('\n');
    maybe_flush();
}

void CsvWriter::finish(const std::vector<std::string> &) {
    flush();
    out_.flush();
    if (!out_) throw Error("write error");
}

}  // namespace sonde::report
