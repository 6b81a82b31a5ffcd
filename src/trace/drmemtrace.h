// Reader of DynamoRIO drmemtrace offline traces (the post-processed files drcachesim reads): a
// directory with one file per thread (each one shard, in name order; schedule and log files
// skipped) or one thread file, in any container of drmemtrace_container.h. Records are the
// 12-byte trace_entry_t of 64-bit traces, versions 1 to 7; docs/analysis.md says how each one
// becomes a sonde_memref_t (what is hidden, what is folded, which kinds are used).
#pragma once

#include <memory>
#include <string>

#include "trace/source.h"

namespace sonde::trace {

// Opens `path` (directory or file); every thread file's header is checked here, so a file that
// is not a drmemtrace trace fails at open. SUCCESS, SONDE_STATUS_ERROR_IO or
// SONDE_STATUS_ERROR_FORMAT with *error = "PATH: offset N: what".
sonde_status_t open_drmemtrace(const std::string &path, std::unique_ptr<Input> *out, std::string *error);

// Format detection (SONDE_TRACE_FORMAT_AUTO), by name, reading nothing: true for a directory
// and a drmemtrace file name (*.trace, *.trace.zip/.gz/.lz4/.zst/.sz, DynamoRIO's schedule
// files, which open_drmemtrace then refuses by name).
bool drmemtrace_claims_name(const std::string &path);

// Format detection by the first bytes, once the other formats' magic and extensions did not
// match: true when the raw bytes (`raw_size` 0 for a zstd input) start a zip, gzip, lz4 or
// snappy container, or the decoded bytes start with a drmemtrace header record of a known
// version.
bool drmemtrace_claims_head(const unsigned char *raw, size_t raw_size, const unsigned char *decoded,
                            size_t decoded_size);

}  // namespace sonde::trace
