// SondeTraceEventSource (see trace_source.h).
#include "cli/trace_source.h"

#include <cstring>

#include <sonde/trace.h>

using sonde::report::Error;
using sonde::report::Event;
using sonde::report::EventKind;
using sonde::report::MethodInfo;
using sonde::report::ThreadInfo;

SondeTraceEventSource::SondeTraceEventSource(const std::string &path) : path_(path) {
    char err[1024] = "";
    const sonde_status_t st =
        sonde_trace_reader_open(path.c_str(), SONDE_TRACE_FORMAT_SONDE, err, sizeof err, &reader_);
    if (st != SONDE_STATUS_SUCCESS)
        throw Error(err[0] != '\0' ? std::string(err) : path + ": " + sonde_status_string(st));
    try {
        read_tables();
    } catch (...) {  // no destructor runs for a constructor that throws: release here
        sonde_trace_reader_close(reader_);
        reader_ = nullptr;
        throw;
    }
}

void SondeTraceEventSource::read_tables() {
    info_.struct_size = sizeof info_;
    const sonde_status_t is = sonde_trace_reader_event_info(reader_, &info_);
    if (is != SONDE_STATUS_SUCCESS) fail(is, "event table");
    if (info_.num_shards == 0)
        throw Error(path_ +
                    ": holds no call events (a trace of memory references: see sonde analyze); "
                    "sonde record writes call events");
    const char *w = sonde_trace_reader_warnings(reader_);
    for (const char *p = w; p != nullptr && *p != '\0';) {
        const char *nl = std::strchr(p, '\n');
        const size_t n = nl != nullptr ? static_cast<size_t>(nl - p) : std::strlen(p);
        if (n != 0) read_warnings_.emplace_back(p, n);
        p = nl != nullptr ? nl + 1 : p + n;
    }
}

SondeTraceEventSource::~SondeTraceEventSource() {
    if (reader_ != nullptr) sonde_trace_reader_close(reader_);
}

void SondeTraceEventSource::fail(sonde_status_t status, const std::string &what) const {
    const char *e = reader_ != nullptr ? sonde_trace_reader_error(reader_) : nullptr;
    if (e != nullptr && *e != '\0') throw Error(e);
    throw Error(path_ + ": " + what + ": " + sonde_status_string(status));
}

bool SondeTraceEventSource::next_thread(ThreadInfo *thread) {
    if (shard_ + 1 >= static_cast<int64_t>(info_.num_shards)) return false;
    ++shard_;
    lost_this_thread_ = false;
    in_call_ = false;
    sonde_trace_thread_t t;
    std::memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    thread->id = static_cast<uint64_t>(shard_);
    thread->tid = 0;
    thread->name.clear();
    const sonde_status_t st = sonde_trace_reader_get_thread(reader_, static_cast<uint32_t>(shard_), &t);
    if (st == SONDE_STATUS_SUCCESS || st == SONDE_STATUS_PARTIAL_INFO) {
        thread->tid = t.os_thread_id;
        if (t.name != nullptr) thread->name = t.name;
    } else if (st != SONDE_STATUS_ERROR_INVALID_ARGUMENT) {  // a shard beyond the thread table
        fail(st, "thread table");
    }
    return true;
}

size_t SondeTraceEventSource::read(Event *out, size_t max) {
    if (shard_ < 0 || max == 0) return 0;
    const uint32_t shard = static_cast<uint32_t>(shard_);
    // Each api_call event points into calls_: room for one per output event, so that it never
    // moves during this call.
    calls_.clear();
    calls_.reserve(max);
    for (;;) {
        if (batch_.size() < max) batch_.resize(max);
        size_t got = 0;
        const sonde_status_t st = sonde_trace_reader_read_events(reader_, shard, batch_.data(), max, &got);
        if (st != SONDE_STATUS_SUCCESS) fail(st, "thread " + std::to_string(shard));
        if (got == 0) return 0;
        size_t n = 0;
        for (size_t i = 0; i < got; ++i) {
            const sonde_trace_event_t &e = batch_[i];
            Event &o = out[n];
            o.ts = e.timestamp;
            o.method = 0;
            o.text = {};
            o.api = nullptr;
            switch (e.kind) {
                case SONDE_TRACE_EVENT_METHOD_ENTER:
                case SONDE_TRACE_EVENT_METHOD_LEAVE:
                    o.kind = e.kind == SONDE_TRACE_EVENT_METHOD_ENTER ? EventKind::enter : EventKind::leave;
                    o.method = e.id;
                    ++n;
                    break;
                case SONDE_TRACE_EVENT_THREAD_START:
                    o.kind = EventKind::thread_start;
                    ++n;
                    break;
                case SONDE_TRACE_EVENT_THREAD_END:
                    o.kind = EventKind::thread_end;
                    ++n;
                    break;
                case SONDE_TRACE_EVENT_MARK: {
                    const char *text = nullptr;  // owned by the reader, valid until it closes
                    o.kind = EventKind::mark;
                    if (sonde_trace_reader_get_string(reader_, e.id, &text) == SONDE_STATUS_SUCCESS &&
                        text != nullptr)
                        o.text = text;
                    ++n;
                    break;
                }
                case SONDE_TRACE_EVENT_API_CALL:
                case SONDE_TRACE_EVENT_API_ARG:
                case SONDE_TRACE_EVENT_API_RETURN:
                case SONDE_TRACE_EVENT_API_END:
                    if (take_api_event(e)) {
                        o.kind = EventKind::api_call;
                        o.api = &calls_.back();
                        ++n;
                    }
                    break;
                case SONDE_TRACE_EVENT_LOSS:
                    lost_ += e.value;
                    if (!lost_this_thread_) ++lost_threads_;
                    lost_this_thread_ = true;
                    break;
                default:  // thread names, ranges, kinds of later versions: not in the call model
                    break;
            }
        }
        if (n != 0) return n;  // else a batch of skipped events only: read on
    }
}

const sonde::report::ApiFunctionInfo *SondeTraceEventSource::api_function(uint32_t index) {
    auto it = api_functions_.find(index);
    if (it != api_functions_.end()) return it->second.get();
    auto info = std::make_unique<sonde::report::ApiFunctionInfo>();
    sonde_trace_api_function_t f;
    std::memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    if (sonde_trace_reader_get_api_function(reader_, index, &f) == SONDE_STATUS_SUCCESS) {
        info->library = f.library;
        info->name = f.name;
        info->return_type = f.return_type;
        info->return_class = f.return_class;
        for (uint32_t i = 0; i < f.num_args; ++i) {
            info->arg_names.emplace_back(f.arg_names[i]);
            info->arg_types.emplace_back(f.arg_types[i]);
            info->arg_classes.push_back(f.arg_classes[i]);
        }
    }
    if (info->name.empty()) info->name = "api#" + std::to_string(index);  // a table cut short
    const sonde::report::ApiFunctionInfo *p = info.get();
    api_functions_.emplace(index, std::move(info));
    return p;
}

bool SondeTraceEventSource::take_api_event(const sonde_trace_event_t &e) {
    // A value event's text, when the recorder copied one.
    auto value = [&](sonde::report::ApiValue &v) {
        v.bits = e.value;
        v.has_text = false;
        v.truncated = (e.aux & SONDE_TRACE_API_TRUNCATED) != 0;
        v.text = {};
        const char *text = nullptr;
        if ((e.aux & SONDE_TRACE_API_TEXT) != 0 &&
            sonde_trace_reader_get_string(reader_, e.id, &text) == SONDE_STATUS_SUCCESS && text != nullptr) {
            v.has_text = true;
            v.text = text;  // owned by the reader until it closes
        }
    };
    switch (e.kind) {
        case SONDE_TRACE_EVENT_API_CALL:
            pending_.function = api_function(e.id);
            pending_.begin = e.value;
            pending_.end = e.timestamp;
            pending_.args.clear();
            pending_.ret = {};
            in_call_ = true;
            return false;
        case SONDE_TRACE_EVENT_API_ARG:
            if (in_call_) value(pending_.args.emplace_back());
            return false;
        case SONDE_TRACE_EVENT_API_RETURN:
            if (in_call_) value(pending_.ret);
            return false;
        default:  // API_END
            if (!in_call_) return false;
            in_call_ = false;
            pending_.correlation = e.value;
            pending_.depth = e.aux;
            pending_.end = e.timestamp;
            calls_.push_back(pending_);
            return true;
    }
}

const MethodInfo *SondeTraceEventSource::method(uint32_t index) {
    auto it = methods_.find(index);
    if (it != methods_.end()) return it->second.get();
    sonde_trace_method_t m;
    std::memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    const sonde_status_t st = sonde_trace_reader_get_method(reader_, index, &m);
    if (st != SONDE_STATUS_SUCCESS) {  // PARTIAL_INFO (a cut table) or out of range: unnamed
        methods_.emplace(index, nullptr);
        return nullptr;
    }
    auto info = std::make_unique<MethodInfo>();
    // Named as uftrace names it: scope and name, no parameters ("geo::Circle::area").
    const std::string scope = m.class_name != nullptr ? m.class_name : "";
    const std::string name = m.name != nullptr ? m.name : "";
    info->name = scope.empty() ? name : scope + "::" + name;
    if (info->name.empty() && m.full_name != nullptr) info->name = m.full_name;
    if (m.source_file != nullptr) info->file = m.source_file;
    info->line = m.source_line;
    if (m.module != SONDE_TRACE_NO_MODULE) {
        if (modules_.size() <= m.module) modules_.resize(m.module + 1);
        if (modules_[m.module].empty()) {
            sonde_trace_module_t mod;
            std::memset(&mod, 0, sizeof mod);
            mod.struct_size = sizeof mod;
            if (sonde_trace_reader_get_module(reader_, m.module, &mod) == SONDE_STATUS_SUCCESS &&
                mod.name != nullptr)
                modules_[m.module] = mod.name;
        }
        info->module = modules_[m.module];
    }
    const MethodInfo *p = info.get();
    methods_.emplace(index, std::move(info));
    return p;
}

std::vector<std::string> SondeTraceEventSource::warnings() const {
    std::vector<std::string> w = read_warnings_;
    if (lost_ != 0)
        w.push_back(path_ + ": the recorder lost " + std::to_string(lost_) + " event(s) on " +
                    std::to_string(lost_threads_) +
                    " thread(s) (a full buffer); calls around the loss may be cut short");
    return w;
}
