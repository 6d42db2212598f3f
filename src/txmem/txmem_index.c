/* The undo log of the running top-level transaction and its index (object -> position).
 *
 * The allocator keeps no per-object header, so McRT's "sequence number in the object
 * header" lives here: each undo entry carries the seq of the level that allocated it, and
 * an open-addressing hash table (linear probing, load <= 1/2, backward-shift deletion)
 * finds an object's entry in O(1). The newest TXMEM_INDEX_PENDING entries are indexed
 * lazily (see txmem_internal.h). The index is used by the txalloc strategy only (wrap does
 * no balanced recycling).
 *
 * Space: balanced frees leave dead entries; a trailing run of them is trimmed at once
 * (Figure 3's loop keeps the log at one entry) and the log is compacted when dead entries
 * outnumber live ones, so it never holds more than about twice the live speculative
 * allocations (amortised O(1) per operation). */
#include <stdlib.h>
#include <string.h>

#include "txmem/txmem_internal.h"

#define INDEX_MIN_CAP 64
#define COMPACT_MIN_DEAD 64

static inline size_t index_home(const txmem_thread *t, const void *key) {
  uint64_t h = ((uint64_t)(uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & t->index_mask;
}

static void index_insert_raw(txmem_thread *t, void *key, size_t pos) {
  size_t i = index_home(t, key);
  while (t->index[i].key) i = (i + 1) & t->index_mask;
  t->index[i].key = key;
  t->index[i].pos = pos;
  t->index_count++;
}

/* Indexes every live entry of the log into a cleared table of `cap` slots. */
static void index_rebuild(txmem_thread *t, size_t cap) {
  if (!t->index || cap != t->index_mask + 1) {
    free(t->index);
    t->index = calloc(cap, sizeof *t->index);
    if (!t->index) txmem_contract_error("out of memory for the allocation index", 0, t->depth);
    t->index_mask = cap - 1;
  } else {
    memset(t->index, 0, cap * sizeof *t->index);
  }
  t->index_count = 0;
  for (size_t i = 0; i < t->undo_len; i++)
    if (t->undo[i].ptr) index_insert_raw(t, t->undo[i].ptr, i);
  t->indexed_upto = t->undo_len;
}

size_t txmem_index_lookup(const txmem_thread *t, const void *ptr) {
  size_t i = index_home(t, ptr);
  for (;;) {
    const void *k = t->index[i].key;
    if (k == ptr) return t->index[i].pos;
    if (!k) return SIZE_MAX;
    i = (i + 1) & t->index_mask;
  }
}

void txmem_index_remove(txmem_thread *t, const void *key) {
  size_t i = index_home(t, key);
  while (t->index[i].key != key) i = (i + 1) & t->index_mask;
  /* Backward shift: move later members of the probe run into the hole when their home
   * position does not lie cyclically in (hole, j]. */
  size_t j = i;
  for (;;) {
    j = (j + 1) & t->index_mask;
    if (!t->index[j].key) break;
    size_t home = index_home(t, t->index[j].key);
    bool in_between = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
    if (!in_between) {
      t->index[i] = t->index[j];
      i = j;
    }
  }
  t->index[i].key = NULL;
  t->index_count--;
}

/* Indexes the pending entries [indexed_upto, undo_len). */
static void index_pending(txmem_thread *t) {
  size_t pending = t->undo_len - t->indexed_upto;
  size_t cap = t->index ? t->index_mask + 1 : 0;
  if ((t->index_count + pending) * 2 > cap) {
    size_t n = cap ? cap : INDEX_MIN_CAP;
    while ((t->index_count + pending) * 2 > n) n *= 2;
    index_rebuild(t, n);
    return;
  }
  for (size_t i = t->indexed_upto; i < t->undo_len; i++)
    if (t->undo[i].ptr) index_insert_raw(t, t->undo[i].ptr, i);
  t->indexed_upto = t->undo_len;
}

/* Removes dead entries, renumbers the index and the open levels' undo_start. */
static void undo_compact(txmem_thread *t) {
  size_t w = 0;
  unsigned level = 1;
  for (size_t r = 0; r < t->undo_len; r++) {
    while (level <= t->depth && t->levels[level].undo_start == r) t->levels[level++].undo_start = w;
    if (t->undo[r].ptr) t->undo[w++] = t->undo[r];
  }
  while (level <= t->depth) t->levels[level++].undo_start = w;
  if (t->depth) t->cur_undo_start = t->levels[t->depth].undo_start;
  t->undo_len = w;
  t->undo_dead = 0;
  if (t->index)
    index_rebuild(t, t->index_mask + 1);
  else
    t->indexed_upto = t->undo_len;
}

void txmem_undo_push_slow(txmem_thread *t, void *ptr, size_t size, uint64_t seq) {
  if (t->undo_len == t->undo_cap) {
    if (t->undo_dead >= COMPACT_MIN_DEAD && t->undo_dead * 2 >= t->undo_len) undo_compact(t);
    if (t->undo_len == t->undo_cap)
      t->undo = txmem_meta_grow(t->undo, &t->undo_cap, sizeof *t->undo, t->undo_len + 1);
  }
  if (t->undo_len - t->indexed_upto >= TXMEM_INDEX_PENDING) {
    if (txmem_cfg.strategy == TXMEM_TXALLOC)
      index_pending(t);
    else
      t->indexed_upto = t->undo_len; /* wrap never looks objects up */
  }
  t->undo[t->undo_len++] = (txmem_undo_entry){ptr, size, seq};
}

void txmem_undo_truncate(txmem_thread *t, size_t from) {
  for (size_t i = from; i < t->undo_len; i++) {
    if (t->undo[i].ptr) {
      if (i < t->indexed_upto && t->index_count) txmem_index_remove(t, t->undo[i].ptr);
    } else {
      t->undo_dead--;
    }
  }
  t->undo_len = from;
  if (t->indexed_upto > from) t->indexed_upto = from;
}

void txmem_undo_reset(txmem_thread *t) {
  if (t->index_count) {
    if (t->index_count <= 8) {
      for (size_t i = 0; i < t->indexed_upto && t->index_count; i++)
        if (t->undo[i].ptr) txmem_index_remove(t, t->undo[i].ptr);
    } else if (t->index_mask + 1 > 65536) {
      free(t->index); /* a huge transaction: give the table back */
      t->index = NULL;
      t->index_mask = 0;
      t->index_count = 0;
    } else {
      memset(t->index, 0, (t->index_mask + 1) * sizeof *t->index);
      t->index_count = 0;
    }
  }
  t->undo_len = 0;
  t->undo_dead = 0;
  t->indexed_upto = 0;
}
