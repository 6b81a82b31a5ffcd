/* Shared objects for the external-tool loading tests of test_analyzer.c, one per build macro:
 * FIXTURE_GOOD (a working tool counting records), FIXTURE_BAD_SIZE (a table with a struct_size
 * too small), FIXTURE_CREATE_FAILS (sonde_tool_create answers INVALID_ARGUMENT),
 * FIXTURE_NO_SYMBOL (no entry point at all) and FIXTURE_FROM_DEPENDENCY (no entry point of its
 * own, but it links a library built as FIXTURE_GOOD, whose entry point must not be taken). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/analysis.h>

#ifdef FIXTURE_FROM_DEPENDENCY
/* Calls its dependency's entry point, so the link keeps the dependency and the dynamic symbol
 * table of this object holds sonde_tool_create as an undefined reference. */
sonde_status_t sonde_tool_create(const char *options, const sonde_tool_ops_t **ops, void **data);
SONDE_EXPORT sonde_status_t fixture_forward(const char *options, const sonde_tool_ops_t **ops, void **data);
SONDE_EXPORT sonde_status_t fixture_forward(const char *options, const sonde_tool_ops_t **ops, void **data) {
    return sonde_tool_create(options, ops, data);
}
#else

typedef struct fixture_t {
    unsigned long long records;
    char options[64]; /* the options it was made with, echoed in its results */
    char json[160];
} fixture_t;

static bool fx_memrefs(void *tool, const sonde_memref_t *m, size_t n) {
    (void)m;
    ((fixture_t *)tool)->records += n;
    return true;
}
static bool fx_memref(void *tool, const sonde_memref_t *m) { return fx_memrefs(tool, m, 1); }
static const char *fx_json(void *tool) {
    fixture_t *f = (fixture_t *)tool;
    if (f->options[0] != '\0')
        snprintf(f->json, sizeof f->json, "{\"records\": %llu, \"options\": \"%s\"}", f->records, f->options);
    else
        snprintf(f->json, sizeof f->json, "{\"records\": %llu}", f->records);
    return f->json;
}
static void fx_destroy(void *tool) { free(tool); }

/* The no-symbol variant exports its entry point under a wrong name. */
#ifdef FIXTURE_NO_SYMBOL
#define ENTRY sonde_tool_create_misspelled
#else
#define ENTRY sonde_tool_create
#endif
SONDE_EXPORT sonde_status_t ENTRY(const char *options, const sonde_tool_ops_t **ops, void **data);
SONDE_EXPORT sonde_status_t ENTRY(const char *options, const sonde_tool_ops_t **ops, void **data) {
    static sonde_tool_ops_t table;
    memset(&table, 0, sizeof table);
    table.struct_size = sizeof table;
    table.name = options != NULL && options[0] != '\0' ? "fixture_named" : "fixture";
    table.process_memref = fx_memref;
    table.process_memrefs = fx_memrefs;
    table.results_json = fx_json;
    table.destroy = fx_destroy;
#if defined(FIXTURE_BAD_SIZE)
    table.struct_size = 8; /* the analyzer cannot read destroy() from it: hand over no data */
    *data = NULL;
    *ops = &table;
    return SONDE_STATUS_SUCCESS;
#elif defined(FIXTURE_CREATE_FAILS)
    (void)data;
    *ops = NULL;
    return SONDE_STATUS_ERROR_INVALID_ARGUMENT;
#else
    fixture_t *f = (fixture_t *)calloc(1, sizeof(fixture_t));
    if (f == NULL) return SONDE_STATUS_ERROR_OUT_OF_MEMORY;
    /* Options without '"' or '\\' only: they are echoed into JSON as they are. */
    if (options != NULL && strlen(options) < sizeof f->options && strpbrk(options, "\"\\") == NULL)
        strcpy(f->options, options);
    *data = f;
    *ops = &table;
    return SONDE_STATUS_SUCCESS;
#endif
}
#endif /* FIXTURE_FROM_DEPENDENCY */
