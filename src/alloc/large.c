/* Large objects (above the largest size class): one mapping each, of whole granules so
 * that the region map classifies every address of it, with a 64-byte header just before
 * the object. The object starts `align` bytes (at least 64) into the mapping; the mapping
 * is aligned to max(granule, align), so any power-of-two alignment up to 2^40 works.
 * Sizes above 2^46 and alignments above 2^40 fail with ENOMEM, so no rounding overflows.
 *
 * Freed mappings go to a cache of spans (whole granules, granule-aligned) so that a
 * program that allocates and frees large buffers neither calls mmap/munmap nor faults its
 * pages in again each time:
 *   - a freed mapping is merged with cached spans next to it;
 *   - a request takes the smallest span that holds it at its alignment; what is left
 *     before and after goes back as spans of its own (no system call);
 *   - when no span holds it, the largest span of at least half the request is grown, in
 *     place or moved by mremap to an aligned address, so its touched pages are reused;
 *   - the cache holds at most CACHE_SLOTS spans and max(large_cache_mb, half the
 *     peak of live large bytes over the last expiry period) bytes, the oldest going first
 *     (a merged span larger than that keeps its end and unmaps its start);
 *     spans idle longer than 4 x decommit_delay_ms + 1 s are unmapped at the next cache
 *     operation; txalloc_collect() empties it; large_cache_mb = 0 disables it.
 * Cached memory stays committed (no madvise): reuse soon is what the cache is for, and
 * idle memory leaves by unmapping.
 *
 * realloc: shrinking gives a tail of more than half the mapping to the cache; growing
 * takes the cached span right after the mapping, else grows it in place (mremap), else
 * moves it with its pages (mremap to an aligned reservation): contents are never copied.
 * The header moves with the mapping and is rewritten for the new address.
 *
 * Invariants (all changes to the cache under txa_large_lock; system calls outside it):
 *   - a granule reads LARGE exactly while it belongs to a live object's mapping or a
 *     cached span: it is marked after the memory is mapped and cleared before it is
 *     unmapped or moved away, so a pointer into released memory reads "not ours";
 *   - no two cached spans are adjacent (they are merged);
 *   - every header inside cached memory reads FREED: free swaps LIVE -> FREED before the
 *     mapping is cached, and nothing else writes there; so a second free of a cached
 *     object is reported as a double free, and once its header is overwritten by a later
 *     object it is reported as an invalid (interior) pointer. */
#include <errno.h>
#include <string.h>

#include "alloc/internal.h"

#define LARGE_MAGIC UINT64_C(0x7478616c6c6f634c)
#define CACHE_SLOTS 64
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

typedef struct span {
  uintptr_t base;
  size_t size;
  uint64_t when_ms; /* when it was last freed */
} span;

/* Victims of one cache operation: expired spans, evictions, the span put. */
typedef struct victims {
  unsigned n;
  span s[CACHE_SLOTS + 2];
} victims;

txa_lock txa_large_lock;
/* Guarded by txa_large_lock. */
static span cache[CACHE_SLOTS];
static unsigned cache_count;
static size_t cache_bytes;
static size_t peak_live; /* most live large bytes seen since peak_since_ms */
static uint64_t peak_since_ms;

static size_t round_granule(size_t x) { return (x + TXA_GRANULE - 1) & ~(TXA_GRANULE - 1); }
static uintptr_t round_up(uintptr_t x, size_t align) {
  return (x + align - 1) & ~(uintptr_t)(align - 1);
}
static uint64_t expiry_ms(void) { return 4 * txa_g.decommit_delay_ms + 1000; }

static void unmap_mapping(uintptr_t base, size_t size) {
  txa_map_set(base, size, TXA_KIND_NONE);
  txa_os_unmap((void *)base, size);
  txa_committed_add(-(int64_t)size);
  TXA_GCOUNT(os_unmaps, 1);
}

static void unmap_victims(const victims *v) {
  for (unsigned i = 0; i < v->n; i++) unmap_mapping(v->s[i].base, v->s[i].size);
}

/* ---- The cache; every function here runs under txa_large_lock. ---- */

static void cache_remove_at(unsigned i) {
  cache_bytes -= cache[i].size;
  atomic_fetch_sub_explicit(&txa_large_cached, (int64_t)cache[i].size, memory_order_relaxed);
  cache[i] = cache[--cache_count];
}

static void cache_expire(uint64_t now, victims *v) {
  uint64_t expiry = expiry_ms();
  for (unsigned i = 0; i < cache_count;) {
    if (now - cache[i].when_ms >= expiry) {
      v->s[v->n++] = cache[i];
      cache_remove_at(i);
    } else {
      i++;
    }
  }
}

/* The byte bound: large_cache_mb, or half the recent peak of live large bytes
 * when more (a program with a big large-object working set gets more of it reused). The
 * peak restarts from the current value every expiry period. */
static size_t cache_limit(uint64_t now, size_t freed) {
  int64_t gauge = atomic_load_explicit(&txa_large_live, memory_order_relaxed);
  size_t live = (gauge > 0 ? (size_t)gauge : 0) + freed;
  if (now - peak_since_ms >= expiry_ms()) {
    peak_live = live;
    peak_since_ms = now;
  } else if (live > peak_live) {
    peak_live = live;
  }
  size_t adaptive = peak_live / 2;
  return adaptive > txa_g.large_cache_max ? adaptive : (size_t)txa_g.large_cache_max;
}

/* Adds s, merged with its cached neighbours, evicting the oldest spans while the cache is
 * over `limit` bytes or full; a span that alone exceeds the limit is a victim itself. */
static void cache_put(span s, size_t limit, victims *v) {
  for (unsigned i = 0; i < cache_count;) {
    if (cache[i].base + cache[i].size == s.base) {
      s.base = cache[i].base;
      s.size += cache[i].size;
      cache_remove_at(i);
    } else if (s.base + s.size == cache[i].base) {
      s.size += cache[i].size;
      cache_remove_at(i);
    } else {
      i++;
    }
  }
  if (s.size > limit) { /* keep its last `limit` bytes (whole granules), unmap the rest */
    size_t keep = limit & ~(TXA_GRANULE - 1);
    v->s[v->n++] = (span){s.base, s.size - keep, s.when_ms};
    if (!keep) return;
    s = (span){s.base + s.size - keep, keep, s.when_ms};
  }
  while (cache_count && (cache_count == CACHE_SLOTS || cache_bytes + s.size > limit)) {
    unsigned oldest = 0;
    for (unsigned i = 1; i < cache_count; i++)
      if (cache[i].when_ms < cache[oldest].when_ms) oldest = i;
    v->s[v->n++] = cache[oldest];
    cache_remove_at(oldest);
  }
  cache[cache_count++] = s;
  cache_bytes += s.size;
  atomic_fetch_add_explicit(&txa_large_cached, (int64_t)s.size, memory_order_relaxed);
}

enum take_result { TAKE_NONE, TAKE_FIT, TAKE_GROW };

/* TAKE_FIT: *out is `need` bytes at an `align`-aligned address, carved from the smallest
 * span that holds them (the rest stays cached). TAKE_GROW: no span holds them; *out is
 * the largest span aligned to `align` of at least need / 2 bytes, removed for the caller
 * to grow. */
static enum take_result cache_take(size_t need, size_t align, span *out, victims *v) {
  unsigned fit = CACHE_SLOTS, grow = CACHE_SLOTS;
  for (unsigned i = 0; i < cache_count; i++) {
    uintptr_t start = round_up(cache[i].base, align), end = cache[i].base + cache[i].size;
    if (start < end && end - start >= need) {
      if (fit == CACHE_SLOTS || cache[i].size < cache[fit].size) fit = i;
    } else if (start == cache[i].base && cache[i].size >= need / 2) {
      if (grow == CACHE_SLOTS || cache[i].size > cache[grow].size) grow = i;
    }
  }
  if (fit != CACHE_SLOTS) {
    span s = cache[fit];
    cache_remove_at(fit);
    uintptr_t start = round_up(s.base, align), end = s.base + s.size;
    /* The pieces came from one merged span: they have no cached neighbours to merge. */
    if (start > s.base) cache_put((span){s.base, start - s.base, s.when_ms}, SIZE_MAX, v);
    if (end > start + need)
      cache_put((span){start + need, end - start - need, s.when_ms}, SIZE_MAX, v);
    *out = (span){start, need, s.when_ms};
    return TAKE_FIT;
  }
  if (grow != CACHE_SLOTS) {
    *out = cache[grow];
    cache_remove_at(grow);
    return TAKE_GROW;
  }
  return TAKE_NONE;
}

/* The cached span starting exactly at `at`, if it has at least `need` bytes: those are
 * removed from the cache (the rest stays) and true is returned. */
static bool cache_take_at(uintptr_t at, size_t need, victims *v) {
  for (unsigned i = 0; i < cache_count; i++) {
    if (cache[i].base != at) continue;
    if (cache[i].size < need) return false;
    span s = cache[i];
    cache_remove_at(i);
    if (s.size > need) cache_put((span){at + need, s.size - need, s.when_ms}, SIZE_MAX, v);
    return true;
  }
  return false;
}

/* ---- Mappings ---- */

/* Gives [base, base+size) (whole granules, marked LARGE, holding no live header) to the
 * cache, or back to the OS when the cache is off or full. */
static void release_span(uintptr_t base, size_t size, size_t freed) {
  if (!txa_g.large_cache_max) {
    unmap_mapping(base, size);
    return;
  }
  victims v = {0};
  uint64_t now = txa_os_now_ms();
  txa_lock_acquire(&txa_large_lock);
  cache_expire(now, &v);
  cache_put((span){base, size, now}, cache_limit(now, freed), &v);
  txa_lock_release(&txa_large_lock);
  unmap_victims(&v);
}

/* A fresh mapping of `size` bytes aligned to `align`, marked LARGE; 0 when out of memory. */
static uintptr_t map_fresh(size_t size, size_t align) {
  void *m = txa_os_map(size, align);
  if (!m) return 0;
  if (!txa_map_set((uintptr_t)m, size, TXA_KIND_LARGE)) {
    txa_map_set((uintptr_t)m, size, TXA_KIND_NONE);
    txa_os_unmap(m, size);
    return 0;
  }
  TXA_GCOUNT(os_maps, 1);
  txa_committed_add((int64_t)size);
  return (uintptr_t)m;
}

/* Grows the mapping [base, base+size) to `need` bytes keeping its pages: in place when the
 * address space after it is free, else moved to an address aligned to `align`. Returns the
 * new base, or 0 with the mapping unchanged (also when it spans two kernel mappings, as
 * merged spans may). pre: no other thread uses the mapping. */
static uintptr_t grow_mapping(uintptr_t base, size_t size, size_t need, size_t align) {
  if (txa_os_grow_in_place((void *)base, size, need)) {
    if (txa_map_set(base + size, need - size, TXA_KIND_LARGE)) {
      txa_committed_add((int64_t)(need - size));
      return base;
    }
    txa_map_set(base + size, need - size, TXA_KIND_NONE);
    txa_os_unmap((void *)(base + size), need - size);
    return 0;
  }
  void *target = txa_os_reserve(need, align);
  if (!target) return 0;
  uintptr_t t = (uintptr_t)target;
  /* RESERVED (never dereferenced) until the move; creates the map leaves beforehand, so
   * marking it LARGE afterwards cannot fail. */
  if (!txa_map_set(t, need, TXA_KIND_RESERVED)) {
    txa_map_set(t, need, TXA_KIND_NONE);
    txa_os_unmap(target, need);
    return 0;
  }
  txa_map_set(base, size, TXA_KIND_NONE);
  if (!txa_os_move_to((void *)base, size, need, target)) {
    txa_map_set(base, size, TXA_KIND_LARGE); /* its leaves exist: cannot fail */
    txa_map_set(t, need, TXA_KIND_NONE);
    txa_os_unmap(target, need);
    return 0;
  }
  txa_map_set(t, need, TXA_KIND_LARGE);
  TXA_GCOUNT(os_maps, 1);
  txa_committed_add((int64_t)(need - size));
  return t;
}

/* A mapping of `need` bytes aligned to `align` from the cache: carved from a cached span,
 * or a cached span grown. 0 when the cache has nothing suitable. */
static uintptr_t map_from_cache(size_t need, size_t align) {
  victims v = {0};
  span s = {0};
  uint64_t now = txa_os_now_ms();
  txa_lock_acquire(&txa_large_lock);
  cache_expire(now, &v);
  enum take_result r = cache_take(need, align, &s, &v);
  txa_lock_release(&txa_large_lock);
  unmap_victims(&v);
  if (r == TAKE_FIT) return s.base;
  if (r == TAKE_NONE) return 0;
  uintptr_t base = grow_mapping(s.base, s.size, need, align);
  /* A span that cannot grow (it spans two kernel mappings) would fail again: unmap it. */
  if (!base) unmap_mapping(s.base, s.size);
  return base;
}

static large_header *write_header(uintptr_t base, size_t map_size, size_t offset, size_t size) {
  char *p = (char *)base + offset;
  large_header *h = (large_header *)(p - TXA_LARGE_HEADER);
  h->magic = LARGE_MAGIC ^ (uintptr_t)p;
  h->base = base;
  h->map_size = map_size;
  h->size = size;
  return h;
}

void *txa_large_alloc(size_t size, size_t align, bool zero) {
  if (align < TXA_LARGE_HEADER) align = TXA_LARGE_HEADER;
  if (size > MAX_LARGE_SIZE || align > MAX_ALIGN) {
    errno = ENOMEM;
    return NULL;
  }
  size_t need = round_granule(align + (size ? size : 1));
  size_t map_align = align > TXA_GRANULE ? align : TXA_GRANULE;
  uintptr_t base = txa_g.large_cache_max ? map_from_cache(need, map_align) : 0;
  bool reused = base != 0;
  if (reused) {
    TXA_GCOUNT(large_cache_hits, 1);
  } else if (!(base = map_fresh(need, map_align))) {
    /* Cached spans hold address space and memory the OS may be refusing us (a limit such
     * as RLIMIT_AS): give them back and try once more before failing. */
    txa_large_cache_flush();
    if (!(base = map_fresh(need, map_align))) {
      errno = ENOMEM;
      return NULL;
    }
  }
  large_header *h = write_header(base, need, align, size);
  atomic_store_explicit(&h->state, LARGE_LIVE, memory_order_relaxed);
  char *p = (char *)base + align;
  if (zero && reused) memset(p, 0, txa_large_usable(p));
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
  release_span(h->base, h->map_size, h->size);
}

size_t txa_large_usable(const void *p) {
  large_header *h = header_of(p);
  if (!h || atomic_load_explicit(&h->state, memory_order_relaxed) != LARGE_LIVE) return 0;
  /* The size asked for rounded up to pages (the rest of the mapping is kept untouched). */
  size_t offset = (uintptr_t)p - h->base;
  size_t end = (offset + (h->size ? h->size : 1) + TXA_OS_PAGE - 1) & ~(TXA_OS_PAGE - 1);
  return end - offset;
}

/* Extends the live mapping [base, base+size) to `need` bytes with the cached span right
 * after it, if there is one big enough. */
static bool grow_into_cache(uintptr_t base, size_t size, size_t need) {
  if (!txa_g.large_cache_max) return false;
  victims v = {0};
  txa_lock_acquire(&txa_large_lock);
  bool taken = cache_take_at(base + size, need - size, &v);
  txa_lock_release(&txa_large_lock);
  unmap_victims(&v);
  return taken;
}

void *txa_large_resize(void *p, size_t size) {
  large_header *h = header_of(p);
  if (!h || size > MAX_LARGE_SIZE) return NULL;
  uintptr_t base = h->base;
  size_t offset = (uintptr_t)p - base, map_size = h->map_size, old_size = h->size;
  size_t need = round_granule(offset + size);
  if (need <= map_size) {
    if (need < map_size / 2) { /* the unused tail to the cache */
      h->map_size = need;
      release_span(base + need, map_size - need, 0);
    }
  } else if (grow_into_cache(base, map_size, need)) {
    h->map_size = need;
  } else {
    /* The object's alignment is its offset (a power of two, see txa_large_alloc). */
    uintptr_t moved =
        grow_mapping(base, map_size, need, offset > TXA_GRANULE ? offset : TXA_GRANULE);
    if (!moved) return NULL;
    if (moved != base) {
      /* The header moved with the pages; only its address-dependent fields change. */
      p = (char *)moved + offset;
      h = write_header(moved, need, offset, old_size);
    }
    h->map_size = need;
  }
  atomic_fetch_add_explicit(&txa_large_live, (int64_t)size - (int64_t)old_size,
                            memory_order_relaxed);
  h->size = size;
  return p;
}

void txa_large_cache_flush(void) {
  victims v = {0};
  txa_lock_acquire(&txa_large_lock);
  while (cache_count) {
    v.s[v.n++] = cache[0];
    cache_remove_at(0);
  }
  peak_live = 0;
  peak_since_ms = txa_os_now_ms();
  txa_lock_release(&txa_large_lock);
  unmap_victims(&v);
}
