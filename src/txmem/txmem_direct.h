/* The txalloc strategy's shortcuts into the allocator, through the narrow interface the
 * allocator offers (alloc/alloc_direct.h; this layer sees nothing else of src/alloc):
 *
 *   txmem_direct_take      the allocator's malloc fast path inline, spaced by the TM's
 *                          stripe (txa_direct_take_spaced; txmem_placement.c).
 *   txmem_direct_give_back the owner-side free fast path (txa_direct_give_back) for an
 *                          object txmem KNOWS is live and small: the newest entry of the
 *                          current level's undo log, i.e. allocated by this thread in this
 *                          transaction and not freed since.
 *   txmem_direct_reserve   the transactional run's objects (txmem_run.c): taken like
 *                          txmem_direct_take's, but counted as allocations only while a
 *                          transaction has them out (txmem_direct_count_allocs/frees),
 *                          and given back uncounted (txmem_direct_unreserve).
 *   txmem_direct_usable    txalloc_owner_of and txalloc_usable_size of an object freed by a
 *                          committed transaction, with one region-map lookup instead of
 *                          two (txmem_backend_usable; the limbo keeps the owner for the
 *                          release, txmem_backend_release_as); txmem_direct_usable_block,
 *                          its small/medium case alone, without any call (the commit's
 *                          frameless path, txmem_epoch.c).
 *
 * The allocator's own bookkeeping (per-class counters, `used`, the empty-block release) is
 * kept by its operations exactly as by its fast paths. */
#ifndef TXALLOC_TXMEM_DIRECT_H
#define TXALLOC_TXMEM_DIRECT_H

#include <malloc.h>

#include "alloc/alloc_direct.h"
#include "thrifty/thrifty.h"
#include "txalloc/txalloc.h"
#include "txmem/txmem_internal.h"

#define TXMEM_DIRECT_SMALL_MAX TXA_DIRECT_SMALL_MAX

static inline void *txmem_direct_take(size_t size) { return txa_direct_take_spaced(size); }

/* pre: p is a live object of a request of size <= TXMEM_DIRECT_SMALL_MAX bytes that this
 * thread allocated with the txalloc strategy (see above). */
static inline void txmem_direct_give_back(void *p) { txa_direct_give_back(p); }

/* The run's reservations (alloc_direct.h, "Reservations"). */
static inline unsigned txmem_direct_class(size_t size) { return txa_direct_spaced_class(size); }
static inline unsigned txmem_direct_reserve(unsigned c, void **out, unsigned n) {
  return txa_direct_reserve(c, out, n);
}
static inline void txmem_direct_count_allocs(unsigned c, uint64_t n) {
  txa_direct_count_allocs(c, n);
}
static inline void txmem_direct_count_frees(unsigned c, uint64_t n) {
  txa_direct_count_frees(c, n);
}
static inline void txmem_direct_unreserve(void *p, unsigned c) { txa_direct_unreserve(p, c); }

static inline bool txmem_direct_usable(const void *p, size_t *usable) {
  return txa_direct_usable(p, usable);
}

/* txmem_direct_usable's common case alone, with no call on any path: p in a chunk of
 * txalloc's small or medium blocks gives TXMEM_REL_SMALL or TXMEM_REL_MEDIUM (its release,
 * txmem_release_limbo), with *usable as txmem_direct_usable gives it; anything else (large,
 * foreign, reserved, metadata) gives TXMEM_REL_FOREIGN, and the caller asks
 * txmem_backend_usable. */
static inline unsigned txmem_direct_usable_block(const void *p, size_t *usable) {
  uintptr_t a = (uintptr_t)p;
  unsigned kind = txa_kind_of(a);
  if (TXMEM_UNLIKELY(kind != TXA_KIND_SMALL && kind != TXA_KIND_MEDIUM)) return TXMEM_REL_FOREIGN;
  *usable = txa_direct_block_usable(a, kind);
  return kind == TXA_KIND_SMALL ? TXMEM_REL_SMALL : TXMEM_REL_MEDIUM;
}

/* The owner-side free of a limbo entry in a txalloc chunk of known kind; false: declined. */
static inline bool txmem_direct_release_block(void *p, unsigned release) {
  /* One copy per kind: the span's size and mask become constants. */
  return release == TXMEM_REL_SMALL ? txa_free_owned(p, TXA_KIND_SMALL)
                                    : txa_free_owned(p, TXA_KIND_MEDIUM);
}

/* A freed object's usable size (for the statistics), and in *txalloc whether it goes back
 * to txalloc_free: strategy txalloc and the pointer in the allocator's address space, even
 * when it starts no object there (size 0; txalloc_free reports it). One lookup; inline in
 * the commit's loop (txmem_epoch.c). */
static inline size_t txmem_backend_usable(const void *ptr, bool *txalloc) {
  size_t usable;
  if (TXMEM_LIKELY(txmem_cfg.strategy == TXMEM_TXALLOC) && txmem_direct_usable(ptr, &usable)) {
    *txalloc = true;
    return usable;
  }
  *txalloc = false;
  if (txmem_cfg.strategy == TXMEM_THRIFTY) return thrifty_usable_size(ptr);
  return malloc_usable_size((void *)ptr);
}

/* The release of an object whose owner txmem_backend_usable gave: no second lookup. */
static inline void txmem_backend_release_as(txmem_thread *t, void *ptr, bool txalloc) {
  if (TXMEM_LIKELY(txalloc))
    txalloc_free(ptr);
  else
    txmem_backend_release_foreign(t, ptr);
}

/* The release of a limbo entry (TXMEM_REL_*). */
static inline void txmem_release_limbo(txmem_thread *t, void *ptr, unsigned release) {
  if (TXMEM_LIKELY(release >= TXMEM_REL_SMALL) &&
      TXMEM_LIKELY(txmem_direct_release_block(ptr, release)))
    return;
  txmem_backend_release_as(t, ptr, release != TXMEM_REL_FOREIGN);
}

#endif
