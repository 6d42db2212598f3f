/* The allocator under the transactional layer, per strategy:
 *   wrap        the process's malloc/free (whatever LD_PRELOAD put there);
 *   wrap-cache  the same, plus a thread cache that keeps objects released by aborts and by
 *               committed (safe) frees for the thread's next transactional allocations:
 *               64 classes of 16 bytes (usable size; the last class takes 1-2 KiB), 64
 *               objects each, LIFO;
 *   txalloc     txalloc_malloc/txalloc_free (deferred frees of foreign objects: free); a
 *               committed free looks its pointer up once (txmem_direct_usable);
 *   thrifty     thrifty_pool_take/thrifty_free, the refill through the runtime
 *               (txmem_thrifty.c). */
#include <malloc.h>
#include <stdlib.h>

#include "thrifty/thrifty.h"
#include "txalloc/txalloc.h"
#include "txmem/txmem_direct.h"
#include "txmem/txmem_internal.h"

/* Class of an object whose usable size is `usable`: every object in class k has at least
 * 16 (k + 1) usable bytes. */
static inline int cache_class_of_usable(size_t usable) {
  if (usable < 16 || usable > 2 * 16 * TXMEM_CACHE_CLASSES) return -1;
  size_t k = usable / 16 - 1;
  return k < TXMEM_CACHE_CLASSES ? (int)k : TXMEM_CACHE_CLASSES - 1;
}

/* Class whose objects all fit a request of `size` bytes. */
static inline int cache_class_for_request(size_t size) {
  size_t k = (size ? size + 15 : 16) / 16 - 1;
  return k < TXMEM_CACHE_CLASSES ? (int)k : -1;
}

static void cache_put(txmem_thread *t, void *ptr) {
  int k = cache_class_of_usable(malloc_usable_size(ptr));
  if (k >= 0 && !t->cache) {
    size_t cap = 0;
    t->cache = txmem_meta_grow(NULL, &cap, sizeof(void *), TXMEM_CACHE_CLASSES * TXMEM_CACHE_DEPTH);
  }
  if (k < 0 || t->cache_count[k] == TXMEM_CACHE_DEPTH) {
    free(ptr);
    return;
  }
  t->cache[k * TXMEM_CACHE_DEPTH + t->cache_count[k]++] = ptr;
}

void txmem_cache_flush(txmem_thread *t) {
  if (!t->cache) return;
  for (int k = 0; k < TXMEM_CACHE_CLASSES; k++) {
    while (t->cache_count[k]) free(t->cache[k * TXMEM_CACHE_DEPTH + --t->cache_count[k]]);
  }
}

void *txmem_backend_malloc(txmem_thread *t, size_t size) {
  switch (txmem_cfg.strategy) {
  case TXMEM_TXALLOC: return txa_spaced_malloc(size);
  case TXMEM_THRIFTY: return txmem_thrifty_malloc(size);
  case TXMEM_WRAP_CACHE: {
    int k = cache_class_for_request(size);
    if (k >= 0 && t->cache && t->cache_count[k]) {
      txmem_hot_count(t, TXMEM_HOT_cache_hits, 1);
      return t->cache[k * TXMEM_CACHE_DEPTH + --t->cache_count[k]];
    }
    return malloc(size);
  }
  default: return malloc(size);
  }
}

/* txalloc strategy: a speculative free may name an object of the process's malloc (made
 * before txalloc served the program, or by a library): it goes back where it came from. */
void txmem_backend_release(txmem_thread *t, void *ptr) {
  txmem_backend_release_as(
      t, ptr, txmem_cfg.strategy == TXMEM_TXALLOC && txalloc_owner_of(ptr) != TXALLOC_NOT_OURS);
}

void txmem_backend_release_foreign(txmem_thread *t, void *ptr) {
  if (txmem_cfg.strategy == TXMEM_WRAP_CACHE)
    cache_put(t, ptr);
  else if (txmem_cfg.strategy == TXMEM_THRIFTY)
    thrifty_free(ptr);
  else
    free(ptr);
}
