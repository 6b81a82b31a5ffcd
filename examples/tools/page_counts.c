/* An external analysis tool in C: counts memory accesses per page and prints the busiest
 * pages. Build it as a shared object and load it with
 *     sonde analyze TRACE --tool ./page_counts.so
 * It talks to Sonde only through the sonde_tool_ops_t table it returns from sonde_tool_create
 * (it never links libsonde). Options: "page_size=N" (a power of two, default 4096). An access
 * counts for the page of its first byte, whatever its size, so no address or size can make it
 * loop.
 *
 * Serial mode keeps one table; parallel mode gives each shard its own table (a shard's
 * functions run on one worker, so no locking) and merges them in parallel_shard_exit under a
 * mutex. Hot path cost: one hash-table probe per access, no allocation except when a table
 * grows. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/analysis.h>

typedef struct page_t {
    uint64_t page;  /* page number: any value, up to 2^64 - 1 with 1-byte pages */
    uint64_t count; /* 0 marks a free slot: a page in the table has at least one access */
} page_t;

typedef struct table_t {
    page_t *slots;
    size_t capacity; /* a power of two */
    size_t used;
} table_t;

typedef struct page_tool_t {
    unsigned page_bits;
    table_t total;        /* serial mode, and the merged result of parallel mode */
    pthread_mutex_t lock; /* guards `total` while parallel shards merge into it */
    char error[128];
    char *json;
} page_tool_t;

static bool table_add(table_t *t, uint64_t page, uint64_t count) {
    if (2 * (t->used + 1) > t->capacity) {
        const size_t cap = t->capacity ? 2 * t->capacity : 1024;
        page_t *slots = calloc(cap, sizeof *slots);
        if (slots == NULL) return false;
        for (size_t i = 0; i < t->capacity; ++i) {
            if (t->slots[i].count == 0) continue;
            size_t j = (size_t)(t->slots[i].page * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (slots[j].count != 0) j = (j + 1) & (cap - 1);
            slots[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = slots;
        t->capacity = cap;
    }
    size_t j = (size_t)(page * 0x9E3779B97F4A7C15ull) & (t->capacity - 1);
    while (t->slots[j].count != 0 && t->slots[j].page != page) j = (j + 1) & (t->capacity - 1);
    if (t->slots[j].count == 0) {
        t->slots[j].page = page;
        ++t->used;
    }
    t->slots[j].count += count;
    return true;
}

static bool add_refs(page_tool_t *tool, table_t *t, const sonde_memref_t *m, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (m[i].type == SONDE_MEMREF_MARKER) continue;
        if (!table_add(t, m[i].address >> tool->page_bits, 1)) return false;
    }
    return true;
}

static bool pt_process_memrefs(void *data, const sonde_memref_t *m, size_t n) {
    page_tool_t *tool = data;
    if (add_refs(tool, &tool->total, m, n)) return true;
    snprintf(tool->error, sizeof tool->error, "out of memory");
    return false;
}
static bool pt_process_memref(void *data, const sonde_memref_t *m) { return pt_process_memrefs(data, m, 1); }
static bool pt_supported(void *data) {
    (void)data;
    return true;
}
static bool pt_shard_init(void *data, uint32_t shard, void *worker_data, void **shard_data) {
    (void)data;
    (void)shard;
    (void)worker_data;
    *shard_data = calloc(1, sizeof(table_t));
    return *shard_data != NULL;
}
static bool pt_shard_memrefs(void *data, void *shard_data, const sonde_memref_t *m, size_t n) {
    return add_refs(data, shard_data, m, n);
}
static bool pt_shard_memref(void *data, void *shard_data, const sonde_memref_t *m) {
    return pt_shard_memrefs(data, shard_data, m, 1);
}
static bool pt_shard_exit(void *data, void *shard_data) {
    page_tool_t *tool = data;
    table_t *t = shard_data;
    bool ok = true;
    pthread_mutex_lock(&tool->lock);
    for (size_t i = 0; i < t->capacity && ok; ++i)
        if (t->slots[i].count != 0) ok = table_add(&tool->total, t->slots[i].page, t->slots[i].count);
    pthread_mutex_unlock(&tool->lock);
    free(t->slots);
    free(t);
    return ok;
}
static const char *pt_shard_error(void *data, void *shard_data) {
    (void)data;
    (void)shard_data;
    return "out of memory";
}
static const char *pt_error(void *data) { return ((page_tool_t *)data)->error; }

static int by_count(const void *a, const void *b) {
    const page_t *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return x->page < y->page ? -1 : x->page > y->page;
}

/* The busiest pages first; the caller frees the array. */
static page_t *sorted_pages(const page_tool_t *tool) {
    page_t *pages = malloc((tool->total.used + 1) * sizeof *pages);
    if (pages == NULL) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < tool->total.capacity; ++i)
        if (tool->total.slots[i].count != 0) pages[n++] = tool->total.slots[i];
    qsort(pages, n, sizeof *pages, by_count);
    return pages;
}

static bool pt_print_results(void *data, void *stream) {
    page_tool_t *tool = data;
    page_t *pages = sorted_pages(tool);
    if (pages == NULL) return false;
    fprintf(stream, "page_counts: %zu pages of %" PRIu64 " bytes touched; busiest:\n", tool->total.used,
            (uint64_t)1 << tool->page_bits);
    for (size_t i = 0; i < tool->total.used && i < 5; ++i)
        fprintf(stream, "  0x%" PRIx64 "  %" PRIu64 " accesses\n", pages[i].page << tool->page_bits,
                pages[i].count);
    free(pages);
    return true;
}

static const char *pt_results_json(void *data) {
    page_tool_t *tool = data;
    page_t *pages = sorted_pages(tool);
    free(tool->json);
    const size_t cap = 128 + 80 * 5;
    tool->json = malloc(cap);
    if (pages == NULL || tool->json == NULL) {
        free(pages);
        return "{}";
    }
    int len = snprintf(tool->json, cap, "{\"page_size\": %" PRIu64 ", \"pages\": %zu, \"busiest\": [",
                       (uint64_t)1 << tool->page_bits, tool->total.used);
    for (size_t i = 0; i < tool->total.used && i < 5; ++i)
        len += snprintf(tool->json + len, cap - (size_t)len,
                        "%s{\"page\": %" PRIu64 ", \"accesses\": %" PRIu64 "}", i ? ", " : "",
                        pages[i].page << tool->page_bits, pages[i].count);
    snprintf(tool->json + len, cap - (size_t)len, "]}");
    free(pages);
    return tool->json;
}

static void pt_destroy(void *data) {
    page_tool_t *tool = data;
    pthread_mutex_destroy(&tool->lock);
    free(tool->total.slots);
    free(tool->json);
    free(tool);
}

SONDE_EXPORT sonde_status_t sonde_tool_create(const char *options, const sonde_tool_ops_t **ops, void **data);

SONDE_EXPORT sonde_status_t sonde_tool_create(const char *options, const sonde_tool_ops_t **ops,
                                              void **data) {
    static const sonde_tool_ops_t table = {
        .struct_size = sizeof(sonde_tool_ops_t),
        .name = "page_counts",
        .process_memref = pt_process_memref,
        .print_results = pt_print_results,
        .parallel_shard_supported = pt_supported,
        .parallel_shard_init = pt_shard_init,
        .parallel_shard_memref = pt_shard_memref,
        .parallel_shard_exit = pt_shard_exit,
        .parallel_shard_error = pt_shard_error,
        .get_error_string = pt_error,
        .process_memrefs = pt_process_memrefs,
        .parallel_shard_memrefs = pt_shard_memrefs,
        .results_json = pt_results_json,
        .destroy = pt_destroy,
    };
    unsigned long page_size = 4096;
    if (options != NULL && options[0] != '\0') {
        int used = 0;
        if (strncmp(options, "page_size=", 10) != 0 || options[10] < '0' || options[10] > '9' ||
            sscanf(options, "page_size=%lu%n", &page_size, &used) != 1 || options[used] != '\0' ||
            page_size == 0 || (page_size & (page_size - 1)) != 0)
            return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
    }
    page_tool_t *tool = calloc(1, sizeof *tool);
    if (tool == NULL) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    while ((1ul << tool->page_bits) < page_size) ++tool->page_bits;
    pthread_mutex_init(&tool->lock, NULL);
    *ops = &table;
    *data = tool;
    return SONDE_STATUS_SUCCESS;
}
