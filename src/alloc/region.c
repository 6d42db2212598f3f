/* Regions: large reservations of address space, carved into 1 MiB granules on demand,
 * and the region map that classifies any address in O(1).
 *
 * The map has one byte per granule of the 47-bit user address space (128 MiB of
 * address space, mapped lazily: only the pages covering granules we own are ever
 * touched; reading an untouched page costs the shared zero page). A granule's entry is
 * written before any pointer into it is handed out and changes only when a large mapping
 * is released, so readers need no ordering beyond a relaxed load. */
#include <errno.h>

#include "alloc/internal.h"
#include "util/message.h"

_Atomic(uint8_t) *txa_region_map;
txa_lock txa_region_lock;

/* Guarded by txa_region_lock. */
static uintptr_t region_cursor, region_end; /* next uncarved granule of the current region */
static uintptr_t small_cursor, small_end;   /* next fresh block of the current small chunk */
static uintptr_t meta_cursor, meta_end;     /* metadata bump area */

void txa_map_set(uintptr_t start, size_t size, unsigned kind) {
  for (uintptr_t g = start >> TXA_GRANULE_SHIFT; g < (start + size) >> TXA_GRANULE_SHIFT; g++)
    atomic_store_explicit(&txa_region_map[g], (uint8_t)kind, memory_order_relaxed);
}

/* pre: txa_region_lock held. Returns a committed granule of `kind`, or 0. */
static uintptr_t carve_granule(unsigned kind) {
  if (region_cursor == region_end) {
    void *r = NULL;
    size_t size = txa_g.region_size;
    for (; size >= 4 * TXA_GRANULE; size /= 2)
      if ((r = txa_os_reserve(size, TXA_GRANULE)) != NULL) break;
    if (!r) return 0;
    TXA_GCOUNT(os_maps, 1);
    atomic_fetch_add_explicit(&txa_reserved, (int64_t)size, memory_order_relaxed);
    txa_map_set((uintptr_t)r, size, TXA_KIND_RESERVED);
    region_cursor = (uintptr_t)r;
    region_end = region_cursor + size;
    if (txalloc_opt(TXALLOC_OPT_VERBOSE))
      txalloc_message("reserved a region of %zu MiB at %p", size >> 20, r);
  }
  uintptr_t g = region_cursor;
  if (txa_os_commit((void *)g, TXA_GRANULE) != 0) return 0;
  region_cursor += TXA_GRANULE;
  txa_committed_add((int64_t)TXA_GRANULE);
  txa_map_set(g, TXA_GRANULE, kind);
  return g;
}

void *txa_region_fresh_block(unsigned kind) {
  uintptr_t b = 0;
  txa_lock_acquire(&txa_region_lock);
  if (kind == TXA_KIND_MEDIUM) {
    b = carve_granule(TXA_KIND_MEDIUM);
  } else {
    if (small_cursor == small_end) {
      uintptr_t g = carve_granule(TXA_KIND_SMALL);
      if (g) small_cursor = g, small_end = g + TXA_GRANULE;
    }
    if (small_cursor != small_end) {
      b = small_cursor;
      small_cursor += TXA_BLOCK_SIZE;
    }
  }
  txa_lock_release(&txa_region_lock);
  if (!b) errno = ENOMEM;
  return (void *)b;
}

void *txa_region_meta(size_t size) {
  size = (size + TXA_CACHE_LINE - 1) & ~(size_t)(TXA_CACHE_LINE - 1);
  if (size > TXA_GRANULE) return NULL;
  uintptr_t p = 0;
  txa_lock_acquire(&txa_region_lock);
  if (meta_end - meta_cursor < size) {
    uintptr_t g = carve_granule(TXA_KIND_META);
    if (g) meta_cursor = g, meta_end = g + TXA_GRANULE;
  }
  if (meta_end - meta_cursor >= size) {
    p = meta_cursor;
    meta_cursor += size;
  }
  txa_lock_release(&txa_region_lock);
  if (!p) errno = ENOMEM;
  return (void *)p;
}
