// The profile (see profile.h). leave() runs once per call: a few additions on the current
// thread's per-function counters, plus the tree's when trees are kept.
#include "report/profile.h"

#include <algorithm>

namespace sonde::report {

bool parse_sort_key(const std::string &text, SortKey *key) {
    if (text == "self")
        *key = SortKey::self;
    else if (text == "total")
        *key = SortKey::total;
    else if (text == "calls")
        *key = SortKey::calls;
    else if (text == "name")
        *key = SortKey::name;
    else
        return false;
    return true;
}

void Profile::begin_thread(const ThreadInfo &info) {
    threads_.emplace_back();
    threads_.back().summary.info = info;
    if (keep_trees_) {
        builder_.set_tree(&threads_.back().tree);
        builder_.begin_thread(info);
    }
}

void Profile::enter(uint32_t function, uint64_t ts, uint32_t depth) {
    if (keep_trees_) builder_.enter(function, ts, depth);
}

void Profile::leave(const Call &c) {
    if (c.function >= current_.size()) current_.resize(functions_.size());
    FunctionStats &s = current_[c.function];
    if (s.calls == 0) touched_.push_back(c.function);
    ++s.calls;
    s.self_ns += c.self_ns;
    if (c.outermost) s.total_ns += c.end - c.begin;
    if (keep_trees_) builder_.leave(c);
}

void Profile::api_call(const ApiCall &c) {
    // A handful of traced functions: a linear search by their (stable) info pointer.
    for (ApiStats &a : api_) {
        if (a.function == c.function) {
            ++a.calls;
            a.total_ns += c.end - std::min(c.begin, c.end);
            return;
        }
    }
    api_.push_back(ApiStats{c.function, 1, c.end - std::min(c.begin, c.end)});
}

std::vector<ApiStats> Profile::api() const {
    std::vector<ApiStats> list = api_;
    std::stable_sort(list.begin(), list.end(), [](const ApiStats &a, const ApiStats &b) {
        if (a.function->library != b.function->library) return a.function->library < b.function->library;
        return a.function->name < b.function->name;
    });
    return list;
}

void Profile::end_thread(const ThreadSummary &t) {
    ThreadProfile &p = threads_.back();
    p.summary = t;
    p.functions.reserve(touched_.size());
    for (uint32_t id : touched_) {
        FunctionStats s = current_[id];
        s.function = id;
        p.functions.push_back(s);
        current_[id] = FunctionStats{};
    }
    touched_.clear();
    if (keep_trees_) p.tree.seal();
}

std::vector<FunctionStats> Profile::totals() const {
    std::vector<FunctionStats> all;
    std::vector<uint32_t> slot(functions_.size(), UINT32_MAX);
    for (const ThreadProfile &t : threads_) {
        for (const FunctionStats &s : t.functions) {
            if (slot[s.function] == UINT32_MAX) {
                slot[s.function] = static_cast<uint32_t>(all.size());
                all.push_back(FunctionStats{s.function, 0, 0, 0});
            }
            FunctionStats &a = all[slot[s.function]];
            a.calls += s.calls;
            a.total_ns += s.total_ns;
            a.self_ns += s.self_ns;
        }
    }
    return all;
}

void Profile::sort(std::vector<FunctionStats> &list, SortKey key) const {
    auto value = [key](const FunctionStats &s) {
        switch (key) {
            case SortKey::total: return s.total_ns;
            case SortKey::calls: return s.calls;
            case SortKey::self: return s.self_ns;
            case SortKey::name: return uint64_t{0};
        }
        return uint64_t{0};
    };
    std::stable_sort(list.begin(), list.end(), [&](const FunctionStats &a, const FunctionStats &b) {
        const uint64_t va = value(a), vb = value(b);
        if (va != vb) return va > vb;
        const int byname = functions_.name(a.function).compare(functions_.name(b.function));
        if (byname != 0) return byname < 0;
        return a.function < b.function;
    });
}

}  // namespace sonde::report
