// The metadata block of the CLI's JSON results (metadata.h).
#include "cli/metadata.h"

#include <time.h>

#include "cli/options.h"

namespace sonde::cli {

std::string utc_now() {
    const time_t now = time(nullptr);
    struct tm tm_utc {};
    gmtime_r(&now, &tm_utc);
    char text[32];
    strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
    return text;
}

nlohmann::ordered_json metadata(const std::string &command, const std::vector<std::string> &inputs,
                                nlohmann::ordered_json options, const std::string &start_time) {
    nlohmann::ordered_json m;
    m["sonde_version"] = version_number();
    m["command"] = command;
    m["inputs"] = inputs;
    m["options"] = std::move(options);
    m["start_time"] = start_time;
    return m;
}

std::string with_metadata(const nlohmann::ordered_json &block, const std::string &results) {
    std::string meta = block.dump(2);
    // Indent the block one level, as a member of the outer object.
    std::string indented;
    for (char c : meta) {
        indented += c;
        if (c == '\n') indented += "  ";
    }
    size_t body = 1;  // after '{'
    while (body < results.size() && (results[body] == ' ' || results[body] == '\n')) ++body;
    std::string out = "{\n  \"metadata\": " + indented;
    if (body < results.size() && results[body] == '}') return out + "\n}";
    return out + ",\n  " + results.substr(body);
}

}  // namespace sonde::cli
