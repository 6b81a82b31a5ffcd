/* Helpers shared by the analyzer tests: fetch the results JSON of a run, squeeze out its
 * whitespace, and read one number of a cache_sim level from it. Include after cmocka.h. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/analysis.h>

/* Compact form of the JSON for substring checks: no whitespace. */
static inline void squeeze(char *s) {
    char *o = s;
    for (; *s; ++s)
        if (*s != ' ' && *s != '\n') *o++ = *s;
    *o = '\0';
}

/* The results JSON of a successful run (squeezed), after checking the size protocol. */
static inline char *results(sonde_analyzer_t *a) {
    size_t need = 0;
    assert_int_equal(sonde_analyzer_results_json(a, NULL, 0, &need), SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    assert_true(need > 2);
    char small[2];
    assert_int_equal(sonde_analyzer_results_json(a, small, sizeof small, &need),
                     SONDE_STATUS_ERROR_BUFFER_TOO_SHORT);
    char *text = malloc(need);
    assert_non_null(text);
    size_t again = 0;
    assert_int_equal(sonde_analyzer_results_json(a, text, need, &again), SONDE_STATUS_SUCCESS);
    assert_int_equal(again, need);
    assert_int_equal(strlen(text) + 1, need);
    squeeze(text);
    return text;
}

/* The value of `key` in the cache_sim level named `level` of squeezed results JSON. */
static inline uint64_t level_value(const char *json, const char *level, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"name\":\"%s\"", level);
    const char *obj = strstr(json, pat);
    assert_non_null(obj);
    while (obj > json && *obj != '{') --obj;
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *v = strstr(obj, k);
    assert_non_null(v);
    return strtoull(v + strlen(k), NULL, 10);
}
