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

namespace {

// The text before the results' members ("{", the block, and ",\n  " unless the results are
// empty) and where those members start in `results` (size when they are empty: then the text
// ends with "\n}").
std::string metadata_head(const nlohmann::ordered_json &block, const char *results, size_t size,
                          size_t *body) {
    std::string meta = block.dump(2);
    // Indent the block one level, as a member of the outer object.
    std::string indented;
    for (char c : meta) {
        indented += c;
        if (c == '\n') indented += "  ";
    }
    size_t at = 1;  // after '{'
    while (at < size && (results[at] == ' ' || results[at] == '\n')) ++at;
    std::string out = "{\n  \"metadata\": " + indented;
    if (at < size && results[at] == '}') {
        *body = size;
        return out + "\n}";
    }
    *body = at;
    return out + ",\n  ";
}

}  // namespace

std::string with_metadata(const nlohmann::ordered_json &block, const std::string &results) {
    size_t body = 0;
    std::string out = metadata_head(block, results.data(), results.size(), &body);
    out.append(results, body, std::string::npos);
    return out;
}

bool write_with_metadata(std::FILE *f, const nlohmann::ordered_json &block, const char *results,
                         size_t size) {
    size_t body = 0;
    const std::string head = metadata_head(block, results, size, &body);
    return std::fwrite(head.data(), 1, head.size(), f) == head.size() &&
           std::fwrite(results + body, 1, size - body, f) == size - body && std::fputc('\n', f) != EOF;
}

}  // namespace sonde::cli
