/* tm_malloc / tm_free with the basic transactional semantics, on plain malloc/free:
 *   - an allocation made inside a transaction is freed again when the level that made it
 *     aborts (closed nesting: a child's abort frees only the child's allocations);
 *   - a free inside a transaction takes effect only when the top level commits, and the
 *     memory goes back to malloc only once no transaction that may still hold a pointer to
 *     it runs (concurrent transactions may have read the pointer before the commit that
 *     unlinked it; their next validation aborts them, but until then they may read the
 *     object). The runtime provides the clock tag and the safe bound (tm_gc_*).
 * The file is self-contained: it subscribes to the runtime through tm_register_callbacks,
 * exactly as the transaction-aware allocator (src/txmem) will when it replaces this file. */
#include <pthread.h>
#include <stdlib.h>

#include "tm/tm_internal.h"

enum { LOG_ALLOC, LOG_FREE };
typedef struct log_entry {
  void *ptr;
  int kind;
} log_entry;

typedef struct limbo_entry {
  void *ptr;
  uint64_t tag; /* clock after the commit that freed it */
} limbo_entry;

typedef struct alloc_thread {
  log_entry *log; /* this transaction's allocations and frees, oldest first */
  size_t n, cap;
  size_t *marks; /* marks[d]: log size when level d began */
  unsigned mark_cap;
  limbo_entry *limbo; /* committed frees waiting until no transaction may read them */
  size_t ln, lcap;
  size_t reclaim_at; /* try to reclaim when ln reaches this (RECLAIM_BATCH new entries) */
} alloc_thread;

static __thread alloc_thread self;

/* Limbo entries left by exited threads (under orphans_lock). */
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static limbo_entry *orphans;
static size_t orphans_n, orphans_cap;

#define RECLAIM_BATCH 256 /* committed frees per reclamation attempt (one membarrier) */

static void *grow(void *array, size_t *cap, size_t elem) {
  size_t c = *cap ? *cap * 2 : 64;
  void *p = realloc(array, c * elem);
  if (!p) tm_fatal("out of memory in tm_malloc's log");
  *cap = c;
  return p;
}

static void log_push(void *ptr, int kind) {
  if (self.n == self.cap) self.log = grow(self.log, &self.cap, sizeof *self.log);
  self.log[self.n++] = (log_entry){ptr, kind};
}

/* Frees the entries of `limbo` that are safe now; returns how many are kept (compacted). */
static size_t reclaim(limbo_entry *limbo, size_t n) {
  uint64_t bound = tm_gc_safe_bound();
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (limbo[i].tag <= bound)
      free(limbo[i].ptr);
    else
      limbo[kept++] = limbo[i];
  }
  return kept;
}

static void reclaim_orphans(void) {
  if (!__atomic_load_n(&orphans_n, __ATOMIC_RELAXED)) return;
  if (pthread_mutex_trylock(&orphans_lock) != 0) return;
  __atomic_store_n(&orphans_n, reclaim(orphans, orphans_n), __ATOMIC_RELAXED);
  pthread_mutex_unlock(&orphans_lock);
}

void *tm_malloc(size_t size) {
  void *p = malloc(size);
  if (p && tm_in_transaction()) log_push(p, LOG_ALLOC);
  return p;
}

void tm_free(void *ptr) {
  if (!ptr) return;
  if (tm_in_transaction())
    log_push(ptr, LOG_FREE);
  else
    free(ptr);
}

static void on_begin(void *ctx, unsigned depth) {
  (void)ctx;
  if (depth >= self.mark_cap) {
    size_t cap = self.mark_cap;
    while (cap <= depth) self.marks = grow(self.marks, &cap, sizeof *self.marks);
    self.mark_cap = (unsigned)cap;
  }
  self.marks[depth] = self.n;
}

static void on_abort(void *ctx, unsigned depth) {
  (void)ctx;
  size_t mark = self.marks[depth];
  for (size_t i = self.n; i-- > mark;)
    if (self.log[i].kind == LOG_ALLOC) free(self.log[i].ptr);
  self.n = mark;
}

static void on_commit(void *ctx, unsigned depth) {
  (void)ctx;
  if (depth > 1) return; /* the child's entries now belong to the parent */
  uint64_t tag = 0;
  for (size_t i = 0; i < self.n; i++) {
    if (self.log[i].kind != LOG_FREE) continue;
    if (!tag) tag = tm_gc_tag();
    if (self.ln == self.lcap) self.limbo = grow(self.limbo, &self.lcap, sizeof *self.limbo);
    self.limbo[self.ln++] = (limbo_entry){self.log[i].ptr, tag};
  }
  self.n = 0;
  if (self.ln >= self.reclaim_at) {
    /* Entries still unsafe stay; the next attempt waits for a new batch, so a thread that
     * cannot free (an old transaction runs elsewhere) does not rescan on every commit. */
    self.ln = reclaim(self.limbo, self.ln);
    self.reclaim_at = self.ln + RECLAIM_BATCH;
    reclaim_orphans();
  }
}

static void on_thread_exit(void *ctx) {
  (void)ctx;
  self.ln = reclaim(self.limbo, self.ln);
  if (self.ln) {
    pthread_mutex_lock(&orphans_lock);
    for (size_t i = 0; i < self.ln; i++) {
      if (orphans_n == orphans_cap) orphans = grow(orphans, &orphans_cap, sizeof *orphans);
      orphans[orphans_n] = self.limbo[i];
      __atomic_store_n(&orphans_n, orphans_n + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&orphans_lock);
  }
  free(self.limbo);
  free(self.log);
  free(self.marks);
  self = (alloc_thread){0};
}

__attribute__((constructor)) static void tm_alloc_subscribe(void) {
  static const tm_callbacks cb = {on_begin, on_commit, on_abort, on_thread_exit, NULL};
  if (tm_register_callbacks(&cb) != 0) tm_fatal("tm_alloc: callback table full");
}
