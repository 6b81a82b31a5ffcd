// The built-in tools' option strings: comma-separated items, most of them KEY=VALUE
// ("line_size=64,threshold=100"). Each tool gives the keys and values their meaning and its own
// error messages; this is only the splitting, so that every tool splits the same way (empty
// items are skipped, a value may contain '=').
#pragma once

#include <string>
#include <vector>

namespace sonde::analysis {

// The non-empty items of a comma-separated list, in order.
inline std::vector<std::string> option_items(const std::string &text) {
    std::vector<std::string> items;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        if (end > pos) items.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return items;
}

// Splits "KEY=VALUE" at its first '='; false (and nothing set) when there is none.
inline bool split_option(const std::string &item, std::string *key, std::string *value) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return false;
    *key = item.substr(0, eq);
    *value = item.substr(eq + 1);
    return true;
}

}  // namespace sonde::analysis
