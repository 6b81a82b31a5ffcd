/* A program for the live-analysis tests that any compiler builds (no sanitizer coverage needed,
 * so that it also runs in the AddressSanitizer and ThreadSanitizer builds): it calls the
 * sanitizer-coverage load and store callbacks of libsonde-instrument.so itself, as a program
 * built with -fsanitize-coverage=trace-loads,trace-stores would, for the accesses it describes.
 *
 * usage: live_workload THREADS REFS [MODE]
 * The main thread touches its own array, starts THREADS workers at once, then one more late
 * worker after more work of its own, and joins them. Worker w makes REFS accesses: loads from
 * an array shared by all workers (a pseudo-random walk, the same in every run) and stores to
 * its own; the first worker stops after REFS / 8 (a thread that ends early). With MODE "crash"
 * the main thread aborts once the workers are done (SIGABRT: the sanitizers leave it to the
 * program's handlers, where they catch SIGSEGV themselves); with MODE "wait" it prints its pid
 * and sleeps (to be killed). It prints the number of accesses it described. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void __sanitizer_cov_load1(uint8_t *addr);
void __sanitizer_cov_load4(uint32_t *addr);
void __sanitizer_cov_load8(uint64_t *addr);
void __sanitizer_cov_store2(uint16_t *addr);
void __sanitizer_cov_store4(uint32_t *addr);
void __sanitizer_cov_store8(uint64_t *addr);

enum { kShared = 1 << 16, kOwn = 1 << 12, kMaxWorkers = 64 };

static uint64_t shared_words[kShared];
static uint32_t own[kMaxWorkers + 1][kOwn];
static uint8_t main_bytes[4096];
static long refs_per_worker;

struct work {
    int index;
    long refs;
    long made;
};

static void *worker(void *p) {
    struct work *w = p;
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(w->index + 1);
    for (long i = 0; i < w->refs; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t *s = &shared_words[x % kShared];
        __sanitizer_cov_load8(s);
        uint32_t *o = &own[w->index][i % kOwn];
        if (i % 3 == 0) {
            __sanitizer_cov_load4(o);
        } else {
            __sanitizer_cov_store4(o);
            *o = (uint32_t)*s;
        }
    }
    w->made = 2 * w->refs;
    return NULL;
}

static long main_work(long n) {
    for (long i = 0; i < n; ++i) {
        __sanitizer_cov_load1(&main_bytes[i % sizeof main_bytes]);
        __sanitizer_cov_store2((uint16_t *)(void *)&main_bytes[(i * 2) % sizeof main_bytes]);
        __sanitizer_cov_store8(&shared_words[(uint64_t)i * 64 % kShared]);
    }
    return 3 * n;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS REFS [crash|wait]\n", argv[0]);
        return 2;
    }
    const int threads = atoi(argv[1]);
    refs_per_worker = atol(argv[2]);
    const char *mode = argc > 3 ? argv[3] : "";
    if (threads < 0 || threads >= kMaxWorkers || refs_per_worker < 0) return 2;
    long made = main_work(1000);
    pthread_t t[kMaxWorkers + 1];
    struct work w[kMaxWorkers + 1];
    for (int i = 0; i <= threads; ++i) {
        w[i].index = i;
        w[i].refs = i == 0 && threads > 0 ? refs_per_worker / 8 : refs_per_worker;
        w[i].made = 0;
    }
    for (int i = 0; i < threads; ++i)
        if (pthread_create(&t[i], NULL, worker, &w[i]) != 0) return 1;
    made += main_work(refs_per_worker / 4);
    /* A thread that starts while the others run. */
    if (pthread_create(&t[threads], NULL, worker, &w[threads]) != 0) return 1;
    made += main_work(refs_per_worker / 4);
    for (int i = 0; i <= threads; ++i) {
        pthread_join(t[i], NULL);
        made += w[i].made;
    }
    if (strcmp(mode, "crash") == 0) {
        printf("%ld\n", made);
        fflush(stdout);
        abort();
    }
    if (strcmp(mode, "wait") == 0) {
        printf("%d\n", (int)getpid());
        fflush(stdout);
        sleep(60);
    }
    printf("%ld\n", made);
    return 0;
}
