/* A buffer callback that blocks until the test opens its gate, so that producers run out of
 * chunks: gate(0) closes it (callbacks that start then wait), gate(1) opens it and releases the
 * waiting ones, which then pass their records to collector_cb (collect.h). Open at the start.
 * The gate's state is this file's own (one gate per test program); the delivery thread waits
 * on it, the test thread sets it. */
#pragma once

#include <pthread.h>

#include "collect.h"

static pthread_mutex_t g_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cv = PTHREAD_COND_INITIALIZER;
static int g_gate_open = 1;

static inline void gated_cb(const sonde_record_header_t *b, const sonde_record_header_t *e,
                            sonde_session_id_t s, sonde_buffer_id_t bu, void *u) {
    pthread_mutex_lock(&g_gate_mu);
    while (!g_gate_open) pthread_cond_wait(&g_gate_cv, &g_gate_mu);
    pthread_mutex_unlock(&g_gate_mu);
    collector_cb(b, e, s, bu, u);
}

static inline void gate(int open) {
    pthread_mutex_lock(&g_gate_mu);
    g_gate_open = open;
    pthread_cond_broadcast(&g_gate_cv);
    pthread_mutex_unlock(&g_gate_mu);
}
