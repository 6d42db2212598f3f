/* The txalloc strategy's shortcuts into the allocator (src/alloc/internal.h, read-only for
 * this layer): the calling thread's bin, without the public entry points' call and checks.
 *
 *   txmem_direct_take      the allocator's malloc fast path (alloc.c class_alloc) inline:
 *                          pop the bin's current block (private list, else bump area) for a
 *                          small request; NULL sends the caller to txalloc_malloc, which
 *                          handles everything else (no heap yet, medium/large, refill).
 *   txmem_direct_give_back the owner-side free fast path (alloc.c txalloc_free) for an
 *                          object txmem KNOWS is live and small: the newest entry of the
 *                          current level's undo log, i.e. allocated by this thread in this
 *                          transaction and not freed since. That knowledge replaces the
 *                          region-map lookup (a small request lives in a 16 KiB block, found
 *                          by masking), the object-start validation and the double-free
 *                          check, which cannot fire on such an object. Ownership is still
 *                          tested (one load): anything unexpected goes to txalloc_free.
 *
 * Both keep the allocator's own bookkeeping (per-class alloc/free counters, `used`, the
 * empty-block release) exactly as its fast paths do: the free is the allocator's own
 * txa_owner_free, and the take is txa_block_take plus the per-class count, as in alloc.c's
 * class_alloc.
 *
 * Without src/alloc (a private build with a stand-in allocator) the shortcuts are the
 * public calls. */
#ifndef TXALLOC_TXMEM_DIRECT_H
#define TXALLOC_TXMEM_DIRECT_H

#include "txalloc/txalloc.h"
#include "txmem/txmem_internal.h"

#if __has_include("alloc/internal.h")
#include "alloc/internal.h"
#define TXMEM_DIRECT_SMALL_MAX TXA_SMALL_MAX

static inline void *txmem_direct_take(size_t size) {
  txa_heap *h = txa_tls_heap;
  if (TXMEM_UNLIKELY(h == NULL || size > TXA_SMALL_MAX)) return NULL;
  unsigned c = txa_size_class(size);
  void *p = txa_block_take(h->bins[c].current);
  if (TXMEM_UNLIKELY(p == NULL)) return NULL;
  txa_bump_counter(&h->cls[c].allocs, 1);
  return p;
}

/* pre: p is a live object of a request of size <= TXMEM_DIRECT_SMALL_MAX bytes that this
 * thread allocated with the txalloc strategy (see above). */
static inline void txmem_direct_give_back(void *p) {
  txa_block *b = txa_block_of((uintptr_t)p, TXA_KIND_SMALL);
  txa_heap *h = txa_tls_heap;
  if (TXMEM_UNLIKELY(h == NULL || txa_g.secure ||
                     atomic_load_explicit(&b->owner, memory_order_relaxed) != h)) {
    txalloc_free(p);
    return;
  }
  txa_owner_free(h, b, p, b->class_id);
}
#else
#define TXMEM_DIRECT_SMALL_MAX ((size_t)0)
static inline void *txmem_direct_take(size_t size) {
  (void)size;
  return NULL;
}
static inline void txmem_direct_give_back(void *p) { txalloc_free(p); }
#endif

#endif
