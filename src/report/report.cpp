// Text and JSON writers of a Profile (see report.h).
#include "report/report.h"

#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/format.h"

namespace sonde::report {

namespace {

std::string pad_left(const std::string &s, size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

void function_table(const Profile &p, std::vector<FunctionStats> list, SortKey key, std::ostream &out) {
    p.sort(list, key);
    out << "  Total time   Self time       Calls  Function\n"
        << "  ==========  ==========  ==========  ====================\n";
    for (const FunctionStats &s : list) {
        out << "  " << pad_left(format_ns(s.total_ns), 10) << "  " << pad_left(format_ns(s.self_ns), 10)
            << "  " << pad_left(std::to_string(s.calls), 10) << "  "
            << valid_utf8(p.functions().name(s.function)) << "\n";
    }
}

nlohmann::ordered_json functions_json(const Profile &p, std::vector<FunctionStats> list, SortKey key) {
    p.sort(list, key);
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const FunctionStats &s : list) {
        const MethodInfo &m = p.functions().info(s.function);
        nlohmann::ordered_json f = {
            {"name", m.name}, {"calls", s.calls}, {"total_ns", s.total_ns}, {"self_ns", s.self_ns}};
        if (!m.module.empty()) f["module"] = m.module;
        if (!m.file.empty()) f["file"] = m.file;
        if (m.line != 0) f["line"] = m.line;
        a.push_back(std::move(f));
    }
    return a;
}

nlohmann::ordered_json tree_json(const Profile &p, const CallTree &tree, uint32_t max_depth) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    struct Item {
        uint32_t node;
        int64_t parent;  // index in `a`
    };
    std::vector<Item> todo;
    std::vector<uint32_t> kids = tree.children(CallTree::root);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(Item{*it, -1});
    while (!todo.empty()) {
        const Item item = todo.back();
        todo.pop_back();
        const CallTree::Node &n = tree.node(item.node);
        if (max_depth != 0 && n.depth > max_depth) continue;
        const int64_t index = static_cast<int64_t>(a.size());
        a.push_back({{"parent", item.parent},
                     {"name", p.functions().name(n.function)},
                     {"calls", n.calls},
                     {"total_ns", n.total_ns},
                     {"self_ns", n.self_ns}});
        kids = tree.children(item.node);
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(Item{*it, index});
    }
    return a;
}

}  // namespace

void write_text_report(const Profile &profile, const ReportOptions &options, std::ostream &out) {
    const std::vector<ApiStats> api = profile.api();
    if (profile.functions().size() != 0 || api.empty())
        function_table(profile, profile.totals(), options.sort, out);
    if (!api.empty()) {
        if (profile.functions().size() != 0) out << "\n";
        out << "  Total time       Calls  API function\n"
            << "  ==========  ==========  ====================\n";
        for (const ApiStats &a : api)
            out << "  " << pad_left(format_ns(a.total_ns), 10) << "  "
                << pad_left(std::to_string(a.calls), 10) << "  " << valid_utf8(a.function->library) << ":"
                << valid_utf8(a.function->name) << "\n";
    }
    out << "\n  Thread         TID       Calls    Duration  Name\n"
        << "  ======  ==========  ==========  ==========  ====================\n";
    for (const ThreadProfile &t : profile.threads()) {
        const ThreadSummary &s = t.summary;
        out << "  " << pad_left(std::to_string(s.info.id), 6) << "  "
            << pad_left(std::to_string(s.info.tid), 10) << "  " << pad_left(std::to_string(s.calls), 10)
            << "  " << pad_left(format_ns(s.end - s.begin), 10) << "  " << valid_utf8(s.info.name) << "\n";
    }
    if (options.per_thread) {
        for (const ThreadProfile &t : profile.threads()) {
            out << "\n" << valid_utf8(thread_label(t.summary.info)) << "\n";
            function_table(profile, t.functions, options.sort, out);
        }
    }
}

void write_text_tree(const Profile &profile, const ReportOptions &options, std::ostream &out) {
    // A node's line: TIME : PREFIX MARKER (CALLS) NAME. A node with siblings gets the marker
    // "+-" and passes "| " down to its descendants while siblings follow; an only child gets
    // "  ". Outermost calls have no marker.
    struct Item {
        uint32_t node;
        std::string prefix;
        const char *marker;
        const char *continuation;
    };
    bool first_thread = true;
    for (const ThreadProfile &t : profile.threads()) {
        if (!first_thread) out << "\n";
        first_thread = false;
        out << valid_utf8(thread_label(t.summary.info)) << "\n"
            << "  TOTAL TIME   FUNCTION\n";
        const CallTree &tree = t.tree;
        std::vector<Item> todo;
        auto push_children = [&](uint32_t node, const std::string &prefix) {
            const std::vector<uint32_t> kids = tree.children(node);
            const bool top = node == CallTree::root;
            for (size_t i = kids.size(); i-- > 0;) {
                const bool last = i + 1 == kids.size();
                if (top)
                    todo.push_back(Item{kids[i], prefix, "", " "});
                else if (kids.size() > 1)
                    todo.push_back(Item{kids[i], prefix, "+-", last ? "  " : "| "});
                else
                    todo.push_back(Item{kids[i], prefix, "  ", "  "});
            }
        };
        push_children(CallTree::root, "");
        while (!todo.empty()) {
            const Item item = todo.back();
            todo.pop_back();
            const CallTree::Node &n = tree.node(item.node);
            if (options.max_depth != 0 && n.depth > options.max_depth) continue;
            out << "  " << pad_left(format_ns(n.total_ns), 10) << " : " << item.prefix << item.marker << "("
                << n.calls << ") " << valid_utf8(profile.functions().name(n.function)) << "\n";
            push_children(item.node, item.prefix + item.continuation);
        }
    }
}

std::string report_json(const Profile &profile, const ReportOptions &options) {
    nlohmann::ordered_json j;
    j["sonde_version"] = options.version;
    j["functions"] = functions_json(profile, profile.totals(), options.sort);
    nlohmann::ordered_json threads = nlohmann::ordered_json::array();
    for (const ThreadProfile &t : profile.threads()) {
        const ThreadSummary &s = t.summary;
        nlohmann::ordered_json tj = {{"id", s.info.id},     {"tid", s.info.tid},       {"name", s.info.name},
                                     {"begin_ns", s.begin}, {"end_ns", s.end},         {"calls", s.calls},
                                     {"marks", s.marks},    {"api_calls", s.api_calls}};
        tj["functions"] = functions_json(profile, t.functions, options.sort);
        if (options.tree && profile.has_trees()) tj["tree"] = tree_json(profile, t.tree, options.max_depth);
        threads.push_back(std::move(tj));
    }
    j["threads"] = std::move(threads);
    nlohmann::ordered_json api = nlohmann::ordered_json::array();
    for (const ApiStats &a : profile.api())
        api.push_back({{"library", a.function->library},
                       {"function", a.function->name},
                       {"calls", a.calls},
                       {"total_ns", a.total_ns}});
    j["api"] = std::move(api);
    j["warnings"] = profile.warnings();
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace sonde::report
