/* thrifty: a bounded allocator that never calls the OS after its start (Carle et al.,
 * CASES 2016; docs/thrifty.md). One heap of TXALLOC_THRIFTY_HEAP_MB, mapped once at the
 * first use; each thread allocates first fit from a private pool carved from it
 * (TXALLOC_THRIFTY_POOL_KB at first), and a pool that cannot serve a request is refilled
 * from the heap: the rest of the pool goes back, and a new pool of max(pool size,
 * 2 x request) comes out. A free puts the object into the freeing thread's pool, or with
 * TXALLOC_THRIFTY_RETURN=owner back into the pool that served it (a lock-free stack its
 * owner drains on its next allocation).
 *
 * Transactions use it through txmem (TXALLOC_TXMEM=thrifty): a pool that runs dry inside a
 * transaction aborts it (cause alloc_refill), the runtime refills the pool outside it and
 * restarts it.
 *
 * Pressure (the paper's measure of memory use) is the bytes of the objects allocated and
 * not yet freed, headers included, pools excluded: allocated_bytes, and allocated_peak its
 * highest value. At any time heap_bytes = heap_free_bytes + pool_bytes + allocated_bytes. */
#ifndef TXALLOC_THRIFTY_H
#define TXALLOC_THRIFTY_H

#include <stddef.h>
#include <stdint.h>

#include "txalloc/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NULL with errno = ENOMEM when neither the pool nor the heap can serve the request. */
TXALLOC_API void *thrifty_malloc(size_t size);
/* ptr: NULL or an object of thrifty_malloc; anything else (or a double free) is reported on
 * stderr and aborts the process. */
TXALLOC_API void thrifty_free(void *ptr);
TXALLOC_API size_t thrifty_usable_size(const void *ptr);
/* Whether ptr lies in the heap (0 before the heap exists). */
TXALLOC_API int thrifty_owns(const void *ptr);
/* The calling thread's pool goes back to the heap (also run at thread exit). */
TXALLOC_API void thrifty_thread_exit(void);

/* ---- Statistics. Counters only grow; gauges are current values (bytes are block bytes,
 * 16-byte headers included). ---- */
#define THRIFTY_STATS_COUNTERS(X)                                                                  \
  X(mallocs, "objects allocated")                                                                  \
  X(frees, "objects freed")                                                                        \
  X(remote_frees, "frees of objects another thread's pool served")                                 \
  X(pool_fills, "first pools carved for threads")                                                  \
  X(refills, "pools refilled from the heap (the rest went back)")                                  \
  X(refill_failures, "refills the heap could not serve (the request failed with ENOMEM)")          \
  X(enomem, "allocations that failed with ENOMEM")                                                 \
  X(owner_returns, "remote frees pushed back to the pool that served them (owner variant)")        \
  X(retired_pools, "pools given back to the heap at their thread's exit")                          \
  X(retired_free_bytes, "sum over retired pools of their free bytes at retirement")                \
  X(retired_extents, "sum over retired pools of their free blocks at retirement")                  \
  X(retired_largest_bytes, "sum over retired pools of their largest free block at retirement")
#define THRIFTY_STATS_GAUGES(X)                                                                    \
  X(heap_bytes, "size of the heap")                                                                \
  X(heap_free_bytes, "bytes free in the heap, outside every pool")                                 \
  X(pool_bytes, "bytes free in the threads' pools")                                                \
  X(allocated_bytes, "pressure: bytes of objects allocated and not freed")                         \
  X(allocated_peak, "highest pressure so far (or since thrifty_stats_reset_peak)")                 \
  X(allocated_objects, "objects allocated and not freed")                                          \
  X(held_bytes, "bytes out of the heap: pools and objects (heap_bytes - heap_free_bytes)")         \
  X(held_peak, "highest held_bytes so far (or since thrifty_stats_reset_peak)")

typedef struct thrifty_stats {
#define THRIFTY_STATS_FIELD_(name, doc) uint64_t name;
  THRIFTY_STATS_COUNTERS(THRIFTY_STATS_FIELD_)
  THRIFTY_STATS_GAUGES(THRIFTY_STATS_FIELD_)
#undef THRIFTY_STATS_FIELD_
} thrifty_stats;
TXALLOC_API void thrifty_stats_get(thrifty_stats *out);
/* allocated_peak and held_peak start again from the present values (a benchmark's measured
 * phase). */
TXALLOC_API void thrifty_stats_reset_peak(void);

/* The calling thread's pool, after its pending returns are drained: what a retired pool
 * adds to the retired_* counters. */
typedef struct thrifty_pool_shape {
  uint64_t free_bytes; /* bytes free in the pool */
  uint64_t extents;    /* its free blocks (address-disjoint, never touching) */
  uint64_t largest;    /* its largest free block's bytes */
} thrifty_pool_shape;
TXALLOC_API void thrifty_pool_shape_get(thrifty_pool_shape *out);
/* One JSON object (no newline) of every counter and gauge; never allocates. */
TXALLOC_API void thrifty_stats_print_json(int fd);

#ifdef __cplusplus
}
#endif
#endif
