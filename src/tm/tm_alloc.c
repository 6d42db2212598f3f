/* tm_malloc / tm_free: the runtime drives the transaction-aware allocation layer
 * (include/txalloc/txmem.h, docs/txmem.md) through its lifecycle callbacks, exactly as any
 * other TM runtime would. The strategy (wrap, wrap-cache, txalloc) and safe reuse are
 * txmem's options; this file only forwards.
 *
 * What txmem requires of the runtime, and why this runtime meets it:
 *   - on_begin(d) for every level it can roll back on its own, before the level's first
 *     tm_malloc/tm_free: the runtime reports each closed-nested level, and only depth 1
 *     under nesting=flat (a flat child cannot be rolled back alone).
 *   - on_commit(1) after the top level's writes are visible and its locks released (tm.h
 *     promises it): deferred frees enter the epoch limbo only then. on_commit(d > 1) when
 *     a closed child merges into its parent.
 *   - on_abort(d) after level d's writes were undone; a restart is on_abort(d) followed by
 *     on_begin(d).
 *   - a transaction never dereferences a pointer read from another transaction's
 *     uncommitted write: stm reads are validated against the lock before use, and a
 *     write-through reader that meets a locked stripe aborts.
 *   - the runtime's own metadata is never allocated with tm_malloc. */
#include "txalloc/tm.h"
#include "txalloc/txmem.h"

#include "tm/tm_internal.h"

static void forward_begin(void *ctx, unsigned depth) {
  (void)ctx;
  txmem_tx_begin(depth);
}

static void forward_commit(void *ctx, unsigned depth) {
  (void)ctx;
  txmem_tx_commit(depth);
}

static void forward_abort(void *ctx, unsigned depth) {
  (void)ctx;
  txmem_tx_abort(depth);
}

static void forward_thread_exit(void *ctx) {
  (void)ctx;
  txmem_thread_exit();
}

/* A thread whose limbo passed its high-water mark asks the transactions that began
 * before the frees to validate now (McRT §4.2: doomed transactions abort instead of
 * holding reclamation back); valid ones run on and the thread waits for them. */
static void validate_stale_transactions(uint64_t epoch, void *arg) {
  (void)epoch;
  (void)arg;
  tm_request_validation();
}

/* Subscribed before main, so no transaction can begin unreported. */
__attribute__((constructor)) static void tm_alloc_subscribe(void) {
  static const tm_callbacks callbacks = {
      .on_begin = forward_begin,
      .on_commit = forward_commit,
      .on_abort = forward_abort,
      .on_thread_exit = forward_thread_exit,
      .ctx = NULL,
  };
  if (tm_register_callbacks(&callbacks) != 0) tm_fatal("tm_alloc: callback table full");
  txmem_set_stale_hook(validate_stale_transactions, NULL);
}

void *tm_malloc(size_t size) { return txmem_malloc(size); }

void tm_free(void *ptr) { txmem_free(ptr); }
