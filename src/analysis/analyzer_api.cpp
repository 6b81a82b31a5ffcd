// The C boundary of the analyzer (sonde/analysis.h): argument checks, exception mapping, and
// the calls into sonde::analysis::Analyzer. No logic lives here.
#include <cstring>
#include <string>

#include "analysis/analyzer.h"
#include "core/guarded.h"
#include <sonde/analysis.h>

struct sonde_analyzer_t {
    sonde::analysis::Analyzer impl;
};

namespace {

sonde_status_t before_run(sonde_analyzer_t *a) {
    if (a->impl.ran) {
        a->impl.error = "the analyzer has already run";
        return SONDE_STATUS_ERROR_PHASE_FAILURE;
    }
    a->impl.error.clear();
    return SONDE_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

SONDE_API sonde_status_t sonde_analyzer_create(sonde_analyzer_t **out) {
    if (out == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    *out = nullptr;
    return sonde::guarded([&]() -> sonde_status_t {
        *out = new sonde_analyzer_t();
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_analyzer_destroy(sonde_analyzer_t *analyzer) {
    delete analyzer;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_analyzer_add_tool(sonde_analyzer_t *analyzer, const char *name,
                                                 const char *options) {
    if (analyzer == nullptr || name == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded(
        [&] { return analyzer->impl.add_builtin(name, options != nullptr ? options : ""); });
}

SONDE_API sonde_status_t sonde_analyzer_load_tool(sonde_analyzer_t *analyzer, const char *path,
                                                  const char *options) {
    if (analyzer == nullptr || path == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded([&] { return analyzer->impl.load(path, options != nullptr ? options : ""); });
}

SONDE_API sonde_status_t sonde_analyzer_add_tool_ops(sonde_analyzer_t *analyzer, const sonde_tool_ops_t *ops,
                                                     void *tool_data) {
    if (analyzer == nullptr || ops == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded([&] { return analyzer->impl.add_ops(ops, tool_data); });
}

SONDE_API sonde_status_t sonde_analyzer_set_parallel(sonde_analyzer_t *analyzer, bool parallel) {
    if (analyzer == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    analyzer->impl.parallel = parallel;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_analyzer_set_workers(sonde_analyzer_t *analyzer, uint32_t workers) {
    if (analyzer == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    if (workers > 1024) {
        analyzer->impl.error = "at most 1024 workers";
        return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    analyzer->impl.workers = workers;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_analyzer_add_input(sonde_analyzer_t *analyzer, const char *path,
                                                  uint32_t format) {
    if (analyzer == nullptr || path == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded([&] { return analyzer->impl.add_input(path, format); });
}

SONDE_API sonde_status_t sonde_analyzer_input_warnings(const sonde_analyzer_t *analyzer, uint32_t input,
                                                       bool *complete, const char **warnings) {
    if (analyzer == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    // The analyzer's error text is its only state this call changes.
    auto *a = const_cast<sonde_analyzer_t *>(analyzer);
    return sonde::guarded([&] { return a->impl.input_warnings(input, complete, warnings); });
}

SONDE_API sonde_status_t sonde_analyzer_add_memory_shard(sonde_analyzer_t *analyzer,
                                                         const sonde_memref_t *memrefs, size_t count,
                                                         uint32_t *shard) {
    if (analyzer == nullptr || (memrefs == nullptr && count != 0)) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded([&]() -> sonde_status_t {
        uint32_t id = 0;
        const sonde_status_t st = analyzer->impl.add_memory(memrefs, count, &id);
        if (st == SONDE_STATUS_SUCCESS && shard != nullptr) *shard = id;
        return st;
    });
}

SONDE_API sonde_status_t sonde_analyzer_add_live_input(sonde_analyzer_t *analyzer, int fd, const char *name) {
    if (analyzer == nullptr || name == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded([&] { return analyzer->impl.add_live(fd, name); });
}

SONDE_API sonde_status_t sonde_analyzer_run(sonde_analyzer_t *analyzer) {
    if (analyzer == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    analyzer->impl.error.clear();
    return sonde::guarded([&] { return analyzer->impl.run(); });
}

SONDE_API const char *sonde_analyzer_error(const sonde_analyzer_t *analyzer) {
    return analyzer != nullptr ? analyzer->impl.error.c_str() : "";
}

SONDE_API sonde_status_t sonde_analyzer_run_info(const sonde_analyzer_t *analyzer, bool *parallel,
                                                 uint32_t *workers) {
    if (analyzer == nullptr || parallel == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (!analyzer->impl.ran) return SONDE_STATUS_ERROR_PHASE_FAILURE;
    *parallel = analyzer->impl.ran_parallel;
    if (workers != nullptr) *workers = analyzer->impl.used_workers;
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_analyzer_progress(const sonde_analyzer_t *analyzer, uint64_t *done,
                                                 uint64_t *total) {
    if (analyzer == nullptr || done == nullptr || total == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    analyzer->impl.progress(done, total);
    return SONDE_STATUS_SUCCESS;
}

SONDE_API sonde_status_t sonde_analyzer_print_results(sonde_analyzer_t *analyzer, void *stream) {
    if (analyzer == nullptr || stream == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&] { return analyzer->impl.print_results(stream); });
}

SONDE_API sonde_status_t sonde_analyzer_results_json(sonde_analyzer_t *analyzer, char *buffer, size_t size,
                                                     size_t *actual_size) {
    if (analyzer == nullptr || actual_size == nullptr || (buffer == nullptr && size != 0))
        return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        const sonde::analysis::JsonPieces *text = nullptr;
        const sonde_status_t st = analyzer->impl.results_json(&text);
        if (st != SONDE_STATUS_SUCCESS) return st;
        const size_t n = text->size();
        *actual_size = n + 1;
        if (size < n + 1) {
            if (size > 0) buffer[0] = '\0';
            return SONDE_STATUS_ERROR_BUFFER_TOO_SHORT;
        }
        for (const std::string &piece : text->pieces()) {
            std::memcpy(buffer, piece.data(), piece.size());
            buffer += piece.size();
        }
        *buffer = '\0';
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_analyzer_set_partition(sonde_analyzer_t *analyzer, uint32_t rank,
                                                      uint32_t nranks) {
    if (analyzer == nullptr) return SONDE_STATUS_ERROR_NULL_POINTER;
    if (const sonde_status_t st = before_run(analyzer)) return st;
    return sonde::guarded([&] { return analyzer->impl.set_partition(rank, nranks); });
}

SONDE_API sonde_status_t sonde_analyzer_export_state(sonde_analyzer_t *analyzer, void *buffer, size_t size,
                                                     size_t *actual_size) {
    if (analyzer == nullptr || actual_size == nullptr || (buffer == nullptr && size != 0))
        return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        const std::string *bytes = nullptr;
        const sonde_status_t st = analyzer->impl.export_state(&bytes);
        if (st != SONDE_STATUS_SUCCESS) return st;
        *actual_size = bytes->size();
        if (size < bytes->size()) return SONDE_STATUS_ERROR_BUFFER_TOO_SHORT;
        if (!bytes->empty()) std::memcpy(buffer, bytes->data(), bytes->size());
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_analyzer_export_routes(sonde_analyzer_t *analyzer, uint32_t rank, void *buffer,
                                                      size_t size, size_t *actual_size) {
    if (analyzer == nullptr || actual_size == nullptr || (buffer == nullptr && size != 0))
        return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&]() -> sonde_status_t {
        sonde::analysis::Analyzer::Pieces pieces;
        size_t total = 0;
        const sonde_status_t st = analyzer->impl.export_routes(rank, &pieces, &total);
        if (st != SONDE_STATUS_SUCCESS) return st;
        *actual_size = total;
        if (size < total) return SONDE_STATUS_ERROR_BUFFER_TOO_SHORT;
        char *at = static_cast<char *>(buffer);
        for (const auto &p : pieces) {
            if (p.second != 0) std::memcpy(at, p.first, p.second);
            at += p.second;
        }
        return SONDE_STATUS_SUCCESS;
    });
}

SONDE_API sonde_status_t sonde_analyzer_merge_routes(sonde_analyzer_t *analyzer, uint32_t rank,
                                                     const void *bytes, size_t size) {
    if (analyzer == nullptr || (bytes == nullptr && size != 0)) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded(
        [&] { return analyzer->impl.merge_routes(rank, bytes != nullptr ? bytes : "", size); });
}

SONDE_API sonde_status_t sonde_analyzer_merge_state(sonde_analyzer_t *analyzer, const void *state,
                                                    size_t size) {
    if (analyzer == nullptr || (state == nullptr && size != 0)) return SONDE_STATUS_ERROR_NULL_POINTER;
    return sonde::guarded([&] { return analyzer->impl.merge_state(state != nullptr ? state : "", size); });
}

}  // extern "C"
