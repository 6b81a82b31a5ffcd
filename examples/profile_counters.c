/* Example: worker threads count the work items they process per category in a profile array
 * (one bucket per worker, no atomics on the hot path) and the main thread sums the buckets at
 * the end.
 *
 *   profile_counters [shared-file]
 *
 * With a file argument the counters live in a shared-memory file that another process (see
 * docs/profile-arrays.md for a Python reader) can map and watch while the workers run. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sonde/profile.h>

enum { SMALL, MEDIUM, LARGE, HUGE_ITEM, NUM_CATEGORIES };
static const char *const category_names[NUM_CATEGORIES] = {"small", "medium", "large", "huge"};

/* One record per category: two u64 counters. */
typedef struct category_record_t {
    uint64_t items;
    uint64_t bytes;
} category_record_t;

#define NUM_WORKERS 4
#define ITEMS_PER_WORKER 250000u

static sonde_profile_buffer_t *g_buffer;
static sonde_profile_array_t *g_counts;

/* A deterministic "work item": its size in bytes, and the category that size falls in. */
static uint64_t item_size(uint64_t item) {
    uint64_t x = item * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return x % 100000;
}

static uint32_t category_of(uint64_t size) {
    return size < 1000 ? SMALL : size < 10000 ? MEDIUM : size < 90000 ? LARGE : HUGE_ITEM;
}

/* Returns arg (a uint32_t worker id) or NULL when the view could not be made. */
static void *worker(void *arg) {
    const uint32_t id = *(const uint32_t *)arg;
    /* Worker i counts in bucket i. */
    sonde_profile_set_thread_index(id);
    sonde_profile_view_t view;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    if (sonde_profile_array_view(g_counts, g_buffer, &view) != SONDE_STATUS_SUCCESS) return NULL;
    for (uint64_t i = 0; i < ITEMS_PER_WORKER; ++i) {
        const uint64_t size = item_size(id * (uint64_t)ITEMS_PER_WORKER + i);
        const uint32_t cat = category_of(size);
        /* Hot path: two inline adds into this thread's own cache lines. */
        sonde_profile_view_add_u64(&view, cat, offsetof(category_record_t, items), 1);
        sonde_profile_view_add_u64(&view, cat, offsetof(category_record_t, bytes), size);
    }
    return arg;
}

int main(int argc, char **argv) {
    sonde_status_t st = argc > 1 ? sonde_profile_buffer_create_shared(argv[1], 1 << 16, &g_buffer)
                                 : sonde_profile_buffer_create(1 << 16, &g_buffer);
    if (st != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "profile buffer: %s\n", sonde_status_string(st));
        return 1;
    }
    st = sonde_profile_array_create(sizeof(category_record_t), NUM_CATEGORIES, NUM_WORKERS, 64, &g_counts);
    if (st == SONDE_STATUS_SUCCESS) st = sonde_profile_array_allocate(g_counts, g_buffer);
    if (st == SONDE_STATUS_SUCCESS) st = sonde_profile_array_initialize(g_counts, g_buffer);
    if (st != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "profile array: %s\n", sonde_status_string(st));
        return 1;
    }
    printf("%u categories x %u buckets, chunk %u bytes, array %llu bytes at offset %llu\n",
           sonde_profile_array_num_records(g_counts), sonde_profile_array_num_thread_buckets(g_counts),
           sonde_profile_array_chunk_size(g_counts), (unsigned long long)sonde_profile_array_size(g_counts),
           (unsigned long long)sonde_profile_array_offset(g_counts));

    pthread_t threads[NUM_WORKERS];
    uint32_t ids[NUM_WORKERS];
    for (uint32_t t = 0; t < NUM_WORKERS; ++t) {
        ids[t] = t;
        pthread_create(&threads[t], NULL, worker, &ids[t]);
    }
    int failed = 0;
    for (int t = 0; t < NUM_WORKERS; ++t) {
        void *ret = NULL;
        pthread_join(threads[t], &ret);
        failed |= ret == NULL;
    }

    /* Sum the buckets and check against a recount on this thread. */
    uint64_t expect_items[NUM_CATEGORIES] = {0}, expect_bytes[NUM_CATEGORIES] = {0};
    for (uint64_t i = 0; i < (uint64_t)NUM_WORKERS * ITEMS_PER_WORKER; ++i) {
        const uint64_t size = item_size(i);
        expect_items[category_of(size)] += 1;
        expect_bytes[category_of(size)] += size;
    }
    printf("%-8s %10s %14s\n", "category", "items", "bytes");
    for (uint32_t c = 0; c < NUM_CATEGORIES; ++c) {
        uint64_t items = 0, bytes = 0;
        sonde_profile_array_sum_u64(g_counts, g_buffer, c, offsetof(category_record_t, items), &items);
        sonde_profile_array_sum_u64(g_counts, g_buffer, c, offsetof(category_record_t, bytes), &bytes);
        printf("%-8s %10llu %14llu\n", category_names[c], (unsigned long long)items,
               (unsigned long long)bytes);
        failed |= items != expect_items[c] || bytes != expect_bytes[c];
    }
    sonde_profile_array_destroy(g_counts);
    sonde_profile_buffer_destroy(g_buffer);
    if (failed) fprintf(stderr, "profile_counters: totals do not match the recount\n");
    return failed ? 1 : 0;
}
