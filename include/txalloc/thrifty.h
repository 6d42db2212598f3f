/* thrifty: a bounded allocator that never calls the OS after its start (Carle et al.,
 * CASES 2016; docs/thrifty.md). One heap of TXALLOC_THRIFTY_HEAP_MB, mapped once at the
 * first use; each thread allocates first fit from a private pool carved from it
 * (TXALLOC_THRIFTY_POOL_KB at first), and a pool that cannot serve a request is refilled
 * from the heap: the rest of the pool goes back, and a new pool of max(pool size,
 * 2 x request) comes out. A free puts the object into the freeing thread's pool.
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
  X(enomem, "allocations that failed with ENOMEM")
#define THRIFTY_STATS_GAUGES(X)                                                                    \
  X(heap_bytes, "size of the heap")                                                                \
  X(heap_free_bytes, "bytes free in the heap, outside every pool")                                 \
  X(pool_bytes, "bytes free in the threads' pools")                                                \
  X(allocated_bytes, "pressure: bytes of objects allocated and not freed")                         \
  X(allocated_peak, "highest pressure so far (or since thrifty_stats_reset_peak)")                 \
  X(allocated_objects, "objects allocated and not freed")

typedef struct thrifty_stats {
#define THRIFTY_STATS_FIELD_(name, doc) uint64_t name;
  THRIFTY_STATS_COUNTERS(THRIFTY_STATS_FIELD_)
  THRIFTY_STATS_GAUGES(THRIFTY_STATS_FIELD_)
#undef THRIFTY_STATS_FIELD_
} thrifty_stats;
TXALLOC_API void thrifty_stats_get(thrifty_stats *out);
/* The peak starts again from the present pressure (a benchmark's measured phase). */
TXALLOC_API void thrifty_stats_reset_peak(void);
/* One JSON object (no newline) of every counter and gauge; never allocates. */
TXALLOC_API void thrifty_stats_print_json(int fd);

#ifdef __cplusplus
}
#endif
#endif
