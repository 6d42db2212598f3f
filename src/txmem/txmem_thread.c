/* Threads: the thread-local state, the registry of records that epoch scans and statistics
 * traverse, thread setup at the first transactional event and cleanup at thread exit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "txmem/txmem_internal.h"
#include "util/message.h"

__thread txmem_thread txmem_tls __attribute__((tls_model("initial-exec")));
txmem_record *_Atomic txmem_registry;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void exit_destructor(void *arg) {
  (void)arg;
  txmem_thread_exit();
}
/* In a child of fork only the forking thread exists: the other threads' records must not
 * hold reclamation back (their transactions will never end there), and their deferred
 * frees are abandoned (they live in those threads' memory). */
static void atfork_child(void) {
  txmem_record *self = txmem_tls.ready ? txmem_tls.rec : NULL;
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    if (r == self) continue;
    atomic_store(&r->announce, 0);
    __atomic_store_n(&r->limbo_objects, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->limbo_bytes, 0, __ATOMIC_RELAXED);
    atomic_store(&r->in_use, 0);
  }
  txmem_epoch_atfork_child();
  /* The child is a new process: register it again; on refusal its only thread (this one)
   * announces with the barrier at every begin and withdraws at every end. */
  if (txmem_cfg.sticky && !txmem_membarrier_register()) {
    txmem_cfg.sticky = false;
    if (txmem_tls.top == TXMEM_TOP_STICKY) {
      txmem_tls.top = TXMEM_TOP_FENCED;
      txmem_tls.leave_keep = 0;
    }
    if (self && txmem_tls.depth == 0) atomic_store(&self->announce, 0);
  }
}

static void exit_key_create(void) {
  if (pthread_key_create(&exit_key, exit_destructor) != 0)
    txalloc_message("txmem: no thread-exit key; threads must call txmem_thread_exit");
  pthread_atfork(txmem_epoch_atfork_prepare, txmem_epoch_atfork_parent, atfork_child);
}

_Noreturn void txmem_contract_error(const char *what, unsigned depth, unsigned open) {
  txalloc_message("txmem: hook contract violated: %s (depth %u, open levels %u)", what, depth,
                  open);
  abort();
}

/* Grows a bookkeeping array to at least min_cap elements (doubling). The process's malloc
 * serves txmem's own bookkeeping; it must not route back into txmem_malloc. */
void *txmem_meta_grow(void *array, size_t *cap, size_t elem, size_t min_cap) {
  size_t n = *cap ? *cap : 16;
  while (n < min_cap) n *= 2;
  void *p = realloc(array, n * elem);
  if (!p) {
    txalloc_message("txmem: out of memory for transaction logs (%zu entries)", n);
    abort();
  }
  *cap = n;
  return p;
}

/* A free record (of an exited thread) or a new one, mapped (never freed: scans may be
 * reading it). */
static txmem_record *record_acquire(void) {
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    int expected = 0;
    if (atomic_load_explicit(&r->in_use, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&r->in_use, &expected, 1))
      return r;
  }
  txmem_record *r =
      mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) {
    txalloc_message("txmem: cannot map a thread record");
    abort();
  }
  atomic_store_explicit(&r->in_use, 1, memory_order_relaxed);
  txmem_record *head = atomic_load(&txmem_registry);
  do {
    atomic_store_explicit(&r->next, head, memory_order_relaxed);
  } while (!atomic_compare_exchange_weak(&txmem_registry, &head, r));
  return r;
}

static const int hot_to_counter[TXMEM_HOT_COUNT_] = {
#define TXMEM_HOT_MAP_(name) TXMEM_C_##name,
    TXMEM_HOT_COUNTERS(TXMEM_HOT_MAP_)
#undef TXMEM_HOT_MAP_
};

void txmem_hot_publish(txmem_thread *t) {
  t->hot[TXMEM_HOT_transactions] += t->tx_pending;
  t->tx_pending = 0;
  for (int i = 0; i < TXMEM_HOT_COUNT_; i++)
    __atomic_store_n(&t->rec->counters[hot_to_counter[i]], t->hot[i], __ATOMIC_RELAXED);
  txmem_profile_publish(&t->prof, &t->rec->profile);
  txmem_limbo_gauges(t); /* the peak: pushes publish only the limbo's size */
}

txmem_thread *txmem_thread_setup(txmem_thread *t) {
  if (t->ready) return t;
  const txmem_config *cfg = txmem_config_get();
  t->txalloc = cfg->strategy == TXMEM_TXALLOC;
  txmem_top_mode top = !cfg->safe_reuse ? TXMEM_TOP_QUIET
                       : cfg->sticky    ? TXMEM_TOP_STICKY
                                        : TXMEM_TOP_FENCED;
  t->rec = record_acquire();
  if (top == TXMEM_TOP_STICKY) {
    /* Never 0 while this thread may run transactions: scans skip 0 without a membarrier
     * (txmem_epoch.c). Flagged, so that its first begin is fenced and scans need no
     * membarrier to pass it until then: confirmed at once, as no begin of this thread
     * can have loaded the flag clear before it was set. */
    atomic_store(&t->rec->fence_next, TXMEM_FENCE_CONFIRMED);
    atomic_store(&t->rec->announce, TXMEM_ANNOUNCE(atomic_load(&txmem_g_epoch), 0));
  }
  /* A reused record keeps its totals: continue counting from them. */
  for (int i = 0; i < TXMEM_HOT_COUNT_; i++) t->hot[i] = t->rec->counters[hot_to_counter[i]];
  txmem_profile_adopt(&t->prof, &t->rec->profile);
  t->tx_pending = 0;
  /* I5: the top level's record, constant (its seq is 0, its logs start empty). */
  t->levels = txmem_meta_grow(NULL, &t->levels_cap, sizeof *t->levels, 8);
  /* The undo log from the start: with the run (txmem_run.c) a thread may reach it first
   * long after setup, and its bookkeeping should not appear in the middle of a program. */
  t->undo = txmem_meta_grow(NULL, &t->undo_cap, sizeof *t->undo, 16);
  t->levels[1] = (txmem_level){0, 0, 0, 0};
  t->cur_seq = 0;
  t->cur_undo_start = 0;
  pthread_once(&exit_key_once, exit_key_create);
  pthread_setspecific(exit_key, t);
  t->leave_keep = top == TXMEM_TOP_STICKY ? ~TXMEM_ANNOUNCE(0, 1) : 0;
  t->top = (uint8_t)top;
  t->ready = true;
  return t;
}

void txmem_thread_exit(void) {
  txmem_thread *t = &txmem_tls;
  if (!t->ready) return;
  if (t->depth > 0) txmem_tx_abort(1);
  txmem_run_drop(t);
  txmem_hot_publish(t);
  txmem_epoch_thread_exit(t); /* may release safe objects into the cache: flush after */
  txmem_cache_flush(t);
  free(t->levels);
  free(t->undo);
  free(t->index);
  free(t->commit);
  free(t->limbo);
  free(t->cache);
  txmem_record *rec = t->rec;
  memset(t, 0, sizeof *t);
  atomic_store_explicit(&rec->announce, 0, memory_order_release);
  atomic_store_explicit(&rec->in_use, 0, memory_order_release);
}
