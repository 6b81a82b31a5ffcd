/* Memtrace concept: what libsonde-instrument.so's start-up, thread and exit hooks call
 * (src/instrument/instrument.c). Not installed. */
#ifndef SONDE_MEMTRACE_MEMTRACE_H
#define SONDE_MEMTRACE_MEMTRACE_H

/* Reads SONDE_MEMTRACE (the trace file) and creates the thread-exit key; before
 * sonde_initialize. Start-up thread. */
void sonde_memtrace_prepare(void);
/* Starts recording when sonde_memtrace_prepare found a file; after sonde_initialize. */
void sonde_memtrace_start(void);
/* Writes the calling thread's staged references and its THREAD_EXIT marker (a thread created
 * through the pthread_create wrapper, when its start routine returns). */
void sonde_memtrace_thread_exit(void);
/* Stops recording and finishes the trace (exit, _exit). Any thread, once. */
void sonde_memtrace_stop(void);

#endif
