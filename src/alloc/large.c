/* Large objects (above the largest size class): one mapping each, of whole granules so
 * that the region map classifies every address of it, with a 64-byte header just before
 * the object. The object starts `align` bytes (at least 64) into the mapping; the mapping
 * is aligned to max(granule, align), so any power-of-two alignment works.
 *
 * Freed mappings go to a small cache (option large_cache_mb) so that a program that
 * repeatedly allocates and frees large buffers does not call mmap/munmap each time;
 * entries idle longer than 4 x decommit_delay_ms + 1 s are unmapped at the next cache
 * operation, and txalloc_collect() empties the cache. A cached mapping keeps its header
 * marked freed, so a second free of the object is reported as a double free; once a
 * mapping is unmapped its granules read "not ours". */
#include <errno.h>
#include <string.h>

#include "alloc/internal.h"

#define LARGE_MAGIC UINT64_C(0x7478616c6c6f634c)
#define CACHE_SLOTS 32
#define MAX_LARGE_SIZE ((size_t)1 << 46)
#define MAX_ALIGN ((size_t)1 << 40)

enum { LARGE_LIVE = 1, LARGE_FREED = 2 };

typedef struct large_header {
  uint64_t magic;  /* LARGE_MAGIC ^ object address */
  uintptr_t base;  /* the mapping */
  size_t map_size; /* its length, whole granules */
  size_t size;     /* bytes asked for */
  _Atomic(uint32_t) state;
} large_header;
_Static_assert(sizeof(large_header) <= TXA_LARGE_HEADER, "large header too big");

typedef struct cache_entry {
  uintptr_t base;
  size_t size;
  uint64_t when_ms;
} cache_entry;

txa_lock txa_large_lock;
static cache_entry cache[CACHE_SLOTS]; /* guarded by txa_large_lock */
static unsigned cache_count;
static size_t cache_bytes;

static size_t round_granule(size_t x) { return (x + TXA_GRANULE - 1) & ~(TXA_GRANULE - 1); }

static void unmap_mapping(uintptr_t base, size_t size) {
  txa_map_set(base, size, TXA_KIND_NONE);
  txa_os_unmap((void *)base, size);
  txa_committed_add(-(int64_t)size);
  TXA_GCOUNT(os_unmaps, 1);
}

static void cache_remove_at(unsigned i) {
  cache_bytes -= cache[i].size;
  atomic_fetch_sub_explicit(&txa_large_cached, (int64_t)cache[i].size, memory_order_relaxed);
  cache[i] = cache[--cache_count];
}

/* Removes expired entries into victims; pre: lock held. Returns the number of victims. */
static unsigned cache_expire(uint64_t now, cache_entry *victims, unsigned n) {
  uint64_t expiry = 4 * txa_g.decommit_delay_ms + 1000;
  for (unsigned i = 0; i < cache_count;) {
    if (now - cache[i].when_ms >= expiry) {
      victims[n++] = cache[i];
      cache_remove_at(i);
    } else {
      i++;
    }
  }
  return n;
}

static void release_mapping(uintptr_t base, size_t size) {
  if (size > txa_g.large_cache_max) {
    unmap_mapping(base, size);
    return;
  }
  cache_entry victims[CACHE_SLOTS + 1];
  uint64_t now = txa_os_now_ms();
  txa_lock_acquire(&txa_large_lock);
  unsigned nv = cache_expire(now, victims, 0);
  while (cache_count &&
         (cache_count == CACHE_SLOTS || cache_bytes + size > txa_g.large_cache_max)) {
    unsigned oldest = 0;
    for (unsigned i = 1; i < cache_count; i++)
      if (cache[i].when_ms < cache[oldest].when_ms) oldest = i;
    victims[nv++] = cache[oldest];
    cache_remove_at(oldest);
  }
  cache[cache_count++] = (cache_entry){base, size, now};
  cache_bytes += size;
  atomic_fetch_add_explicit(&txa_large_cached, (int64_t)size, memory_order_relaxed);
  txa_lock_release(&txa_large_lock);
  for (unsigned i = 0; i < nv; i++) unmap_mapping(victims[i].base, victims[i].size);
}

/* A cached mapping of at least `need` bytes (at most twice as big) aligned to `align`. */
static bool cache_take(size_t need, size_t align, uintptr_t *base, size_t *size) {
  bool found = false;
  txa_lock_acquire(&txa_large_lock);
  unsigned best = CACHE_SLOTS;
  for (unsigned i = 0; i < cache_count; i++) {
    if (cache[i].size < need || cache[i].size > 2 * need || cache[i].base % align) continue;
    if (best == CACHE_SLOTS || cache[i].size < cache[best].size) best = i;
  }
  if (best != CACHE_SLOTS) {
    *base = cache[best].base;
    *size = cache[best].size;
    cache_remove_at(best);
    found = true;
  }
  txa_lock_release(&txa_large_lock);
  return found;
}

void *txa_large_alloc(size_t size, size_t align, bool zero) {
  if (align < TXA_LARGE_HEADER) align = TXA_LARGE_HEADER;
  if (size > MAX_LARGE_SIZE || align > MAX_ALIGN) {
    errno = ENOMEM;
    return NULL;
  }
  size_t need = round_granule(align + (size ? size : 1));
  size_t map_align = align > TXA_GRANULE ? align : TXA_GRANULE;
  uintptr_t base;
  size_t map_size;
  bool cached = txa_g.large_cache_max && cache_take(need, map_align, &base, &map_size);
  if (cached) {
    TXA_GCOUNT(large_cache_hits, 1);
  } else {
    void *m = txa_os_map(need, map_align);
    if (!m) {
      errno = ENOMEM;
      return NULL;
    }
    base = (uintptr_t)m;
    map_size = need;
    if (!txa_map_set(base, map_size, TXA_KIND_LARGE)) {
      txa_map_set(base, map_size, TXA_KIND_NONE);
      txa_os_unmap(m, map_size);
      errno = ENOMEM;
      return NULL;
    }
    TXA_GCOUNT(os_maps, 1);
    txa_committed_add((int64_t)map_size);
  }
  char *p = (char *)base + align;
  large_header *h = (large_header *)(p - TXA_LARGE_HEADER);
  h->magic = LARGE_MAGIC ^ (uintptr_t)p;
  h->base = base;
  h->map_size = map_size;
  h->size = size;
  atomic_store_explicit(&h->state, LARGE_LIVE, memory_order_relaxed);
  if (zero && cached) memset(p, 0, txa_large_usable(p));
  TXA_GCOUNT(large_mallocs, 1);
  TXA_GCOUNT(mallocs, 1);
  atomic_fetch_add_explicit(&txa_large_live, (int64_t)size, memory_order_relaxed);
  return p;
}

/* The header of the large object starting at p, or NULL when p is not such a start. */
static large_header *header_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (a % TXA_LARGE_HEADER != 0 || txa_kind_of(a - TXA_LARGE_HEADER) != TXA_KIND_LARGE) return NULL;
  large_header *h = (large_header *)(a - TXA_LARGE_HEADER);
  return h->magic == (LARGE_MAGIC ^ a) ? h : NULL;
}

void txa_large_free(void *p, const char *op) {
  large_header *h = header_of(p);
  if (!h) {
    txa_error(TXALLOC_ERROR_INVALID_FREE, p,
              "%s(%p): invalid pointer: inside a large-object mapping but not the start of a "
              "large object (interior pointer?)",
              op, p);
    return;
  }
  uint32_t was = atomic_exchange_explicit(&h->state, LARGE_FREED, memory_order_relaxed);
  if (was != LARGE_LIVE) {
    txa_error(TXALLOC_ERROR_DOUBLE_FREE, p,
              "%s(%p): double free: the large object (%zu bytes) was already freed", op, p,
              h->size);
    return;
  }
  TXA_GCOUNT(frees, 1);
  atomic_fetch_sub_explicit(&txa_large_live, (int64_t)h->size, memory_order_relaxed);
  release_mapping(h->base, h->map_size);
}

size_t txa_large_usable(const void *p) {
  large_header *h = header_of(p);
  if (!h || atomic_load_explicit(&h->state, memory_order_relaxed) != LARGE_LIVE) return 0;
  /* The size asked for rounded up to pages (the rest of the mapping is kept untouched). */
  size_t offset = (uintptr_t)p - h->base;
  size_t end = (offset + (h->size ? h->size : 1) + TXA_OS_PAGE - 1) & ~(TXA_OS_PAGE - 1);
  return end - offset;
}

void *txa_large_realloc_in_place(void *p, size_t size) {
  large_header *h = header_of(p);
  if (!h || size > MAX_LARGE_SIZE) return NULL;
  size_t offset = (uintptr_t)p - h->base;
  size_t need = round_granule(offset + size);
  if (need <= h->map_size) {
    if (need < h->map_size / 2) { /* give the unused tail back */
      unmap_mapping(h->base + need, h->map_size - need);
      h->map_size = need;
    }
  } else if (txa_os_grow_in_place((void *)h->base, h->map_size, need)) {
    if (!txa_map_set(h->base + h->map_size, need - h->map_size, TXA_KIND_LARGE)) {
      txa_map_set(h->base + h->map_size, need - h->map_size, TXA_KIND_NONE);
      txa_os_unmap((void *)(h->base + h->map_size), need - h->map_size);
      return NULL;
    }
    txa_committed_add((int64_t)(need - h->map_size));
    h->map_size = need;
  } else {
    return NULL;
  }
  atomic_fetch_add_explicit(&txa_large_live, (int64_t)size - (int64_t)h->size,
                            memory_order_relaxed);
  h->size = size;
  return p;
}

void txa_large_cache_flush(void) {
  cache_entry victims[CACHE_SLOTS];
  txa_lock_acquire(&txa_large_lock);
  unsigned n = cache_count;
  for (unsigned i = 0; i < n; i++) victims[i] = cache[i];
  while (cache_count) cache_remove_at(0);
  txa_lock_release(&txa_large_lock);
  for (unsigned i = 0; i < n; i++) unmap_mapping(victims[i].base, victims[i].size);
}
