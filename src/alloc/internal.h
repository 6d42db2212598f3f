/* The allocator's internal interface: the functions its files share. Types, glossary and
 * invariants: alloc/layout.h; inline fast-path operations: alloc/alloc_direct.h. */
#ifndef TXALLOC_ALLOC_INTERNAL_H
#define TXALLOC_ALLOC_INTERNAL_H

#include "alloc/alloc_direct.h"
#include "alloc/alloc_options.h"
#include "os/os_mem.h"

/* ---- Size classes (size_class.c) ---- */
/* Fills the class table (the one function a placement policy replaces). */
void txa_classes_init(void);
/* The smallest class of at least `size` bytes whose objects are all aligned to `align`
 * (aligned-only classes included); txa_class_count when there is none. */
unsigned txa_aligned_class(size_t size, size_t align);
/* malloc (zero: calloc) from class c itself, whatever the size lookup would choose. */
void *txa_class_malloc(unsigned c, bool zero);

/* ---- Stripe-spaced class tables (stripe_class.c) ---- */
/* Applies option stripe to txa_class_by_16 and starts txa_spaced_class_by_16 from it. */
void txa_stripe_init(void);
/* Fills `table` (shaped as txa_class_by_16) with, per request, the smallest small class
 * whose size and alignment are multiples of `stripe` (a power of two; <= 16: the plain
 * classes). False, leaving the table unchanged, when some request has no such class. */
bool txa_stripe_table_build(uint8_t *table, size_t stripe);

/* ---- Region map (region.c) ---- */
/* Marks the granules of [start, start+size) as `kind`. False when a leaf could not be
 * mapped (out of memory); marking as TXA_KIND_NONE never fails. */
bool txa_map_set(uintptr_t start, size_t size, unsigned kind);

/* Carves a fresh block of the given span kind (SMALL or MEDIUM); NULL when the OS refuses.
 * Fresh memory reads as zero. */
void *txa_region_fresh_block(unsigned kind);
/* Metadata memory (zeroed, never freed). */
void *txa_region_meta(size_t size);
/* A whole committed granule of `kind` (zeroed); NULL when the OS refuses. */
void *txa_region_chunk(unsigned kind);

/* ---- Block store (block_store.c) ---- */
void txa_store_push_empty(txa_block *b);
/* An empty block of span kind `kind` (NULL if none): committed ones first. */
txa_block *txa_store_pop_empty(unsigned kind);
txa_block *txa_store_pop_committed(unsigned kind); /* an empty block still committed */
/* A decommitted empty block: all of it reads as zero (only its span_kind is set). */
txa_block *txa_store_pop_clean(unsigned kind);
void txa_store_push_abandoned(txa_block *b);
txa_block *txa_store_pop_abandoned(unsigned class_id);
/* Decommits empty blocks that waited longer than the delay or exceed the threshold;
 * `force`: all of them. */
void txa_store_purge(bool force);
/* Runs a purge when a tick is due or the threshold is exceeded (cheap otherwise). */
void txa_store_maybe_purge(void);
/* Adopts every abandoned block, frees the empty ones, pushes the rest back (collect). */
void txa_store_reclaim_abandoned(void);

/* ---- A heap's cache of empty small blocks (empty_cache.c) ---- */
/* Keeps b, which h's own free emptied (owner NULL, out of its ring); false when the cache
 * is full, and b is still the caller's. */
bool txa_empty_cache_put(txa_heap *h, txa_block *b);
txa_block *txa_empty_cache_take(txa_heap *h); /* one of h's, or NULL */
/* One from another heap's cache (only those whose lock is free), or NULL. */
txa_block *txa_empty_cache_steal(txa_heap *self);
void txa_empty_cache_flush(txa_heap *h); /* h's blocks to the store */
/* Purge tick (pre: txa_purge_lock held): hands the caches of heaps that took none of their
 * blocks since the previous tick to the store; `force`: every cache. */
void txa_empty_caches_age(bool force);
/* Bytes the caches may hold (at least what they hold), for the decommit threshold. */
int64_t txa_empty_cache_reserved_bytes(void);

/* ---- Thread heaps (heap.c) ---- */
txa_heap *txa_heap_get_slow(void); /* creates the calling thread's heap (or NULL) */
void *txa_heap_alloc_slow(txa_heap *h, unsigned c); /* refill the bin, then allocate */
void txa_heap_abandon(txa_heap *h);
void txa_heap_tls_destructor(void *arg); /* pthread key destructor */
void txa_heap_trim(txa_heap *h);         /* return empty non-current blocks to the store */
/* After a remote free made b's public list hold every object out of it (count), while b is
 * not its bin's current block: offers b to its owner for release (heap.c). */
void txa_heap_offer_release(txa_block *b);
/* Pushes p onto b's public list (key: b's). */
static inline __attribute__((always_inline)) void txa_public_push(txa_block *b, void *p,
                                                                  uintptr_t key) {
  uint64_t old = atomic_load_explicit(&b->public_free, memory_order_relaxed);
  do {
    *(uintptr_t *)p = txa_encode(txa_public_head(old), key);
  } while (!atomic_compare_exchange_weak_explicit(&b->public_free, &old,
                                                  txa_public_pack(p, txa_public_count(old) + 1),
                                                  memory_order_release, memory_order_relaxed));
  /* Every object out of a block that is not its bin's current one is now on the public
   * list: offer it to its owner for release, which may be idle (heap.c). Reading `used`
   * (the owner's line) only for non-current blocks keeps the owner's hot line unshared. */
  if (!atomic_load_explicit(&b->current_hint, memory_order_relaxed) &&
      txa_public_count(old) + 1 == txa_used_acquire(b))
    txa_heap_offer_release(b);
}

/* ---- Foreign objects (foreign.c) ---- */
void txa_foreign_reset(txa_heap *h);            /* empty lists, starting caps (heap creation) */
void txa_foreign_flush(txa_heap *h);            /* every list to its blocks' public lists */
void txa_foreign_grow(txa_heap *h, unsigned c); /* class c's list ran dry: double its cap */

/* Takes (fork_prepare) and releases (after fork) every heap's ring lock;
 * pre: txa_heap_lock held. */
void txa_heap_lock_rings(void);
void txa_heap_unlock_rings(void);
txa_heap *txa_heap_registry(void); /* registry head; needs no lock (heaps stay listed) */
bool txa_thread_is_exiting(void);  /* the thread's key destructor already ran */
/* Initialises block b (fresh or from the store) for class c, owned by h. */
void txa_block_init(txa_block *b, txa_heap *h, unsigned c, bool zero);
/* Moves the public list in front of the private list (one atomic exchange; the list is
 * walked only when the private list is not empty, to find its tail); returns the number
 * of objects moved. */
uint32_t txa_block_repatriate(txa_block *b);
/* Whether object p of block b (owned by the caller) was never handed out since the block's
 * initialisation: it lies in a bump area not yet reached (secure mode's check). */
bool txa_block_never_used(const txa_block *b, const void *p);

/* 0 none; (pid << 2) | 1 running; (pid << 2) | 2 ready but fork handlers being registered
 * (only the initialising thread proceeds); TXA_INIT_DONE (init.c). */
#define TXA_INIT_DONE 3
extern int txa_init_state;
void txa_init_slow(void);
static inline void txa_init(void) {
  if (TXA_UNLIKELY(__atomic_load_n(&txa_init_state, __ATOMIC_ACQUIRE) != TXA_INIT_DONE))
    txa_init_slow();
}

/* Process-wide counters for events off the thread heaps (large objects, OS calls) and for
 * exited heaps, updated atomically (slow paths only). */
extern _Atomic(uint64_t) txa_global_counters[TXA_COUNTERS];
#define TXA_GCOUNT(name, n)                                                                        \
  atomic_fetch_add_explicit(&txa_global_counters[TXA_C_##name], (n), memory_order_relaxed)
extern _Atomic(uint64_t) txa_global_cls[TXA_CLASSES][3];
extern _Atomic(int64_t) txa_committed, txa_reserved, txa_blocks_in_use, txa_blocks_in_store,
    txa_large_live, txa_large_cached;
extern _Atomic(uint64_t) txa_peak_committed;
void txa_committed_add(int64_t delta);
void txa_stats_fold_heap(txa_heap *h); /* exited heap's counters into the global ones */

/* ---- Large objects (large.c) ---- */
void *txa_large_alloc(size_t size, size_t align, bool zero);
void txa_large_free(void *p, const char *op); /* reports bad pointers */
/* Resizes live large object p to `size` bytes (> TXA_MEDIUM_MAX) without copying: in place,
 * into the cached span after it, or by moving its pages (mremap). The new address (p when it
 * stayed), or NULL when none of these works (the caller copies; p is unchanged). */
void *txa_large_resize(void *p, size_t size);
void txa_large_cache_flush(void);

/* ---- Runs (runs.c): malloc's requests in (TXA_RUNS_MIN, TXA_MEDIUM_MAX] ---- */
void txa_runs_init(void);                     /* reads the placement options */
void *txa_runs_alloc(size_t size, bool zero); /* zero: the whole usable size */
void txa_runs_free(void *p, const char *op);  /* reports bad pointers */
/* Resizes run object p to `size` bytes in place (shrinking, or growing into the free run
 * after it) when size is within the runs' sizes; p, or NULL when it does not (p is
 * unchanged). *old: p's usable size before, 0 when p starts no live object, which it
 * reports as realloc's bad pointer. */
void *txa_runs_resize(void *p, size_t size, size_t *old);
void txa_runs_cache_flush(txa_heap *h); /* frees the runs h's cache holds */
void txa_runs_collect(void);            /* decommits the chunks whose runs are all free */
void txa_runs_lock_all(void);           /* fork: every arena's lock */
void txa_runs_unlock_all(void);
/* Run bytes allocated [0] and freed [1] without a heap or by exited heaps (stats.c). */
extern _Atomic(uint64_t) txa_runs_bytes[2];

/* ---- Errors (error.c) ---- */
/* Reports a bad call through the hook; returns only when a user hook is installed. */
void txa_error(txalloc_error_kind kind, const void *ptr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Locks (fork.c): spin locks for slow paths, taken by the fork handlers. ---- */
void txa_lock_acquire(txa_lock *l);
static inline bool txa_lock_try(txa_lock *l) {
  int expected = 0;
  return atomic_load_explicit(&l->held, memory_order_seq_cst) == 0 &&
         atomic_compare_exchange_strong_explicit(&l->held, &expected, 1, memory_order_seq_cst,
                                                 memory_order_relaxed);
}
static inline void txa_lock_release(txa_lock *l) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
}
extern txa_lock txa_region_lock, txa_large_lock, txa_heap_lock, txa_purge_lock, txa_init_lock;
void txa_fork_register(void);

#endif
