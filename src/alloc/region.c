/* Regions: large reservations of address space, carved into 1 MiB granules on demand,
 * and the region map that classifies any address in O(1).
 *
 * The map has one byte per granule of the 47-bit user address space, in two levels: a
 * static root of 8192 pointers to 16 KiB leaves, each leaf covering 16 GiB and mapped
 * when the first granule it covers becomes ours (so a process needs a handful). A
 * granule's entry is written before any pointer into it is handed out and changes only
 * when a large mapping is released, so readers need no ordering beyond a relaxed load
 * (the leaf pointer itself is published with release/acquire). */
#include <errno.h>

#include "alloc/internal.h"
#include "util/message.h"

_Atomic(uint8_t *) txa_region_map[TXA_MAP_ROOT_ENTRIES];
_Atomic(_Atomic(uint64_t) *) txa_link_map[TXA_MAP_ROOT_ENTRIES];
#define LINK_LEAF_BYTES                                                                            \
  (sizeof(uint64_t) << (TXA_GRANULE_SHIFT + TXA_MAP_LEAF_BITS - TXA_BLOCK_SHIFT))
txa_lock txa_region_lock;

/* Guarded by txa_region_lock. */
static uintptr_t region_cursor, region_end; /* next uncarved granule of the current region */
static uintptr_t small_cursor, small_end;   /* next fresh block of the current small chunk */
static uintptr_t meta_cursor, meta_end;     /* metadata bump area */

/* The leaf covering granule number g, mapped on first use (the loser of a race unmaps).
 * The block-link leaf of the same span is installed first, so a granule marked in the
 * region map always has its links. */
static uint8_t *map_leaf(uintptr_t g, bool create) {
  _Atomic(uint8_t *) *slot = &txa_region_map[g >> TXA_MAP_LEAF_BITS];
  uint8_t *leaf = atomic_load_explicit(slot, memory_order_acquire);
  if (leaf || !create) return leaf;
  _Atomic(_Atomic(uint64_t) *) *link_slot = &txa_link_map[g >> TXA_MAP_LEAF_BITS];
  if (!atomic_load_explicit(link_slot, memory_order_acquire)) {
    _Atomic(uint64_t) *links = txa_os_map(LINK_LEAF_BYTES, TXA_OS_PAGE);
    if (!links) return NULL;
    _Atomic(uint64_t) *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(link_slot, &none, links, memory_order_acq_rel,
                                                 memory_order_acquire))
      txa_os_unmap(links, LINK_LEAF_BYTES);
  }
  uint8_t *fresh = txa_os_map(TXA_MAP_LEAF_ENTRIES, TXA_OS_PAGE);
  if (!fresh) return NULL;
  if (atomic_compare_exchange_strong_explicit(slot, &leaf, fresh, memory_order_acq_rel,
                                              memory_order_acquire))
    return fresh;
  txa_os_unmap(fresh, TXA_MAP_LEAF_ENTRIES);
  return leaf;
}

bool txa_map_set(uintptr_t start, size_t size, unsigned kind) {
  for (uintptr_t g = start >> TXA_GRANULE_SHIFT; g < (start + size) >> TXA_GRANULE_SHIFT; g++) {
    uint8_t *leaf = map_leaf(g, kind != TXA_KIND_NONE);
    if (!leaf) {
      if (kind == TXA_KIND_NONE) continue;
      return false;
    }
    __atomic_store_n(&leaf[g & (TXA_MAP_LEAF_ENTRIES - 1)], (uint8_t)kind, __ATOMIC_RELAXED);
  }
  return true;
}

/* pre: txa_region_lock held. Returns a committed granule of `kind`, or 0. */
static uintptr_t carve_granule(unsigned kind) {
  if (region_cursor == region_end) {
    void *r = NULL;
    size_t size = txa_g.region_size;
    for (; size >= 4 * TXA_GRANULE; size /= 2)
      if ((r = txa_os_reserve(size, TXA_GRANULE)) != NULL) break;
    if (!r) return 0;
    if (!txa_map_set((uintptr_t)r, size, TXA_KIND_RESERVED)) {
      txa_map_set((uintptr_t)r, size, TXA_KIND_NONE);
      txa_os_unmap(r, size);
      return 0;
    }
    TXA_GCOUNT(os_maps, 1);
    atomic_fetch_add_explicit(&txa_reserved, (int64_t)size, memory_order_relaxed);
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

void *txa_region_chunk(unsigned kind) {
  txa_lock_acquire(&txa_region_lock);
  uintptr_t g = carve_granule(kind);
  txa_lock_release(&txa_region_lock);
  if (!g) errno = ENOMEM;
  return (void *)g;
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
