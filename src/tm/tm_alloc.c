/* tm_malloc / tm_free: the runtime drives the transaction-aware allocation layer
 * (include/txalloc/txmem.h, docs/txmem.md) through txmem's hooks, which tm_runtime.c calls
 * directly at every lifecycle event (before the subscribers of tm_register_callbacks: the
 * same events an external TM runtime would deliver through its callbacks, without the
 * indirect call). The strategy (wrap, wrap-cache, txalloc, thrifty) and safe reuse are
 * txmem's options; this file forwards the allocation calls and installs the stale and
 * refill hooks.
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
#include "tm/tm_syncchar.h"

/* A thread whose limbo passed its high-water mark asks the transactions that began
 * before the frees to validate now (McRT §4.2: doomed transactions abort instead of
 * holding reclamation back); valid ones run on and the thread waits for them. */
static void validate_stale_transactions(uint64_t epoch, void *arg) {
  (void)epoch;
  (void)arg;
  tm_request_validation();
}

/* Strategy thrifty: a pool ran dry inside a transaction (txmem.h, "Refill"). A revocable
 * attempt aborts with cause alloc_refill and restarts after the refill (tm_runtime.c); an
 * irrevocable one cannot, and txmem refills in place. */
static void refill_or_return(size_t size, void *arg) {
  (void)arg;
  tm_tx *tx = tm_self;
  if (!tx || tx->depth == 0 || tx->irrevocable) return;
  tm_abort_refill(tx, size);
}

/* Installed before main, so no limbo can grow (and no pool run dry in a transaction) before
 * the hooks are in place. */
__attribute__((constructor)) static void tm_alloc_subscribe(void) {
  txmem_set_stale_hook(validate_stale_transactions, NULL);
  txmem_set_refill_hook(refill_or_return, NULL);
}

void *tm_malloc(size_t size) {
  void *p = txmem_malloc(size);
  if (TM_UNLIKELY(tm_syncchar_enabled())) tm_syncchar_alloc(p, size, __builtin_return_address(0));
  return p;
}

void tm_free(void *ptr) {
  if (TM_UNLIKELY(tm_syncchar_enabled())) tm_syncchar_free(ptr);
  txmem_free(ptr);
}
