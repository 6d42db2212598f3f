/* The allocator's inline operations that the layers above may use (txmem's txalloc
 * strategy): take an object from the calling thread's bin, give one back, the usable size
 * and owner check of an address. The allocator's own fast paths use the same operations
 * (alloc.c). Nothing here calls into a transactional layer.
 *
 * Invariants the operations keep (alloc/layout.h): an object leaves the private list with
 * its first word zeroed; `used` counts objects out of the private list and bump area;
 * a block whose `used` drops to 0 goes back to the store unless it is its bin's current. */
#ifndef TXALLOC_ALLOC_DIRECT_H
#define TXALLOC_ALLOC_DIRECT_H

#include "alloc/layout.h"
#include "util/debug_assert.h"

/* Defined in heap.c and large.c; declared here for the inline operations below. */
void txa_heap_release_block(txa_heap *h, txa_block *b); /* empty non-current block */
size_t txa_large_usable(const void *p);                 /* 0 if p is not a live large object */
size_t txa_runs_usable(const void *p);                  /* 0 if p starts no live object of a run */

/* Takes one object from b's private list, else from its bump area; NULL when b is full.
 * Owner only. The object's first word (its old link) is zeroed so that only objects on a
 * free list carry a valid encoded link. `prefer_public`: return NULL instead of bumping
 * while objects wait on the public list, so that the caller (the slow path) reuses them
 * first; this keeps the touched part of a block small when other threads free into it. */
static inline void *txa_block_take_from(txa_block *b, bool prefer_public) {
  void *p = b->free;
  if (TXA_LIKELY(p != NULL)) {
    TXALLOC_ASSERT(txa_used(b) < b->capacity && txa_object_index(b, (uintptr_t)p) >= 0);
    void *next = txa_decode(*(uintptr_t *)p, b->key);
    b->free = next;
    __builtin_prefetch(next); /* the next malloc reads its link first */
    *(uintptr_t *)p = 0;
    txa_used_inc(b);
    return p;
  }
  if (b->bump != b->bump_end) {
    if (prefer_public &&
        TXA_UNLIKELY(atomic_load_explicit(&b->public_free, memory_order_relaxed) != 0))
      return NULL;
    p = b->bump;
    TXALLOC_ASSERT(txa_used(b) < b->capacity && txa_object_index(b, (uintptr_t)p) >= 0);
    b->bump += b->obj_size;
    txa_used_inc(b);
    return p;
  }
  return NULL;
}
static inline void *txa_block_take(txa_block *b) { return txa_block_take_from(b, true); }

static inline uint64_t txa_rd(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
/* Owner-only counter bump, no locked instruction: one add to memory; a relaxed load and
 * store under ThreadSanitizer, where statistics readers' loads are checked (TXA_OWNER_ATOMIC,
 * alloc/layout.h). */
static inline void txa_bump_counter(uint64_t *p, uint64_t n) {
#ifdef TXA_OWNER_ATOMIC
  __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
#else
  *p += n;
#endif
}
#define TXA_COUNT(h, name, n) txa_bump_counter(&(h)->counters[TXA_C_##name], (n))

/* The owner's free of object p of class c in block b, once the caller has established that
 * h owns b and p is a live object (public free, txmem's balanced free): link p into the
 * private list (txa_owner_push), count it, and hand the block back when it empties (unless
 * it is the bin's current block, which stays for the next allocation). */
static inline void txa_owner_push(txa_heap *h, txa_block *b, void *p, unsigned c) {
  TXALLOC_ASSERT(atomic_load_explicit(&b->owner, memory_order_relaxed) == h);
  TXALLOC_ASSERT(c == b->class_id && txa_used(b) > 0 && txa_object_index(b, (uintptr_t)p) >= 0);
  *(uintptr_t *)p = txa_encode(b->free, b->key);
  b->free = p;
  if (TXA_UNLIKELY(txa_used_dec(b) == 0) && b != h->current[c]) txa_heap_release_block(h, b);
}
static inline void txa_owner_free(txa_heap *h, txa_block *b, void *p, unsigned c) {
  txa_bump_counter(&h->cls.frees[c], 1);
  txa_owner_push(h, b, p, c);
}

/* A filter for the owner's free: false when word, the first word of an object of block b
 * (span kind `kind`), cannot be an encoded free-list link, i.e. when word ^ key is neither
 * NULL (the end of a list) nor an address in b. True also for a few live objects (word ^ key
 * below the span size): the checked path then decides exactly (alloc.c's looks_free). */
static inline bool txa_may_be_free(const txa_block *b, uintptr_t word, uintptr_t key,
                                   unsigned kind) {
  uintptr_t span_of_link = (word ^ key) & ~(uintptr_t)(txa_span_size(kind) - 1);
  return span_of_link == 0 || span_of_link == (uintptr_t)b;
}

/* txalloc_free's common case (alloc.c), shared with txmem's release of committed frees,
 * which knows the chunk kind from its own earlier lookup (a carved granule keeps its kind
 * for the life of the process: region.c never uncarves). pre: p lies in a chunk of span
 * kind `kind` (SMALL or MEDIUM). When p is an object start of a block the calling thread
 * owns and does not look free (and not in secure mode: txa_is_object_start then fails),
 * frees it and returns true.
 * Otherwise does nothing and returns false: txalloc_free's checked path must take p
 * (remote frees, bad and double frees, which it reports). txa_free_owned_by: the same once
 * the caller has found that heap h (not NULL) owns p's block b. The double-free filter runs
 * whether or not option free_check is on: it only sends p to the checked path, which
 * reports according to the option. */
static inline bool txa_free_owned_by(txa_heap *h, txa_block *b, void *p, unsigned kind) {
  TXALLOC_ASSERT(h != NULL && atomic_load_explicit(&b->owner, memory_order_relaxed) == h);
  if (TXA_UNLIKELY(!txa_is_object_start(b, (uintptr_t)p))) return false;
  uintptr_t key = b->key;
  if (TXA_UNLIKELY(txa_may_be_free(b, *(uintptr_t *)p, key, kind))) return false;
  TXALLOC_ASSERT(txa_object_index(b, (uintptr_t)p) >= 0);
  txa_owner_free(h, b, p, b->class_id);
  return true;
}
static inline bool txa_free_owned(void *p, unsigned kind) {
  txa_block *b = txa_block_of((uintptr_t)p, kind);
  txa_heap *h = txa_tls_heap;
  if (TXA_UNLIKELY(h == NULL || atomic_load_explicit(&b->owner, memory_order_relaxed) != h))
    return false;
  return txa_free_owned_by(h, b, p, kind);
}

/* ---- The operations for the layers above ---- */

/* Requests up to this size may be served by txa_direct_take_spaced. */
#define TXA_DIRECT_SMALL_MAX TXA_SMALL_MAX

/* ---- Stripe spacing (stripe_class.c) ----
 * Requests that a layer above wants spaced (txmem: objects of transactions) are served
 * from a second class table, txa_spaced_class_by_16: for stripe S, a class whose objects
 * start and end on S-byte boundaries, so that no two objects share a stripe. Without a
 * stripe it equals the plain table. */
extern uint8_t txa_spaced_class_by_16[TXA_SMALL_MAX / 16 + 1];

/* The spaced class of a request of `size` bytes. pre: size <= TXA_DIRECT_SMALL_MAX. */
static inline unsigned txa_direct_spaced_class(size_t size) {
  return __atomic_load_n(&txa_spaced_class_by_16[(size + 15) >> 4], __ATOMIC_RELAXED);
}

/* Spaces later spaced requests for stripes of `stripe` bytes (a power of two; 0: none),
 * or for the allocator's own option stripe when that is larger. False, changing nothing,
 * when the small classes cannot space that stripe (see txa_spacing_max). Initialises the
 * allocator. Any thread, any time: a request sees the old or the new class. */
bool txa_set_spacing(size_t stripe);
/* A TM runtime maps addresses onto lock entries that repeat every `period` bytes (0: they
 * never repeat). With option heap_colour at its default, a period of a block or more turns
 * on the heaps' colours for the blocks initialised from then on (heap.c), so that threads
 * do not take the same entries in lockstep. Initialises the allocator. Any thread. */
void txa_colour_for_period(uint64_t period);
bool txa_heap_colour(void);    /* whether blocks initialised now take their heap's colour */
size_t txa_spacing(void);      /* stripe of the spaced requests now (bytes, 0: none) */
size_t txa_alloc_stripe(void); /* option stripe in force (0: none) */
size_t txa_spacing_max(void);  /* the largest stripe txa_set_spacing accepts */

/* txalloc_malloc and txalloc_calloc (of `size` bytes) for a spaced request: the paths to
 * take when txa_direct_take_spaced declines (no heap yet, refill, larger requests). */
void *txa_spaced_malloc(size_t size);
void *txa_spaced_calloc(size_t size);

/* Take: alloc.c's malloc fast path inline, for a spaced request: pop the current block of
 * the calling thread's bin (private list, else bump area) for a small request, with the
 * per-class count. NULL sends the caller to txa_spaced_malloc, which handles everything
 * else (no heap yet, medium/large, refill). */
static inline void *txa_direct_take_spaced(size_t size) {
  txa_heap *h = txa_tls_heap;
  if (TXA_UNLIKELY(h == NULL || size > TXA_DIRECT_SMALL_MAX)) return NULL;
  unsigned c = txa_direct_spaced_class(size);
  void *p = txa_block_take(h->current[c]);
  if (TXA_UNLIKELY(p == NULL)) return NULL;
  txa_bump_counter(&h->cls.allocs[c], 1);
  return p;
}

/* Give back: the owner-side free fast path for an object the caller KNOWS is live and
 * small (it took it with txa_direct_take_spaced or txalloc_malloc and has not freed it since).
 * That knowledge replaces the region-map lookup, the object-start validation and the
 * double-free check. Ownership is still tested (one load): anything else goes to
 * txalloc_free.
 * pre: p is a live object of a request of size <= TXA_DIRECT_SMALL_MAX bytes. */
static inline void txa_direct_give_back(void *p) {
  txa_block *b = txa_block_of((uintptr_t)p, TXA_KIND_SMALL);
  txa_heap *h = txa_tls_heap;
  if (TXA_UNLIKELY(h == NULL || txa_g.secure ||
                   atomic_load_explicit(&b->owner, memory_order_relaxed) != h)) {
    txalloc_free(p);
    return;
  }
  txa_owner_free(h, b, p, b->class_id);
}

/* ---- Reservations: objects a layer above holds before it hands them out ----
 * A reserved object is taken from the calling thread's current block of class c like
 * txa_direct_take_spaced's (its block counts it as used, so it is never handed out
 * twice), but not counted as an allocation: the class statistics (and so live bytes)
 * see it only while the holder has it out, between txa_direct_count_allocs and
 * txa_direct_count_frees. One not out goes back with txa_direct_unreserve. */
extern _Atomic(uint64_t) txa_global_cls[TXA_CLASSES][3]; /* stats.c: exited heaps' counts */

/* Reserves up to n objects of class c into out[] and returns how many: fewer when the
 * current block has no more (the caller's ordinary path refills the bin), none when the
 * thread has no heap or in secure mode (its frees must go through txalloc_free). */
static inline unsigned txa_direct_reserve(unsigned c, void **out, unsigned n) {
  txa_heap *h = txa_tls_heap;
  if (TXA_UNLIKELY(h == NULL || txa_g.secure)) return 0;
  txa_block *b = h->current[c];
  unsigned k = 0;
  while (k < n) {
    void *p = txa_block_take(b);
    if (!p) break;
    out[k++] = p;
  }
  return k;
}

/* n reserved objects of class c were handed out (allocs), or came back to the holder
 * (frees). Without a heap (after its thread-exit abandonment) the global counts take them,
 * as they took the heap's. */
static inline void txa_direct_count_class(unsigned c, unsigned k, uint64_t n) {
  txa_heap *h = txa_tls_heap;
  if (TXA_LIKELY(h != NULL))
    txa_bump_counter(k == 0 ? &h->cls.allocs[c] : &h->cls.frees[c], n);
  else
    atomic_fetch_add_explicit(&txa_global_cls[c][k], n, memory_order_relaxed);
}
static inline void txa_direct_count_allocs(unsigned c, uint64_t n) {
  txa_direct_count_class(c, 0, n);
}
static inline void txa_direct_count_frees(unsigned c, uint64_t n) {
  txa_direct_count_class(c, 1, n);
}

/* Gives back reserved object p of class c that was never handed out. When the thread no
 * longer owns its block (its heap was abandoned at thread exit), p is counted as
 * allocated and goes through txalloc_free, a remote free like any other. */
static inline void txa_direct_unreserve(void *p, unsigned c) {
  txa_block *b = txa_block_of((uintptr_t)p, TXA_KIND_SMALL);
  txa_heap *h = txa_tls_heap;
  if (TXA_UNLIKELY(h == NULL || atomic_load_explicit(&b->owner, memory_order_relaxed) != h)) {
    txa_direct_count_allocs(c, 1);
    txalloc_free(p);
    return;
  }
  txa_owner_push(h, b, p, c); /* never counted as allocated: no free to count */
}

/* Usable size of the address a in a chunk of span kind `kind` (SMALL or MEDIUM): its
 * object's size, 0 when a starts no object. */
static inline size_t txa_direct_block_usable(uintptr_t a, unsigned kind) {
  const txa_block *b = txa_block_of(a, kind);
  return txa_object_index(b, a) >= 0 ? b->size : 0;
}

/* Owner check and usable size in one region-map lookup: true when p lies in txalloc's
 * address space (txalloc_owner_of(p) != TXALLOC_NOT_OURS), with *usable =
 * txalloc_usable_size(p) (0 when p starts no object there: a bad free, for txalloc_free
 * to report); false for a foreign pointer. Without the public calls' txa_init: before the
 * allocator's initialisation the region map is empty, so every pointer is foreign, as the
 * initialised map would say too. */
static inline bool txa_direct_usable(const void *p, size_t *usable) {
  uintptr_t a = (uintptr_t)p;
  unsigned kind = txa_kind_of(a);
  if (TXA_LIKELY(kind == TXA_KIND_SMALL || kind == TXA_KIND_MEDIUM)) {
    *usable = txa_direct_block_usable(a, kind);
    return true;
  }
  if (kind == TXA_KIND_NONE) return false;
  *usable = kind == TXA_KIND_LARGE  ? txa_large_usable(p)
            : kind == TXA_KIND_RUNS ? txa_runs_usable(p)
                                    : 0; /* else reserved or metadata */
  return true;
}

#endif
