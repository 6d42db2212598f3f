/* The transactional run (txalloc strategy): McRT-Malloc's bump-pointer idea for
 * transactional allocation (§4.1.2.1), on objects the allocator reserved for the thread.
 *
 * The run is an array of up to TXMEM_RUN_CAP objects of one request size, reserved from
 * the allocator's current block of that size's spaced class (txmem_direct.h: used by the
 * block, counted as allocations only while a transaction has them out). A transaction
 * allocates by bumping run_top; the objects of each open level are a contiguous slice
 * above its mark (I6, txmem_internal.h), so
 *   - a balanced free of the newest object is run_top - 1 (Figure 3: a compare and a
 *     store, no allocator call); of an older object of the innermost level, a swap with
 *     the newest first (the slice stays the level's set: order inside it does not matter);
 *   - an abort of level d resets run_top to d's mark: its objects are free again at once,
 *     with no allocator call and no log (the bump pointer reset of Figure 8, which a
 *     free list made costly in McRT: here freed objects never leave the run);
 *   - the top-level commit moves run_base up to run_top: the survivors run[run_base,
 *     run_top), already counted as allocations, are ordinary objects from then on, freed
 *     like any other (they left the run).
 * Objects that do not fit (another size, the run used up, medium and large requests) take
 * the undo log. A refill happens only while no run object is in flight (run_top ==
 * run_base), so no level's slice ever moves to another array; it gives the unused
 * reservations back and reserves run_want objects for the new size, a number that doubles
 * when a run is used up and restarts small when the size changes, so that transactions
 * alternating between sizes move few objects.
 *
 * Placement: the run's objects come from the spaced class in force at its refill; a change
 * of the conflict geometry bumps txmem_placement_gen, and a run of an older generation
 * stops serving (its next refill takes the new class). */
#include "txmem/txmem_run.h"

_Atomic uint32_t txmem_placement_gen;

#define RUN_WANT_MIN 2

/* Gives back the reserved objects run[from, run_len). */
static void run_give_back(txmem_thread *t, uint32_t from) {
  for (uint32_t i = from; i < t->run_len; i++) txmem_direct_unreserve(t->run[i], t->run_class);
  t->run_len = from;
}

/* Refills an idle run (run_top == run_base) for requests of `size` bytes; false when the
 * allocator reserved nothing (the run is then empty). */
static bool run_refill(txmem_thread *t, size_t size) {
  TXALLOC_ASSERT(t->run_top == t->run_base);
  uint32_t gen = atomic_load_explicit(&txmem_placement_gen, memory_order_relaxed);
  unsigned c = txmem_direct_class(size);
  bool same = size == t->run_size && gen == t->run_gen && c == t->run_class;
  /* used up: reserve more next time; another size: start small again */
  unsigned want = same ? t->run_want * 2u : RUN_WANT_MIN;
  if (want > TXMEM_RUN_CAP) want = TXMEM_RUN_CAP;
  if (want < RUN_WANT_MIN) want = RUN_WANT_MIN;
  run_give_back(t, t->run_top);
  uint32_t n = txmem_direct_reserve(c, t->run, want);
  /* Every open level's slice is empty (nothing in flight): all marks restart at 0. */
  for (unsigned d = 2; d <= t->depth; d++) t->levels[d].run_mark = 0;
  t->run_top = t->run_base = t->run_mark = 0;
  t->run_len = n;
  t->run_want = (uint16_t)want;
  t->run_gen = gen;
  t->run_class = (uint16_t)c;
  t->run_size = n ? size : 0;
  t->run_bucket = (uint8_t)txmem_profile_bucket(size);
  return n != 0;
}

void *txmem_run_malloc_miss(txmem_thread *t, size_t size) {
  if (t->txalloc && size != 0 && size <= TXMEM_DIRECT_SMALL_MAX && t->run_top == t->run_base &&
      run_refill(t, size))
    return txmem_run_take(t, size);
  return txmem_tx_malloc_logged(t, size);
}

/* Drops run[i] (an object of the innermost level's slice) by swapping it with the newest. */
static void run_drop_at(txmem_thread *t, uint32_t i) {
  uint32_t last = --t->run_top;
  void *p = t->run[i];
  t->run[i] = t->run[last];
  t->run[last] = p;
  txmem_run_count_balanced_free(t);
}

bool txmem_run_free_from(txmem_thread *t, const void *ptr, uint32_t mark) {
  for (uint32_t i = t->run_top; i-- > mark;) {
    if (t->run[i] == ptr) {
      run_drop_at(t, i);
      return true;
    }
  }
  return false;
}

void txmem_run_drop(txmem_thread *t) {
  TXALLOC_ASSERT(t->depth == 0 && t->run_top == t->run_base);
  run_give_back(t, t->run_top);
  t->run_top = t->run_base = t->run_mark = t->run_len = 0;
  t->run_size = 0;
  t->run_want = 0;
}
