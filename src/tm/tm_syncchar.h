/* The Syncchar recorder (docs/syncchar.md): with TXALLOC_SYNCCHAR=<file>, the front-end
 * records, for every top-level atomic block, its site and times (the time its backend took
 * to begin it, acq: the lock under glock; the time from then to the end of its commit,
 * held), and, for a sample of blocks, the units (word, line or stripe) its attempt read and
 * wrote. Sampled attempts run with the inline load path off, so that every access reaches
 * the front-end (tm_access.c), whatever the backend. The records go to per-thread buffers
 * and from them to the file (tm_syncchar_trace.c) when a buffer fills, at thread exit and
 * at process exit.
 *
 * The hooks below are called only when tm_syncchar_enabled() (set once, at the runtime's
 * initialisation); tm_syncchar_self is non-NULL exactly while a sampled attempt runs on the
 * thread. Begins and commits need no hook: the recorder wraps the backend's begins in
 * tm_be and hears top-level commits as a registered callback, so blocks pay nothing for it
 * while it is off. */
#ifndef TXALLOC_TM_SYNCCHAR_H
#define TXALLOC_TM_SYNCCHAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tm/tm_internal.h"

typedef struct tm_syncchar_thread tm_syncchar_thread;

extern bool tm_syncchar_on;
/* Set once (release, after the recorder's settings), before the first block; read with
 * acquire by threads that may not have met the runtime's initialisation (tm_malloc). */
static inline bool tm_syncchar_enabled(void) {
  return __atomic_load_n(&tm_syncchar_on, __ATOMIC_ACQUIRE);
}
extern __thread tm_syncchar_thread *tm_syncchar_self __attribute__((tls_model("initial-exec")));

/* Once, at the runtime's initialisation, after the backend's and before any transaction:
 * opens the trace when the syncchar option names a file, wraps tm_be's begins, registers
 * the commit callback and sets tm_syncchar_on. */
void tm_syncchar_init(const char *backend_name);

/* The portable entry's block site (the caller of tm_checkpoint_), for the next top-level
 * begin; the fast entry's is the return address its context saved. */
void tm_syncchar_site(void *site);
/* An access of a sampled attempt (tm_syncchar_self != NULL). */
void tm_syncchar_access(uintptr_t addr, unsigned size, bool write);
/* The top level aborted: `cancel`, tm_abort ended the block; else it will begin again. */
void tm_syncchar_abort(tm_tx *tx, bool cancel);
/* tm_malloc's object and its caller, and tm_free's. */
void tm_syncchar_alloc(void *ptr, size_t size, void *site);
void tm_syncchar_free(void *ptr);
/* The thread leaves the runtime: its records go to the file. */
void tm_syncchar_thread_exit(void);

/* ---- The trace file (tm_syncchar_trace.c); the format is docs/syncchar.md's. ---- */
enum {
  TM_SC_RECORD_SECTION = 1,
  TM_SC_RECORD_THREAD = 2,
  TM_SC_RECORD_ALLOC = 3,
  TM_SC_RECORD_FREE = 4,
  TM_SC_RECORD_MAPS = 5,
};
enum {
  TM_SC_FLAG_READ_ONLY = 1,   /* the block was TM_ATOMIC_RO */
  TM_SC_FLAG_IRREVOCABLE = 2, /* its last attempt ran irrevocably */
  TM_SC_FLAG_CANCELLED = 4,   /* tm_abort ended it: nothing committed */
  TM_SC_FLAG_TRUNCATED = 8,   /* a set overflowed TM_SC_SET_MAX units: some are missing */
};
#define TM_SC_SET_MAX 16384

/* Opens `path` and writes the header; false when it cannot. */
bool tm_syncchar_trace_open(const char *path, unsigned unit, unsigned unit_shift,
                            unsigned stm_shift, unsigned sample, unsigned window,
                            const char *backend, uint64_t start_ns);
/* Appends whole records (8-byte words) to the file, in one write: never interleaved. */
void tm_syncchar_trace_write(const uint64_t *words, size_t n);
/* The process's mappings, for the analyser to name code addresses. */
void tm_syncchar_trace_write_maps(void);

#endif
