/* The undo log of the running top-level transaction and its index (object -> position).
 *
 * The allocator keeps no per-object header, so McRT's "sequence number in the object
 * header" lives here: each undo entry carries the seq of the level that allocated it, and
 * an open-addressing hash table (linear probing, load <= 1/2, backward-shift deletion)
 * finds an object's entry in O(1). The index is used by the txalloc strategy only (wrap
 * does no balanced recycling).
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
}

static void index_rebuild(txmem_thread *t, size_t cap) {
  if (cap != t->index_mask + 1 || !t->index) {
    free(t->index);
    t->index = calloc(cap, sizeof *t->index);
    if (!t->index) txmem_contract_error("out of memory for the allocation index", 0, t->depth);
    t->index_mask = cap - 1;
  } else {
    memset(t->index, 0, cap * sizeof *t->index);
  }
  t->index_count = 0;
  for (size_t i = 0; i < t->undo_len; i++) {
    if (t->undo[i].ptr) {
      index_insert_raw(t, t->undo[i].ptr, i);
      t->index_count++;
    }
  }
}

size_t txmem_index_find(const txmem_thread *t, const void *ptr) {
  if (!t->index_count) return SIZE_MAX;
  size_t i = index_home(t, ptr);
  for (;;) {
    const void *k = t->index[i].key;
    if (k == ptr) return t->index[i].pos;
    if (!k) return SIZE_MAX;
    i = (i + 1) & t->index_mask;
  }
}

static void index_remove(txmem_thread *t, const void *key) {
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

/* Removes dead entries, renumbers the index and the open levels' undo_start. */
static void undo_compact(txmem_thread *t) {
  size_t w = 0;
  unsigned level = 1;
  for (size_t r = 0; r < t->undo_len; r++) {
    while (level <= t->depth && t->levels[level].undo_start == r) t->levels[level++].undo_start = w;
    if (t->undo[r].ptr) t->undo[w++] = t->undo[r];
  }
  while (level <= t->depth) t->levels[level++].undo_start = w;
  t->undo_len = w;
  t->undo_dead = 0;
  if (t->index) index_rebuild(t, t->index_mask + 1);
}

void txmem_undo_push(txmem_thread *t, void *ptr, size_t size, uint64_t seq) {
  if (TXMEM_UNLIKELY(t->undo_len == t->undo_cap)) {
    if (t->undo_dead >= COMPACT_MIN_DEAD && t->undo_dead * 2 >= t->undo_len) undo_compact(t);
    if (t->undo_len == t->undo_cap)
      t->undo = txmem_meta_grow(t->undo, &t->undo_cap, sizeof *t->undo, t->undo_len + 1);
  }
  size_t pos = t->undo_len++;
  t->undo[pos] = (txmem_undo_entry){ptr, size, seq};
  if (txmem_cfg.strategy != TXMEM_TXALLOC) return;
  if (TXMEM_UNLIKELY((t->index_count + 1) * 2 > t->index_mask + 1 || !t->index)) {
    size_t cap = t->index ? (t->index_mask + 1) * 2 : INDEX_MIN_CAP;
    t->undo_len--; /* the rebuild must not see the new entry twice */
    index_rebuild(t, cap);
    t->undo_len++;
  }
  index_insert_raw(t, ptr, pos);
  t->index_count++;
}

void txmem_undo_kill(txmem_thread *t, size_t pos, size_t floor) {
  index_remove(t, t->undo[pos].ptr);
  t->undo[pos].ptr = NULL;
  t->undo_dead++;
  while (t->undo_len > floor && !t->undo[t->undo_len - 1].ptr) {
    t->undo_len--;
    t->undo_dead--;
  }
}

void txmem_undo_truncate(txmem_thread *t, size_t from) {
  for (size_t i = from; i < t->undo_len; i++) {
    if (t->undo[i].ptr) {
      if (t->index_count) index_remove(t, t->undo[i].ptr);
    } else {
      t->undo_dead--;
    }
  }
  t->undo_len = from;
}

void txmem_undo_reset(txmem_thread *t) {
  if (t->index_count) {
    if (t->index_count <= 8) {
      for (size_t i = 0; i < t->undo_len && t->index_count; i++)
        if (t->undo[i].ptr) index_remove(t, t->undo[i].ptr);
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
}
