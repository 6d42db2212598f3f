/* The transactional run's inline steps (txmem_run.c), shared by txmem.c's fast paths and
 * the run's own slow paths, so that both count an allocation and a balanced free the same
 * way. */
#ifndef TXALLOC_TXMEM_RUN_H
#define TXALLOC_TXMEM_RUN_H

#include "txmem/txmem_direct.h"
#include "txmem/txmem_internal.h"

/* Takes the run's next object for a request of `size` (== run_size) bytes, counted like
 * every transactional allocation. pre: run_top < run_len. */
static inline void *txmem_run_take(txmem_thread *t, size_t size) {
  uint32_t top = t->run_top;
  t->run_top = top + 1;
  txmem_direct_count_allocs(t->run_class, 1);
  t->hot[TXMEM_HOT_tx_mallocs]++;
  t->hot[TXMEM_HOT_speculative_bytes] += size;
  t->prof.sizes[TXMEM_REGION_TX][t->run_bucket]++; /* txmem_profile_bucket(run_size) */
  return t->run[top];
}

/* Counts a run object that a balanced free gave back to the run. */
static inline void txmem_run_count_balanced_free(txmem_thread *t) {
  txmem_direct_count_frees(t->run_class, 1);
  t->hot[TXMEM_HOT_balanced_recycles]++;
  t->hot[TXMEM_HOT_balanced_bytes] += t->run_size;
}

#endif
