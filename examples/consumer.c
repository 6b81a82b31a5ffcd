/* A complete Sonde consumer: a session with one buffer, four threads emitting TRACER records
 * (and two custom kinds, one of them through the header-inline sonde_emit_inline), delivery to a callback that walks records with sonde_next_record, and
 * the buffer's statistics at the end.
 *
 * Build against an installed Sonde:  cc consumer.c $(pkg-config --cflags --libs sonde) -pthread */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sonde/sonde.h>

#define THREADS 4
#define RECORDS_PER_THREAD 100000

typedef struct {
    pthread_mutex_t mu; /* the callback runs on Sonde's delivery thread or a flusher */
    uint64_t thread_ids[THREADS + 1];
    uint64_t per_thread[THREADS + 1];
    uint64_t custom, samples, spans, losses;
    sonde_tracer_record_t last;
} summary_t;

enum { KIND_HEARTBEAT = SONDE_RECORD_KIND_USER + 1, KIND_SAMPLE = SONDE_RECORD_KIND_USER + 2 };
#define SAMPLE_EVERY 100

static void on_records(const sonde_record_header_t *begin, const sonde_record_header_t *end,
                       sonde_session_id_t session, sonde_buffer_id_t buffer, void *user_data) {
    summary_t *s = (summary_t *)user_data;
    pthread_mutex_lock(&s->mu);
    s->spans++;
    int slot = THREADS;
    for (const sonde_record_header_t *r = begin; r < end;) {
        const sonde_record_header_t *next;
        sonde_status_t st = sonde_next_record(r, &next, session, buffer);
        if (st != SONDE_STATUS_SUCCESS) {
            fprintf(stderr, "bad record: %s\n", sonde_status_string(st));
            break;
        }
        const void *payload = sonde_record_payload(r, NULL);
        switch (sonde_record_kind(r)) {
            case SONDE_RECORD_KIND_THREAD: { /* every span starts by naming its thread */
                uint64_t tid = ((const sonde_thread_record_t *)payload)->thread_id;
                for (slot = 0; slot < THREADS && s->thread_ids[slot] != tid && s->thread_ids[slot] != 0;
                     ++slot) {
                }
                if (slot < THREADS) s->thread_ids[slot] = tid;
                break;
            }
            case SONDE_RECORD_KIND_LOSS: s->losses += ((const sonde_loss_record_t *)payload)->count; break;
            case SONDE_RECORD_KIND_TRACER:
                s->per_thread[slot]++;
                memcpy(&s->last, payload, sizeof s->last);
                break;
            case KIND_HEARTBEAT: s->custom++; break;
            case KIND_SAMPLE: s->samples++; break;
        }
        r = next;
    }
    pthread_mutex_unlock(&s->mu);
}

typedef struct {
    sonde_buffer_id_t buffer;
    uint32_t domain;
} worker_t;

static void *work(void *arg) {
    worker_t *w = (worker_t *)arg;
    /* This thread's producer for sonde_emit_inline: asked for once, on the thread that uses it.
     * If the call failed, sonde_emit_inline would answer as sonde_emit does. */
    sonde_producer_t producer;
    memset(&producer, 0, sizeof producer);
    producer.struct_size = SONDE_PRODUCER_SIZE_1_2;
    sonde_buffer_producer(w->buffer, &producer);
    for (uint64_t i = 0; i < RECORDS_PER_THREAD; ++i) {
        sonde_tracer_record_t rec;
        rec.begin_ns = sonde_get_timestamp();
        rec.end_ns = rec.begin_ns + 10;
        rec.correlation_id = i;
        rec.domain = w->domain;
        rec.operation = (uint32_t)(i % 7);
        sonde_emit(w->buffer, SONDE_RECORD_KIND_TRACER, &rec, sizeof rec);
        if (i % 10000 == 0) sonde_emit_timestamped(w->buffer, KIND_HEARTBEAT, &i, sizeof i);
        if (i % SAMPLE_EVERY == 0) { /* a timestamp the caller has, and a value: no call */
            const uint64_t sample[2] = {rec.begin_ns, i};
            sonde_emit_inline(&producer, KIND_SAMPLE, sample, sizeof sample);
        }
    }
    return NULL; /* thread exit delivers what this thread emitted */
}

int main(void) {
    summary_t summary;
    memset(&summary, 0, sizeof summary);
    pthread_mutex_init(&summary.mu, NULL);

    sonde_status_t st = sonde_initialize();
    if (st != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "sonde_initialize: %s\n", sonde_status_string(st));
        return 1;
    }
    sonde_session_properties_t props = {sizeof props, 0, "example"};
    sonde_session_id_t session;
    sonde_create_session(&props, &session);
    const sonde_buffer_property_t bprops[2] = {
        {SONDE_BUFFER_PROPERTY_KIND_POLICY, 0, SONDE_BUFFER_POLICY_LOSSLESS},
        {SONDE_BUFFER_PROPERTY_KIND_INTERVAL_FLUSH, 0, 100 * 1000 * 1000}};
    sonde_buffer_id_t buffer;
    st = sonde_create_buffer(session, 8u << 20, on_records, &summary, bprops, 2, &buffer);
    if (st != SONDE_STATUS_SUCCESS) {
        fprintf(stderr, "sonde_create_buffer: %s\n", sonde_status_string(st));
        return 1;
    }
    sonde_start_session(session);

    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    for (uint32_t i = 0; i < THREADS; ++i) {
        workers[i].buffer = buffer;
        workers[i].domain = i;
        pthread_create(&threads[i], NULL, work, &workers[i]);
    }
    for (int i = 0; i < THREADS; ++i) pthread_join(threads[i], NULL);

    sonde_stop_session(session); /* delivers everything emitted before it */
    sonde_buffer_stats_t stats = {sizeof stats, 0, 0, 0, 0, 0, 0, 0};
    sonde_get_buffer_stats(session, buffer, &stats);

    printf("callback received %" PRIu64 " spans\n", summary.spans);
    for (int i = 0; i < THREADS; ++i)
        printf("  thread %" PRIu64 ": %" PRIu64 " TRACER records\n", summary.thread_ids[i],
               summary.per_thread[i]);
    printf("  %" PRIu64 " heartbeat records (custom kind), %" PRIu64 " samples (inline), %" PRIu64
           " reported lost\n",
           summary.custom, summary.samples, summary.losses);
    printf("  last TRACER: domain %u operation %u correlation %" PRIu64 "\n", summary.last.domain,
           summary.last.operation, summary.last.correlation_id);
    printf("buffer stats: emitted %" PRIu64 ", delivered %" PRIu64 ", dropped %" PRIu64 ", bytes %" PRIu64
           ", callbacks %" PRIu64 "\n",
           stats.records_emitted, stats.records_delivered, stats.records_dropped, stats.bytes_delivered,
           stats.callbacks);
    const int ok = stats.records_emitted == stats.records_delivered + stats.records_dropped &&
                   stats.records_emitted == THREADS * (RECORDS_PER_THREAD + RECORDS_PER_THREAD / 10000 +
                                                       RECORDS_PER_THREAD / SAMPLE_EVERY) &&
                   summary.samples == THREADS * (RECORDS_PER_THREAD / SAMPLE_EVERY);
    sonde_destroy_session(session);
    sonde_finalize();
    return ok ? 0 : 1;
}
