/* A pull-mode consumer: a LOSSLESS buffer with SONDE_BUFFER_DELIVERY_POLL, filled by two
 * producer threads and read on the main thread with sonde_poll_buffer, the way a language
 * runtime that cannot take calls on foreign threads reads it. No Sonde thread ever calls this
 * program's code. Prints the record counts and exits 1 when a record is missing. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sonde/sonde.h>

#define PER_THREAD 50000u

typedef struct {
    unsigned long records, spans, lost;
} tally_t;

/* Called on the polling thread, inside sonde_poll_buffer. */
static void on_records(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                       sonde_session_id_t session, sonde_buffer_id_t buffer, void *user) {
    tally_t *t = user;
    t->spans++;
    for (const sonde_record_header_t *r = begin; r < end;) {
        const sonde_record_header_t *next;
        if (sonde_next_record(r, &next, session, buffer) != SONDE_STATUS_SUCCESS) break;
        if (sonde_record_kind(r) == SONDE_RECORD_KIND_TRACER)
            t->records++;
        else if (sonde_record_kind(r) == SONDE_RECORD_KIND_LOSS)
            t->lost += ((const sonde_loss_record_t *)sonde_record_payload(r, NULL))->count;
        r = next;
    }
}

static void *produce(void *arg) {
    sonde_buffer_id_t b = *(sonde_buffer_id_t *)arg;
    for (uint32_t i = 0; i < PER_THREAD; ++i) {
        sonde_tracer_record_t rec = {sonde_get_timestamp(), sonde_get_timestamp(), i, 0, 0};
        sonde_emit(b, SONDE_RECORD_KIND_TRACER, &rec, sizeof rec); /* waits for the poller when full */
    }
    return NULL;
}

int main(void) {
    sonde_session_id_t s;
    sonde_buffer_id_t b;
    tally_t tally = {0, 0, 0};
    const sonde_buffer_property_t props[] = {
        {SONDE_BUFFER_PROPERTY_KIND_DELIVERY, 0, SONDE_BUFFER_DELIVERY_POLL},
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
    };
    if (sonde_initialize() != SONDE_STATUS_SUCCESS) return 1;
    sonde_create_session(NULL, &s);
    /* 256 KiB: much less than the producers write, so they wait for the polls below. */
    sonde_status_t st = sonde_create_buffer(s, 256u << 10, NULL, NULL, props, 2, &b);
    if (st != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "sonde_create_buffer: %s\n", sonde_status_name(st));
        return 1;
    }
    sonde_start_session(s);
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, produce, &b);
    /* Poll until both producers are done and nothing is left: 10 ms waits, on this thread. */
    while (tally.records + tally.lost < 2 * PER_THREAD) {
        st = sonde_poll_buffer(s, b, 10000000u, on_records, &tally);
        if (st != SONDE_STATUS_SUCCESS && st != SONDE_STATUS_ERROR_TIMEOUT) {
            fprintf(stderr, "sonde_poll_buffer: %s\n", sonde_status_name(st));
            return 1;
        }
    }
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    sonde_stop_session(s);
    while (sonde_poll_buffer(s, b, 0, on_records, &tally) == SONDE_STATUS_SUCCESS) {
    }
    sonde_buffer_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    sonde_get_buffer_stats(s, b, &stats);
    printf("%lu TRACER records in %lu polled spans, %lu lost; emitted %llu, delivered %llu\n", tally.records,
           tally.spans, tally.lost, (unsigned long long)stats.records_emitted,
           (unsigned long long)stats.records_delivered);
    sonde_destroy_buffer(s, b);
    sonde_finalize();
    return tally.records == 2 * PER_THREAD && stats.records_delivered == stats.records_emitted ? 0 : 1;
}
