/* Test helper: a consumer that copies every delivered record with the thread that emitted it.
 * The callback runs under the buffer's delivery lock; the collector's own mutex protects it
 * against readers on the test thread. */
#ifndef SONDE_TEST_COLLECT_H
#define SONDE_TEST_COLLECT_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sonde/sonde.h>

typedef struct collected_t {
    uint64_t thread_id; /* from the span's THREAD marker */
    uint32_t kind;
    uint16_t flags;
    uint32_t payload_size;
    unsigned char payload[64];
} collected_t;

typedef struct collector_t {
    pthread_mutex_t mu;
    collected_t *items;
    size_t count, cap;
    uint64_t spans;
    uint64_t losses;    /* sum of LOSS record counts */
    uint64_t bad_spans; /* spans not starting with THREAD, or failing validation */
    sonde_status_t last_error;
    int keep_losses; /* also store LOSS records as items (kind LOSS) */
} collector_t;

static inline void collector_init(collector_t *c) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}

static inline void collector_free(collector_t *c) {
    free(c->items);
    pthread_mutex_destroy(&c->mu);
}

static inline void collector_cb(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                                sonde_session_id_t session, sonde_buffer_id_t buffer, void *user) {
    collector_t *c = (collector_t *)user;
    pthread_mutex_lock(&c->mu);
    c->spans++;
    uint64_t tid = 0;
    if (begin >= end || sonde_record_kind(begin) != SONDE_RECORD_KIND_THREAD) c->bad_spans++;
    for (const sonde_record_header_t *r = begin; r < end;) {
        const sonde_record_header_t *next = NULL;
        sonde_status_t st = sonde_next_record(r, &next, session, buffer);
        if (st != SONDE_STATUS_SUCCESS) {
            c->bad_spans++;
            c->last_error = st;
            break;
        }
        uint32_t size = 0;
        const void *p = sonde_record_payload(r, &size);
        uint32_t kind = sonde_record_kind(r);
        if (kind == SONDE_RECORD_KIND_THREAD) {
            tid = ((const sonde_thread_record_t *)p)->thread_id;
        } else if (kind == SONDE_RECORD_KIND_LOSS && !c->keep_losses) {
            c->losses += ((const sonde_loss_record_t *)p)->count;
        } else {
            if (kind == SONDE_RECORD_KIND_LOSS) c->losses += ((const sonde_loss_record_t *)p)->count;
            if (c->count == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 1024;
                c->items = (collected_t *)realloc(c->items, c->cap * sizeof *c->items);
            }
            collected_t *it = &c->items[c->count++];
            it->thread_id = tid;
            it->kind = kind;
            it->flags = r->flags;
            it->payload_size = size;
            memcpy(it->payload, p, size < sizeof it->payload ? size : sizeof it->payload);
        }
        r = next;
    }
    pthread_mutex_unlock(&c->mu);
}

static inline size_t collector_count(collector_t *c) {
    pthread_mutex_lock(&c->mu);
    size_t n = c->count;
    pthread_mutex_unlock(&c->mu);
    return n;
}

#endif
