// The "metadata" block at the head of the JSON results the CLI writes (`sonde analyze --json`,
// `sonde report --json`): which Sonde made them, from what, with which options, and when:
//   "metadata": {"sonde_version": "1.2.0", "command": "analyze", "inputs": [PATH...],
//                "options": {...the command's own...}, "start_time": "2026-11-23T23:59:00Z"}
// `start_time` is when the command started, UTC, to the second. The Python package's
// sonde.analyze() writes the same block for the same arguments (bindings/python).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sonde::cli {

// Now, as "YYYY-MM-DDTHH:MM:SSZ" (UTC).
std::string utc_now();

// The block, as an ordered JSON object (keys in the order above).
nlohmann::ordered_json metadata(const std::string &command, const std::vector<std::string> &inputs,
                                nlohmann::ordered_json options, const std::string &start_time);

// `results` (a JSON object's text, as the analyzer writes it) with "metadata": `block` as its
// first member; the rest of the text is kept byte for byte. `results` must start with '{'.
std::string with_metadata(const nlohmann::ordered_json &block, const std::string &results);

// The same text written to `f` followed by a newline, without copying `results` (`size` bytes,
// which may be hundreds of megabytes); false when a write fails.
bool write_with_metadata(std::FILE *f, const nlohmann::ordered_json &block, const char *results, size_t size);

}  // namespace sonde::cli
