/* The STM's accesses: the library side of tm.h's inline load (tm_load_u64 and the other
 * word-sized entries), the frameless common store, and the backend's load and store
 * operations for every other access in a transaction. The STM works on aligned 8-byte
 * words: a sub-word access reads its containing word and extracts its bytes, a sub-word
 * store merges its bytes into the word under a byte mask (only those bytes are ever
 * written to memory). An access that straddles two words is split. Anything these paths
 * do not take (outside a transaction, or the view off) continues in the front-end's
 * tm_load_slow_/tm_store_slow_. */
#include <string.h>

#include "tm/stm_access.h"

static inline uint64_t size_mask(unsigned size) {
  return size == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (size * 8)) - 1;
}

uint64_t stm_load(tm_tx *tx, uintptr_t a, unsigned size) {
  uintptr_t w = a & ~(uintptr_t)7;
  unsigned off = (unsigned)(a & 7);
  if (off + size <= 8) return (stm_load_word(tx, w) >> (off * 8)) & size_mask(size);
  uint64_t lo = stm_load_word(tx, w) >> (off * 8);
  uint64_t hi = stm_load_word(tx, w + 8) << ((8 - off) * 8);
  return (lo | hi) & size_mask(size);
}

void stm_store(tm_tx *tx, uintptr_t a, unsigned size, uint64_t v) {
  uintptr_t w = a & ~(uintptr_t)7;
  unsigned off = (unsigned)(a & 7);
  uint64_t m = size_mask(size);
  stm_store_word(tx, w, v << (off * 8), m << (off * 8));
  if (off + size > 8) stm_store_word(tx, w + 8, v >> ((8 - off) * 8), m >> ((8 - off) * 8));
}

/* The library's side of the inline load (tm.h's tm_load_try_), where the inline load of a
 * caller goes on when its common case fails. The next most common case, a word of a stripe
 * this attempt holds (an update re-reading the nodes it wrote), is answered here, as
 * read_consistent would (read_own), without its frames. Under our own view the attempt is
 * etl-wb or etl-wt (stm_thread_init's begin_fast_view; irrevocability switches to
 * tm_view_off_), and a lock word we hold cannot change under us. Under tm_view_off_ the
 * descriptor behind the view must not be looked at. Anything else continues in
 * stm_load_word or tm_load_slow_ (tail calls: no stack frame). */
static inline __attribute__((always_inline)) uint64_t load_u64(uintptr_t a) {
  tm_load_view_ *v = tm_fast_view_;
  if (TM_LIKELY((a & 7) == 0)) {
    uint64_t value;
    if (TM_LIKELY(tm_load_try_(v, a, &value))) return value;
    if (v != TM_VIEW_OFF_) {
      tm_tx *tx = tm_view_tx(v);
      uint64_t l = __atomic_load_n(tm_view_lock_(v, a), __ATOMIC_ACQUIRE);
      if ((l & 1) && owned_by(tx, l)) return read_own(tx, l, a);
      return stm_load_word(tx, a);
    }
  }
  return tm_load_slow_(tm_self, a, 8);
}

uint64_t tm_load_u64(const volatile uint64_t *addr) { return load_u64((uintptr_t)addr); }
void *tm_load_ptr(void *const volatile *addr) { return (void *)load_u64((uintptr_t)addr); }
double tm_load_double(const volatile double *addr) {
  uint64_t bits = load_u64((uintptr_t)addr);
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* The common store, an aligned 8-byte word under etl-wb (not read-only) whose stripe is
 * unlocked with a version inside the snapshot, has no stack frame: it fills one write-set
 * entry as the lock's acquirer and takes the lock with one CAS, which is what etl_store
 * (stm.c) does in that case (no chain to search, no snapshot extension: l <= end). The
 * lock map is the inline load's (tm_fast_view_): under tm_view_off_ (outside a transaction,
 * irrevocable, ctl-wb, the mixing hash, another backend) every word maps to a locked word,
 * which is above every bound, so the one comparison l <= end also rules those out. Anything
 * else, a failed CAS included (nothing is published before it: the entry is reused),
 * continues in stm_store_word or tm_store_slow_ (tail calls). */
static inline __attribute__((always_inline)) void store_u64(uintptr_t a, uint64_t value) {
  tm_load_view_ *v = tm_fast_view_;
  if (TM_LIKELY((a & 7) == 0)) {
    uint64_t *lock = tm_view_lock_(v, a);
    uint64_t l = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
    tm_tx *tx = tm_view_tx(v); /* dereferenced only once l <= end showed v is one */
    if (TM_LIKELY(l <= __atomic_load_n(&v->end, __ATOMIC_RELAXED) && tx->mode == TM_MODE_ETL_WB &&
                  !stm_read_only(tx) && tx->wn < TM_WSET_MAX)) {
      size_t wn = tx->wn;
      tm_wentry *n = &tx->wset[wn];
      wentry_fill(n, a, tx, lock, NULL, l, tx->wlevel, 1);
      n->value = value;
      n->mask = ~UINT64_C(0);
      if (TM_LIKELY(__atomic_compare_exchange_n(lock, &l, locked_word(n), false, __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST))) {
        tx->wn = wn + 1;
        return;
      }
    }
    if (v != TM_VIEW_OFF_) { /* an etl attempt of this thread's descriptor */
      /* A stripe this etl-wb attempt holds (an update writing several fields of a node):
       * what etl_store does for a whole word. If this level has an entry for the word (the
       * chain's newest for it), its value becomes ours; else a new entry shadows the older
       * ones (a child's abort unlinks it and theirs reappear: no merge needed, the store
       * covers the whole word). A read-only attempt holds no lock (its first store aborts
       * it), so owned_by rules it out. */
      if ((l & 1) && owned_by(tx, l) && tx->mode == TM_MODE_ETL_WB &&
          TM_LIKELY(wb_store_held(tx, lock, l, a, value, ~UINT64_C(0))))
        return;
      stm_store_word(tx, a, value, ~UINT64_C(0));
      return;
    }
  }
  tm_store_slow_(tm_self, a, 8, value);
}

void tm_store_u64(volatile uint64_t *addr, uint64_t value) { store_u64((uintptr_t)addr, value); }
void tm_store_ptr(void *volatile *addr, void *value) {
  store_u64((uintptr_t)addr, (uint64_t)(uintptr_t)value);
}
void tm_store_double(volatile double *addr, double value) {
  uint64_t bits;
  memcpy(&bits, &value, sizeof bits);
  store_u64((uintptr_t)addr, bits);
}
