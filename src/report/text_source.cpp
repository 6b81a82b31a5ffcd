// The event text format reader (see text_source.h). read() parses one line per event with
// std::from_chars; only mark texts are copied.
#include "report/text_source.h"

#include <sys/types.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace sonde::report {

namespace {

constexpr std::string_view kMagic = "sonde-events 1";

// Splits off the first word of `s` (separated by one space or tab); `s` keeps the rest.
std::string_view word(std::string_view &s) {
    const size_t end = s.find_first_of(" \t");
    const std::string_view w = s.substr(0, end);
    s = end == std::string_view::npos ? std::string_view() : s.substr(end + 1);
    return w;
}

template <typename T>
bool number(std::string_view w, T *out) {
    if (w.empty()) return false;
    const auto r = std::from_chars(w.data(), w.data() + w.size(), *out);
    return r.ec == std::errc() && r.ptr == w.data() + w.size();
}

}  // namespace

bool TextEventSource::recognizes(const std::string &path) {
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    char head[32] = {};
    const size_t n = std::fread(head, 1, sizeof head - 1, f);
    std::fclose(f);
    const std::string_view h(head, n);
    return h.substr(0, kMagic.size()) == kMagic &&
           (h.size() == kMagic.size() || h[kMagic.size()] == '\n' || h[kMagic.size()] == '\r');
}

TextEventSource::TextEventSource(const std::string &path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw Error(path + ": " + std::strerror(errno));
    try {
        read_header();
    } catch (...) {  // no destructor runs for a constructor that throws: release here
        std::fclose(file_);
        file_ = nullptr;
        std::free(buf_);
        buf_ = nullptr;
        throw;
    }
}

void TextEventSource::read_header() {
    if (!next_line() || line_ != kMagic) {
        lineno_ = 1;
        malformed("not an event text file (its first line must be \"sonde-events 1\")");
    }
    while (next_line()) {
        std::string_view rest = line_;
        const std::string_view key = word(rest);
        if (key == "thread") {
            pending_thread_ = true;
            return;
        }
        if (key == "pid") {
            if (!number(word(rest), &pid_) || !rest.empty()) malformed("expected: pid PID");
        } else if (key == "method") {
            uint32_t index = 0;
            MethodInfo m;
            if (!number(word(rest), &index)) malformed("expected: method INDEX MODULE FILE LINE NAME");
            const std::string_view module = word(rest), file = word(rest);
            if (module.empty() || file.empty() || !number(word(rest), &m.line) || rest.empty())
                malformed("expected: method INDEX MODULE FILE LINE NAME");
            if (module != "-") m.module = std::string(module);
            if (file != "-") m.file = std::string(file);
            m.name = std::string(rest);
            if (!methods_.emplace(index, std::move(m)).second)
                malformed("method " + std::to_string(index) + " is defined twice");
        } else if (key == "enter" || key == "leave" || key == "start" || key == "end" || key == "mark") {
            malformed("an event before the first thread line");
        } else {
            malformed("unknown line \"" + std::string(key) + "\"");
        }
    }
}

TextEventSource::~TextEventSource() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(buf_);
}

void TextEventSource::malformed(const std::string &message) const {
    throw Error(path_ + ":" + std::to_string(lineno_) + ": " + message);
}

bool TextEventSource::next_line() {
    for (;;) {
        errno = 0;
        const ssize_t n = ::getline(&buf_, &cap_, file_);
        if (n < 0) {
            if (std::ferror(file_)) throw Error(path_ + ": read error: " + std::strerror(errno));
            eof_ = true;
            line_ = std::string_view();
            return false;
        }
        ++lineno_;
        size_t len = static_cast<size_t>(n);
        while (len > 0 && (buf_[len - 1] == '\n' || buf_[len - 1] == '\r')) --len;
        line_ = std::string_view(buf_, len);
        if (line_.empty() || line_[0] == '#') continue;
        return true;
    }
}

bool TextEventSource::next_thread(ThreadInfo *thread) {
    texts_.clear();
    // Skip what is left of the current thread.
    while (!pending_thread_ && !eof_) {
        if (!next_line()) break;
        std::string_view rest = line_;
        if (word(rest) == "thread") pending_thread_ = true;
    }
    if (!pending_thread_) return false;
    pending_thread_ = false;
    std::string_view rest = line_;
    word(rest);
    ThreadInfo t;
    if (!number(word(rest), &t.id) || !number(word(rest), &t.tid))
        malformed("expected: thread ID TID [NAME]");
    t.name = std::string(rest);
    if (!thread_ids_.insert(t.id).second) malformed("thread " + std::to_string(t.id) + " appears twice");
    *thread = std::move(t);
    in_thread_ = true;
    return true;
}

size_t TextEventSource::read(Event *out, size_t max) {
    texts_.clear();
    size_t n = 0;
    while (in_thread_ && n < max) {
        if (!next_line()) {
            in_thread_ = false;
            break;
        }
        std::string_view rest = line_;
        const std::string_view key = word(rest);
        Event e;
        if (key == "thread") {
            pending_thread_ = true;
            in_thread_ = false;
            break;
        }
        if (key == "enter")
            e.kind = EventKind::enter;
        else if (key == "leave")
            e.kind = EventKind::leave;
        else if (key == "start")
            e.kind = EventKind::thread_start;
        else if (key == "end")
            e.kind = EventKind::thread_end;
        else if (key == "mark")
            e.kind = EventKind::mark;
        else if (key == "method" || key == "pid")
            malformed("\"" + std::string(key) + "\" lines must come before the first thread");
        else
            malformed("unknown line \"" + std::string(key) + "\"");
        if (!number(word(rest), &e.ts)) malformed("expected a timestamp after \"" + std::string(key) + "\"");
        if (e.kind == EventKind::enter || e.kind == EventKind::leave) {
            if (!number(word(rest), &e.method) || !rest.empty())
                malformed("expected: " + std::string(key) + " TS METHOD");
        } else if (e.kind == EventKind::mark) {
            texts_.emplace_back(rest);
            e.text = texts_.back();
        } else if (!rest.empty()) {
            malformed("expected: " + std::string(key) + " TS");
        }
        out[n++] = e;
    }
    return n;
}

const MethodInfo *TextEventSource::method(uint32_t index) {
    const auto it = methods_.find(index);
    return it == methods_.end() ? nullptr : &it->second;
}

}  // namespace sonde::report
