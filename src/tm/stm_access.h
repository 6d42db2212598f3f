/* Word access primitives of the STM, shared by its slow paths (stm.c) and the inlined
 * fast paths of the public loads/stores (tm_access.c).
 *
 * Shared data words are always read and written with __atomic operations, so
 * ThreadSanitizer sees synchronised accesses and the compiler never tears or caches them.
 * Reading the 8-byte word that contains a sub-word object may touch bytes outside that
 * object (never outside its page): the readers are excluded from AddressSanitizer. */
#ifndef TXALLOC_TM_STM_ACCESS_H
#define TXALLOC_TM_STM_ACCESS_H

#include "tm/stm_internal.h"

#define TM_NO_ASAN __attribute__((no_sanitize("address")))

/* Acquire: a reader that sees a committed value also sees the lock word of its writer
 * (writers store data with release after locking). */
TM_NO_ASAN static inline uint64_t word_read(uintptr_t w) {
  return __atomic_load_n((const uint64_t *)w, __ATOMIC_ACQUIRE);
}

/* Writes the bytes of `value` selected by `mask` into word w, touching no other byte:
 * whole aligned halves, quarters and bytes are stored with one sized atomic store each. */
TM_NO_ASAN static inline void word_write(uintptr_t w, uint64_t value, uint64_t mask) {
  if (TM_LIKELY(mask == ~UINT64_C(0))) {
    __atomic_store_n((uint64_t *)w, value, __ATOMIC_RELEASE);
    return;
  }
  for (unsigned half = 0; half < 8; half += 4) {
    uint64_t hm = UINT64_C(0xffffffff) << (half * 8);
    if ((mask & hm) == 0) continue;
    if ((mask & hm) == hm) {
      __atomic_store_n((uint32_t *)(w + half), (uint32_t)(value >> (half * 8)), __ATOMIC_RELEASE);
      continue;
    }
    for (unsigned q = half; q < half + 4; q += 2) {
      uint64_t qm = UINT64_C(0xffff) << (q * 8);
      if ((mask & qm) == 0) continue;
      if ((mask & qm) == qm) {
        __atomic_store_n((uint16_t *)(w + q), (uint16_t)(value >> (q * 8)), __ATOMIC_RELEASE);
        continue;
      }
      for (unsigned b = q; b < q + 2; b++)
        if (mask & (UINT64_C(0xff) << (b * 8)))
          __atomic_store_n((uint8_t *)(w + b), (uint8_t)(value >> (b * 8)), __ATOMIC_RELEASE);
    }
  }
}

/* A locked lock word points into the owner's write-set region; only the owner stores such
 * words, and it releases all of them before its transaction ends, so a lock word pointing
 * into our region means we hold the lock now. */
static inline tm_wentry *lock_head(uint64_t l) {
  return (tm_wentry *)(uintptr_t)(l & ~TM_LOCKED_BITS);
}
static inline bool owned_by(const tm_tx *tx, uint64_t l) {
  return (uintptr_t)lock_head(l) - (uintptr_t)tx->wset < TM_WSET_MAX * sizeof(tm_wentry);
}
/* The lock word of a lock held with `head` as its newest entry. */
static inline uint64_t locked_word(const tm_wentry *head) {
  return (uint64_t)(uintptr_t)head | TM_LOCKED_BITS;
}

/* The newest entry for word w in the chain from e (the lock's newest entry), or NULL. A
 * child's first store to a word creates an entry that shadows the older ones and holds the
 * merged bytes of every level (etl_store), so the newest entry is the word's whole story. */
static inline tm_wentry *chain_find(tm_wentry *e, uintptr_t w) {
  for (; e; e = e->next)
    if (e->addr == w) return e;
  return NULL;
}

/* The word w of a stripe whose lock we hold (lock word l), as this transaction sees it:
 * etl-wb buffers our bytes in the lock's chain, merged over memory (which nobody else
 * changes while we hold the lock: I1, stm.c); the other designs that hold locks during the
 * attempt (etl-wt, irrevocable) have them in memory. No read-set entry: nobody else can
 * change the stripe until our attempt ends, and its version was inside the snapshot when we
 * took the lock (etl_store extends otherwise). */
static inline __attribute__((always_inline)) uint64_t read_own(const tm_tx *tx, uint64_t l,
                                                               uintptr_t w) {
  if (tx->mode != TM_MODE_ETL_WB) return word_read(w);
  tm_wentry *e = chain_find(lock_head(l), w);
  if (!e) return word_read(w);
  if (TM_LIKELY(e->mask == ~UINT64_C(0))) return e->value;
  return (word_read(w) & ~e->mask) | (e->value & e->mask);
}

/* Fills write-set entry e (not yet reachable from any lock word). The fields other threads
 * may read once a lock word points here (addr, tx, next, saved: attribution and cm=kill
 * follow lock words) are stored atomically (relaxed); the lock's CAS or release store that
 * publishes the entry orders them. level and acquired are adjacent 32-bit fields: one 64-bit
 * store writes both (little-endian, checked at compile time). */
_Static_assert(offsetof(tm_wentry, acquired) == offsetof(tm_wentry, level) + sizeof(uint32_t) &&
                   offsetof(tm_wentry, level) % sizeof(uint64_t) == 0,
               "level and acquired form one aligned 64-bit word");
static inline __attribute__((always_inline)) void wentry_fill(tm_wentry *e, uintptr_t w, tm_tx *tx,
                                                              uint64_t *lock, tm_wentry *next,
                                                              uint64_t saved, unsigned level,
                                                              unsigned acquired) {
  __atomic_store_n(&e->addr, w, __ATOMIC_RELAXED);
  __atomic_store_n(&e->tx, tx, __ATOMIC_RELAXED);
  __atomic_store_n(&e->next, next, __ATOMIC_RELAXED);
  __atomic_store_n(&e->saved, saved, __ATOMIC_RELAXED);
  e->lock = lock;
  uint64_t level_acquired = (uint64_t)acquired << 32 | level;
  __builtin_memcpy((char *)e + offsetof(tm_wentry, level), &level_acquired, sizeof level_acquired);
}

/* Write-back store of the bytes `mask` of word w into a stripe whose lock (word l) this
 * attempt holds (etl-wb). If this level has an entry for w (the chain's newest for it), the
 * bytes go into it; else a new entry shadows the older ones, holding their bytes merged
 * with these (a child's abort unlinks it and theirs reappear), and the lock word points to
 * it. False, with nothing done, when the write set is full. */
static inline __attribute__((always_inline)) bool
wb_store_held(tm_tx *tx, uint64_t *lock, uint64_t l, uintptr_t w, uint64_t value, uint64_t mask) {
  tm_wentry *head = lock_head(l);
  tm_wentry *e = chain_find(head, w);
  if (e && e->level == tx->wlevel) {
    e->value = (e->value & ~mask) | (value & mask);
    e->mask |= mask;
    return true;
  }
  size_t wn = tx->wn;
  if (TM_UNLIKELY(wn >= TM_WSET_MAX)) return false;
  tm_wentry *n = &tx->wset[wn];
  wentry_fill(n, w, tx, lock, head, head->saved, tx->wlevel, 0);
  uint64_t old = e ? e->value : 0, old_mask = e ? e->mask : 0;
  n->value = (old & ~mask) | (value & mask);
  n->mask = old_mask | mask;
  tx->wn = wn + 1;
  /* Publishes the filled entry (attribution and cm=kill follow lock words). */
  __atomic_store_n(lock, locked_word(n), __ATOMIC_RELEASE);
  return true;
}

void stm_rset_grow(tm_tx *tx);
/* Records a read of word w (lock word `seen`). Returns false, recording nothing, when the
 * read set is full. */
static inline __attribute__((always_inline)) bool rset_try_push(tm_tx *tx, uint64_t seen,
                                                                uintptr_t w) {
  tm_rentry *last = tx->rlast;
  if (TM_UNLIKELY(last == tx->rlimit)) return false;
  tm_rentry *e = last + 1;
  e->seen = seen;
  e->addr = w;
  tx->rlast = e;
  return true;
}

/* Records a read, growing the set when full; a read-only attempt, whose set is scratch
 * (stm_read_only), empties it instead. */
static inline void rset_push(tm_tx *tx, uint64_t seen, uintptr_t w) {
  if (TM_UNLIKELY(!rset_try_push(tx, seen, w))) {
    if (stm_read_only(tx))
      tm_rset_truncate(tx, 0);
    else
      stm_rset_grow(tx);
    rset_try_push(tx, seen, w);
  }
}

#endif
