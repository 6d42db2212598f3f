/* txalloc's allocator API. Every function carries the txalloc_ prefix and never replaces
 * the process's malloc: link libtxalloc.a to embed txalloc beside another allocator.
 * libtxalloc.so additionally defines malloc, free, ... (src/preload) with exactly these
 * semantics, for LD_PRELOAD or linking.
 *
 * Semantics are glibc's unless stated: malloc(0) returns a unique freeable pointer;
 * failure returns NULL with errno = ENOMEM; calloc and reallocarray detect overflow;
 * realloc(p, 0) frees p and returns NULL; every pointer is aligned to 16 bytes; aligned
 * variants accept every power-of-two alignment (posix_memalign returns EINVAL for an
 * alignment that is not a power of two multiple of sizeof(void *)). */
#ifndef TXALLOC_TXALLOC_H
#define TXALLOC_TXALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The allocation API ---- */
TXALLOC_API void *txalloc_malloc(size_t size);
TXALLOC_API void txalloc_free(void *ptr);
TXALLOC_API void *txalloc_calloc(size_t count, size_t size);
TXALLOC_API void *txalloc_realloc(void *ptr, size_t size);
TXALLOC_API void *txalloc_reallocarray(void *ptr, size_t count, size_t size);
TXALLOC_API int txalloc_posix_memalign(void **out, size_t alignment, size_t size);
TXALLOC_API void *txalloc_aligned_alloc(size_t alignment, size_t size);
TXALLOC_API void *txalloc_memalign(size_t alignment, size_t size);
TXALLOC_API void *txalloc_valloc(size_t size);
TXALLOC_API void *txalloc_pvalloc(size_t size);
/* Bytes usable at ptr (>= the size asked for); 0 for NULL. */
TXALLOC_API size_t txalloc_usable_size(const void *ptr);

/* ---- Ownership: which part of txalloc, if any, a pointer belongs to (O(1)). ---- */
typedef enum txalloc_owner {
  TXALLOC_NOT_OURS = 0, /* not inside any region txalloc reserved */
  TXALLOC_SMALL,        /* inside a small-object block (may be a free or interior address) */
  TXALLOC_LARGE,        /* inside a large object's span or mapping */
} txalloc_owner;
TXALLOC_API txalloc_owner txalloc_owner_of(const void *ptr);

/* ---- Maintenance ---- */
/* Returns every empty span to the OS now (decommit) and empties the large-object cache. */
TXALLOC_API void txalloc_collect(void);
/* Hands the calling thread's heap back (its blocks are abandoned to the block store);
 * called automatically at thread exit. Allocating afterwards starts a new heap. */
TXALLOC_API void txalloc_thread_exit(void);

/* ---- Errors: invalid or double free, realloc of a foreign pointer, heap corruption
 * found by a check. The default handler prints the message to stderr and aborts; a test
 * may install its own and continue (the bad call then does nothing). ---- */
typedef enum txalloc_error_kind {
  TXALLOC_ERROR_INVALID_FREE = 1, /* pointer not returned by txalloc (or interior) */
  TXALLOC_ERROR_DOUBLE_FREE,      /* object already free */
  TXALLOC_ERROR_CORRUPTION,       /* allocator metadata found inconsistent */
} txalloc_error_kind;
typedef void (*txalloc_error_fn)(txalloc_error_kind kind, const void *ptr, const char *message,
                                 void *arg);
/* Installs `fn` (NULL restores the default); returns the previous handler. */
TXALLOC_API txalloc_error_fn txalloc_set_error_hook(txalloc_error_fn fn, void *arg);

/* ---- Statistics, declared once. Counters only grow; gauges are current values.
 * Merged over all threads (exited threads included). ---- */
#define TXALLOC_STATS_COUNTERS(X)                                                                  \
  X(mallocs, "objects allocated (all entry points)")                                               \
  X(frees, "objects freed")                                                                        \
  X(remote_frees, "frees by a thread that does not own the object's block")                        \
  X(foreign_reuses, "mallocs served by objects of another thread's block that this one freed")     \
  X(large_mallocs, "allocations served by large spans or mappings")                                \
  X(public_repatriations, "public free lists taken back by their owner")                           \
  X(blocks_from_store, "blocks taken from the block store (empty or abandoned)")                   \
  X(blocks_to_store, "blocks returned to the block store")                                         \
  X(blocks_abandoned, "part-used blocks handed back at thread exit")                               \
  X(blocks_adopted, "abandoned blocks adopted by another thread")                                  \
  X(blocks_released_remote, "blocks emptied by other threads' frees, released for their owner")    \
  X(spans_decommitted, "spans whose memory was returned to the OS")                                \
  X(large_cache_hits, "large allocations served from the large-object cache")                      \
  X(os_maps, "mmap calls")                                                                         \
  X(os_unmaps, "munmap calls")                                                                     \
  X(errors, "invalid or double frees reported")
#define TXALLOC_STATS_GAUGES(X)                                                                    \
  X(live_bytes, "bytes in live objects (usable size)")                                             \
  X(committed_bytes, "memory committed from the OS")                                               \
  X(reserved_bytes, "virtual address space reserved")                                              \
  X(blocks_in_use, "blocks owned by thread heaps")                                                 \
  X(blocks_in_store, "blocks in the block store")                                                  \
  X(large_cache_bytes, "bytes held in the large-object cache")                                     \
  X(peak_committed_bytes, "highest committed_bytes so far")

typedef struct txalloc_stats {
#define TXALLOC_STATS_FIELD_(name, doc) uint64_t name;
  TXALLOC_STATS_COUNTERS(TXALLOC_STATS_FIELD_)
  TXALLOC_STATS_GAUGES(TXALLOC_STATS_FIELD_)
#undef TXALLOC_STATS_FIELD_
} txalloc_stats;
TXALLOC_API void txalloc_stats_get(txalloc_stats *out);
/* Per size class, merged over all threads: the class table (sizes ascending) and its
 * counters. Large objects are not in any class (see large_mallocs). */
typedef struct txalloc_class_stats {
  uint64_t size;         /* object size of the class (bytes) */
  uint64_t allocs;       /* objects allocated */
  uint64_t frees;        /* objects freed (local and remote) */
  uint64_t remote_frees; /* of which freed by a thread not owning the object's block */
} txalloc_class_stats;
/* Number of size classes. */
TXALLOC_API size_t txalloc_class_count(void);
/* Fills out[0 .. min(max, count)) and returns how many entries it wrote. */
TXALLOC_API size_t txalloc_class_stats_get(txalloc_class_stats *out, size_t max);
/* Writes the statistics as one JSON object (no newline) / as text, to the file
 * descriptor `fd`, without allocating. */
TXALLOC_API void txalloc_stats_print_json(int fd);
TXALLOC_API void txalloc_stats_print(int fd);

#ifdef __cplusplus
}
#endif
#endif
