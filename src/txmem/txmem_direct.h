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
 *   txmem_direct_usable    txalloc_owner_of and txalloc_usable_size of an object freed by a
 *                          committed transaction, with one region-map lookup instead of
 *                          two (txmem_backend_usable; the limbo keeps the owner for the
 *                          release, txmem_backend_release_as); txmem_direct_usable_block,
 *                          its small/medium case alone, without any call (the commit's
 *                          frameless path, txmem_epoch.c).
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

#include <malloc.h>

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

/* True when p lies in txalloc's address space (txalloc_owner_of(p) != TXALLOC_NOT_OURS),
 * with *usable = txalloc_usable_size(p): the object's size, 0 when p starts no object there
 * (a bad free, for txalloc_free to report). False for a foreign pointer. Without the
 * public calls' txa_init: before the allocator's initialisation the region map is empty,
 * so every pointer is foreign, as the initialised map would say too. */
/* The usable size of p in a chunk of span kind `kind` (SMALL or MEDIUM): its object's size,
 * 0 when p starts no object. */
static inline size_t txmem_block_usable(uintptr_t a, unsigned kind) {
  const txa_block *b = txa_block_of(a, kind);
  return txa_object_index(b, a) >= 0 ? b->size : 0;
}

static inline bool txmem_direct_usable(const void *p, size_t *usable) {
  uintptr_t a = (uintptr_t)p;
  unsigned kind = txa_kind_of(a);
  if (TXMEM_LIKELY(kind == TXA_KIND_SMALL || kind == TXA_KIND_MEDIUM)) {
    *usable = txmem_block_usable(a, kind);
    return true;
  }
  if (kind == TXA_KIND_NONE) return false;
  *usable = kind == TXA_KIND_LARGE ? txa_large_usable(p) : 0; /* else reserved or metadata */
  return true;
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
  *usable = txmem_block_usable(a, kind);
  return kind == TXA_KIND_SMALL ? TXMEM_REL_SMALL : TXMEM_REL_MEDIUM;
}

/* The owner-side free of a limbo entry in a txalloc chunk of known kind; false: declined. */
static inline bool txmem_direct_release_block(void *p, unsigned release) {
  /* One copy per kind: the span's size and mask become constants. */
  return release == TXMEM_REL_SMALL ? txa_free_owned(p, TXA_KIND_SMALL)
                                    : txa_free_owned(p, TXA_KIND_MEDIUM);
}
#else
#define TXMEM_DIRECT_SMALL_MAX ((size_t)0)
static inline void *txmem_direct_take(size_t size) {
  (void)size;
  return NULL;
}
static inline void txmem_direct_give_back(void *p) { txalloc_free(p); }
static inline bool txmem_direct_usable(const void *p, size_t *usable) {
  if (txalloc_owner_of(p) == TXALLOC_NOT_OURS) return false;
  *usable = txalloc_usable_size(p);
  return true;
}
static inline unsigned txmem_direct_usable_block(const void *p, size_t *usable) {
  (void)p;
  (void)usable;
  return TXMEM_REL_FOREIGN;
}
static inline bool txmem_direct_release_block(void *p, unsigned release) {
  (void)p;
  (void)release;
  return false;
}
#endif

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
