/* The word-based STM backend (TinySTM class; docs/stm.md):
 *   - a global version clock (tm_clock) and an ORT of versioned locks (stm_internal.h has
 *     the lock-word layout);
 *   - designs: ETL write-back (locks taken at the first store, values buffered, written at
 *     commit), ETL write-through (locks at the first store, memory written in place, undo
 *     values kept in the write set), CTL write-back (TL2-like: stores buffered and indexed
 *     by a hash table, locks taken at commit);
 *   - lazy snapshot algorithm (LSA): a read that sees a version newer than the snapshot
 *     extends the snapshot (validating the read set) instead of aborting, so every attempt
 *     observes a consistent state (opacity);
 *   - contention managers on a held lock: suicide, backoff (suicide + randomized
 *     exponential delay before the retry, tm_runtime.c), wait (bounded), kill (the older
 *     transaction marks the younger owner killed and waits; the younger aborts itself);
 *   - irrevocable mode: one transaction at a time holds tm_irrevocable; it writes in place
 *     under locks, waits instead of aborting, and writers that reach their commit while it
 *     runs abort (TM_ABORT_KILLED).
 * Invariants:
 *   I1 a stripe's memory changes only while its lock is held (by a writer) or in a
 *      non-transactional access;
 *   I2 a lock word is released with version ts only after every word written under it
 *      holds its final value, and ts was taken after all of the committer's locks were held;
 *   I3 every read-set entry (lock, seen) was observed unlocked with version seen <= end,
 *      and the read value was written by that version's committer. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm/stm_access.h"
#include "util/debug_assert.h"

tm_clock_line tm_clock;
tm_irrevocable_line tm_irrevocable;

static inline uint64_t clock_now(void) {
  return __atomic_load_n(&tm_clock.value, __ATOMIC_ACQUIRE);
}

/* ---- Set-up ---- */
/* Descriptors made so far. stm_thread_init runs once for every descriptor, before
 * tm_runtime.c publishes it in tm_all_descriptors(); descriptors are never freed, so the
 * count never goes down. The privatization barrier skips its walk while it is 1
 * (privatization_barrier). */
static unsigned stm_descriptors;

_Static_assert(offsetof(tm_tx, view) == 0 && sizeof(tm_load_view_) <= TM_CACHE_LINE,
               "the fields of the load fast path share the descriptor's first cache line");

static tm_mode design_mode(void) {
  switch (stm_cfg.design) {
  case TM_DESIGN_ETL_WT: return TM_MODE_ETL_WT;
  case TM_DESIGN_CTL_WB: return TM_MODE_CTL_WB;
  default: return TM_MODE_ETL_WB;
  }
}

void stm_thread_init(tm_tx *tx) {
  /* The fast load path's copy of the address-to-lock map (shift-mask only): the lock of a
   * word is ort_base + ((w >> ort_rshift) & ort_amask) when the stripe shift is at least
   * the entry size's log2. */
  tx->fast_ort = stm_cfg.hash == TM_HASH_SHIFT_MASK && stm_cfg.shift >= stm_cfg.ort_stride;
  tx->ort_base = (char *)stm_cfg.ort;
  tx->ort_rshift = stm_cfg.shift - (tx->fast_ort ? stm_cfg.ort_stride : 0);
  tx->ort_amask = stm_cfg.ort_mask << stm_cfg.ort_stride;
  /* What every revocable attempt starts with (stm_begin). */
  tx->begin_mode = design_mode();
  tx->begin_fast_view =
      tx->fast_ort && (tx->begin_mode == TM_MODE_ETL_WB || tx->begin_mode == TM_MODE_ETL_WT)
          ? &tx->view
          : TM_VIEW_OFF_;
  tx->plain_begin = tm_cfg.cm != TM_CM_KILL;
  tx->plain_commit = tm_cfg.cm != TM_CM_KILL && !(stm_cfg.attribution && stm_cfg.shift > 7);
  tx->wslot_mask = 255;
  tx->wslots = calloc(tx->wslot_mask + 1, sizeof *tx->wslots);
  if (!tx->wslots) tm_fatal("cannot allocate a transaction descriptor");
  _Static_assert(TM_RO_SCRATCH <= TM_RSET_INITIAL,
                 "a read-only attempt's scratch fits the initial read set");
  tx->wepoch = 1;
  __atomic_fetch_add(&stm_descriptors, 1, __ATOMIC_RELAXED); /* ordered by the publication */
}

void stm_rset_grow(tm_tx *tx) {
  size_t cap = (size_t)(tx->rfull - tx->rset + 1) * 2, n = tm_rn(tx);
  tm_rentry *r = realloc(tx->rset - 1, (cap + 1) * sizeof *r);
  if (!r) tm_fatal("out of memory growing a read set");
  tx->rset = r + 1;
  tm_rset_truncate(tx, n);
  tx->rlimit = tx->rfull = tx->rset + cap - 1;
}

/* Write-set entries are given up: their attempt ended (commit or rollback) or
 * their child level rolled back; they will be reused. Another thread may be walking a chain
 * of them to classify a conflict (stm_attribution.c): it re-checks the attempt counter, so
 * it changes first. Read-only attempts give up nothing and do not count. */
static inline void wset_retire(tm_tx *tx) {
  __atomic_store_n(&tx->attempt, tx->attempt + 1, __ATOMIC_RELEASE);
}

static _Noreturn void wset_overflow(void) { tm_fatal("a transaction wrote more than 2^20 words"); }

static tm_wentry *wentry_alloc(tm_tx *tx) {
  if (TM_UNLIKELY(tx->wn >= TM_WSET_MAX)) wset_overflow();
  return &tx->wset[tx->wn];
}

/* ---- Validation and snapshot extension ---- */

/* Index of the first read-set entry no longer valid, or SIZE_MAX. An entry is valid when
 * its lock still shows the version read, or we hold the lock and took it over that version. */
static size_t validate(const tm_tx *tx) {
  const tm_rentry *r = tx->rset;
  const tm_lock_map map = tm_lock_map_now();
  for (size_t i = 0, n = tm_rn(tx); i < n; i++) {
    uint64_t l = __atomic_load_n(tm_lock_of(&map, r[i].addr), __ATOMIC_ACQUIRE);
    if (TM_LIKELY(l == r[i].seen)) continue;
    if (!(l & 1) && tm_same_version(l, r[i].seen)) continue; /* restored (write-through) */
    if ((l & 1) && owned_by(tx, l) && tm_same_version(lock_head(l)->saved, r[i].seen)) continue;
    return i;
  }
  return SIZE_MAX;
}

static _Noreturn void abort_validation(tm_tx *tx, size_t bad, tm_abort_cause cause, uint64_t now) {
  tm_conflict_class cls = tm_classify_validation(tx, bad);
  unsigned level = tm_level_of_read(tx, bad);
  /* The reads before `bad` (all of the surviving levels' reads) are valid at `now`. */
  if (level > 1) __atomic_store_n(&tx->end, tm_snapshot_bound(now), __ATOMIC_RELAXED);
  tm_abort_conflict(tx, level, cause, cls);
}

static void check_killed(tm_tx *tx) {
  if (TM_UNLIKELY(__atomic_load_n(&tx->status, __ATOMIC_ACQUIRE) == TM_STATUS_KILLED))
    tm_abort_conflict(tx, 1, TM_ABORT_KILLED,
                      (tm_conflict_class)__atomic_load_n(&tx->kill_class, __ATOMIC_RELAXED));
}

/* A read-only attempt could not go on without a read set: the block restarts with one, and
 * the next blocks load the clock (an old snapshot makes such restarts likelier). */
static _Noreturn void restart_read_only(tm_tx *tx) {
  tx->fresh_begins = TM_FRESH_BEGINS;
  tm_abort_read_only(tx);
}

/* Extends the snapshot to the current clock, or aborts with `cause`. The new `end` is
 * installed by CAS: if tm_request_validation reset it meanwhile, validate again. */
static void extend_or_abort(tm_tx *tx, tm_abort_cause cause) {
  /* A read-only attempt has no read set to validate: it cannot extend. */
  if (TM_UNLIKELY(stm_read_only(tx))) restart_read_only(tx);
  for (;;) {
    uint64_t before = __atomic_load_n(&tx->end, __ATOMIC_RELAXED);
    uint64_t now = clock_now();
    size_t bad = validate(tx);
    if (bad != SIZE_MAX) abort_validation(tx, bad, cause, now);
    if (__atomic_compare_exchange_n(&tx->end, &before, tm_snapshot_bound(now), false,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      tx->clock_seen = now;
      break;
    }
  }
  if (tm_cfg.cm == TM_CM_KILL) check_killed(tx);
}

/* ---- Contention management: another transaction holds `lock` (word l) ---- */

static bool holds_locks(const tm_tx *tx) {
  if (tx->mode == TM_MODE_CTL_WB) return tx->ctl_locked > 0;
  return tx->wn > 0;
}

void stm_wait_after_abort(tm_tx *tx) {
  if (!tx->wait_lock) return;
  for (unsigned i = 0; i < stm_cfg.wait_spins; i++) {
    if (__atomic_load_n(tx->wait_lock, __ATOMIC_ACQUIRE) != tx->wait_word) break;
    tm_pause_or_yield(i);
  }
  tx->wait_lock = NULL;
}

/* Returns the lock word to retry with once it changed, or aborts this transaction. */
static uint64_t on_locked(tm_tx *tx, uint64_t *lock, uint64_t l, uintptr_t w,
                          tm_abort_cause cause) {
  if (tx->mode == TM_MODE_IRREVOCABLE) { /* never aborts: the owner will go */
    for (unsigned i = 0;; i++) {
      uint64_t now = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
      if (now != l) return now;
      tm_pause_or_yield(i);
    }
  }
  unsigned spins = 0;
  if (tm_cfg.cm == TM_CM_WAIT) {
    /* Waiting while holding locks lets two writers wait for each other (with many threads
     * on few cores, bounded waits then turn into a near-livelock): a transaction that holds
     * locks aborts first and waits for the release before its retry (stm_wait_after_abort,
     * TinySTM's CM_DELAY); one that holds none waits in place. */
    if (holds_locks(tx)) {
      tx->wait_lock = lock;
      tx->wait_word = l;
    } else {
      spins = stm_cfg.wait_spins;
    }
  }
  if (tm_cfg.cm == TM_CM_KILL) {
    check_killed(tx);
    tm_tx *owner = __atomic_load_n(&lock_head(l)->tx, __ATOMIC_RELAXED);
    if (owner && __atomic_load_n(&owner->prio, __ATOMIC_RELAXED) > tx->prio) {
      /* We are older: kill the owner (it aborts at its next check or at its commit) and
       * wait for the lock. */
      uint64_t expected = TM_STATUS_ACTIVE;
      __atomic_store_n(&owner->kill_class, (uint64_t)tm_classify_locked(lock, l, w),
                       __ATOMIC_RELAXED);
      __atomic_compare_exchange_n(&owner->status, &expected, TM_STATUS_KILLED, false,
                                  __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
      spins = stm_cfg.wait_spins;
    }
  }
  for (unsigned i = 0; i < spins; i++) {
    tm_pause_or_yield(i);
    uint64_t now = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
    if (now != l) return now;
    if (tm_cfg.cm == TM_CM_KILL) check_killed(tx);
  }
  tm_abort_conflict(tx, tm_conflict_level(tx), cause, tm_classify_locked(lock, l, w));
}

/* ---- Loads ---- */

/* A consistent read of word w (adds it to the read set). */
static uint64_t read_consistent(tm_tx *tx, uintptr_t w) {
  uint64_t *lock = tm_ort_lock(w);
  uint64_t l = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
  for (;;) {
    if (l & 1) {
      if (owned_by(tx, l)) return read_own(tx, l, w);
      l = on_locked(tx, lock, l, w, TM_ABORT_READ_LOCKED);
      continue;
    }
    uint64_t v = word_read(w);
    uint64_t l2 = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
    if (TM_UNLIKELY(l2 != l)) {
      l = l2;
      continue;
    }
    if (l > __atomic_load_n(&tx->end, __ATOMIC_RELAXED)) {
      /* The version is <= the clock, so after a successful extension it is inside the
       * snapshot. But the extension validated the earlier reads only: this one may have
       * been overwritten between our read and the extension's clock read (by a commit the
       * new snapshot includes), so the lock must still show the version we read. */
      extend_or_abort(tx, TM_ABORT_VALIDATE_READ);
      l2 = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
      if (TM_UNLIKELY(l2 != l)) {
        l = l2;
        continue;
      }
    }
    /* I3: unlocked, and inside the snapshot checked above (not tx->end again: another
     * thread's tm_request_validation may have reset it since); a committed version never
     * runs ahead of the clock. */
    TXALLOC_ASSERT(!(l & 1) && tm_word_version(l) <= clock_now());
    rset_push(tx, l, w);
    return v;
  }
}

/* Irrevocable: no other writer commits while we run (they abort at their commit), and
 * those that passed that point before hold their locks until their values are in memory.
 * But a revocable etl-wt writer may still lock a stripe and write in place (it aborts only
 * at its commit, restoring the word): a value counts only if the lock word is unchanged
 * around its read (a restore never gives back the old word, rollback_in_place), else an
 * increment could read a value that is then rolled back. */
static uint64_t read_irrevocable(tm_tx *tx, uintptr_t w) {
  uint64_t *lock = tm_ort_lock(w);
  uint64_t l = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
  for (;;) {
    while ((l & 1) && !owned_by(tx, l)) l = on_locked(tx, lock, l, w, TM_ABORT_READ_LOCKED);
    uint64_t v = word_read(w);
    if (l & 1) return v; /* our lock: our own value, in place */
    uint64_t again = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
    if (again == l) return v;
    l = again;
  }
}

static inline uint64_t bloom_bit(uintptr_t w) { return UINT64_C(1) << ((w >> 3) & 63); }

static inline size_t wslot_hash(uintptr_t w, size_t mask) {
  return (size_t)(((w >> 3) * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & mask;
}

static tm_wentry *ctl_find(tm_tx *tx, uintptr_t w) {
  for (size_t i = wslot_hash(w, tx->wslot_mask);; i = (i + 1) & tx->wslot_mask) {
    tm_wslot *s = &tx->wslots[i];
    if (s->epoch != tx->wepoch) return NULL;
    if (s->addr == w) return &tx->wset[s->index];
  }
}

uint64_t stm_load_word(tm_tx *tx, uintptr_t w) {
  switch (tx->mode) {
  case TM_MODE_IRREVOCABLE: return read_irrevocable(tx, w);
  case TM_MODE_CTL_WB:
    if (tx->bloom & bloom_bit(w)) {
      tm_wentry *e = ctl_find(tx, w);
      if (e) {
        if (e->mask == ~UINT64_C(0)) return e->value;
        return (read_consistent(tx, w) & ~e->mask) | (e->value & e->mask);
      }
    }
    return read_consistent(tx, w);
  default: return read_consistent(tx, w);
  }
}

/* ---- Stores ---- */

/* Encounter-time locking (write-back, write-through, and irrevocable in place). */
static void etl_store(tm_tx *tx, uintptr_t w, uint64_t value, uint64_t mask) {
  const bool in_place = tx->mode != TM_MODE_ETL_WB;
  uint64_t *lock = tm_ort_lock(w);
  uint64_t l = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
  for (;;) {
    if (l & 1) {
      if (!owned_by(tx, l)) {
        l = on_locked(tx, lock, l, w, TM_ABORT_WRITE_LOCKED);
        continue;
      }
      if (!in_place) {
        if (!wb_store_held(tx, lock, l, w, value, mask)) wset_overflow();
        return;
      }
      /* In place: the entry keeps the undo bytes, memory gets ours. */
      tm_wentry *head = lock_head(l);
      tm_wentry *e = chain_find(head, w);
      if (e && e->level == tx->wlevel) { /* this level wrote the word already */
        e->value = (e->value & e->mask) | (word_read(w) & ~e->mask);
        e->mask |= mask;
        word_write(w, value, mask);
        return;
      }
      /* First store of this level to w: a new entry shadows the older one (a child's
       * abort removes it and the older undo bytes reappear). */
      tm_wentry *n = wentry_alloc(tx);
      wentry_fill(n, w, tx, lock, head, head->saved, tx->wlevel, 0);
      n->value = word_read(w);
      n->mask = mask;
      word_write(w, value, mask);
      tx->wn++;
      __atomic_store_n(lock, locked_word(n), __ATOMIC_RELEASE);
      return;
    }
    tm_wentry *n = wentry_alloc(tx);
    wentry_fill(n, w, tx, lock, NULL, l, tx->wlevel, 1);
    n->value = value & mask;
    n->mask = mask;
    if (!__atomic_compare_exchange_n(lock, &l, locked_word(n), false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
      continue;
    tx->wn++;
    if (in_place) {
      n->value = word_read(w); /* undo: the committed word (stable: we hold the lock) */
    }
    /* Reads of other words of this stripe now come from memory at version l: it must be
     * inside the snapshot. */
    if (l > __atomic_load_n(&tx->end, __ATOMIC_RELAXED) && tx->mode != TM_MODE_IRREVOCABLE)
      extend_or_abort(tx, TM_ABORT_VALIDATE_EXTEND);
    TXALLOC_ASSERT(owned_by(tx, __atomic_load_n(lock, __ATOMIC_RELAXED))); /* I1 */
    if (in_place) word_write(w, value, mask);
    return;
  }
}

static void ctl_index_insert(tm_tx *tx, uintptr_t w, size_t index);

static void ctl_index_rebuild(tm_tx *tx, size_t entries) {
  if (++tx->wepoch == 0) {
    memset(tx->wslots, 0, (tx->wslot_mask + 1) * sizeof *tx->wslots);
    tx->wepoch = 1;
  }
  tx->bloom = 0;
  for (size_t i = 0; i < entries; i++) {
    ctl_index_insert(tx, tx->wset[i].addr, i);
    tx->bloom |= bloom_bit(tx->wset[i].addr);
  }
}

static void ctl_index_insert(tm_tx *tx, uintptr_t w, size_t index) {
  if ((index + 1) * 2 > tx->wslot_mask + 1) { /* keep the load factor <= 1/2 */
    size_t slots = (tx->wslot_mask + 1) * 2;
    tm_wslot *s = calloc(slots, sizeof *s);
    if (!s) tm_fatal("out of memory growing a write-set index");
    free(tx->wslots);
    tx->wslots = s;
    tx->wslot_mask = slots - 1;
    tx->wepoch = 1;
    for (size_t i = 0; i < index; i++) ctl_index_insert(tx, tx->wset[i].addr, i);
  }
  for (size_t i = wslot_hash(w, tx->wslot_mask);; i = (i + 1) & tx->wslot_mask) {
    tm_wslot *s = &tx->wslots[i];
    if (s->epoch != tx->wepoch || s->addr == w) {
      s->addr = w;
      s->index = (uint32_t)index;
      s->epoch = tx->wepoch;
      return;
    }
  }
}

/* Commit-time locking: buffer the store; the index maps w to its newest entry. */
static void ctl_store(tm_tx *tx, uintptr_t w, uint64_t value, uint64_t mask) {
  tm_wentry *e = (tx->bloom & bloom_bit(w)) ? ctl_find(tx, w) : NULL;
  if (e && e->level == tx->wlevel) {
    e->value = (e->value & ~mask) | (value & mask);
    e->mask |= mask;
    return;
  }
  tm_wentry *n = wentry_alloc(tx);
  wentry_fill(n, w, tx, tm_ort_lock(w), NULL, 0, tx->wlevel, 0);
  uint64_t old = e ? e->value : 0, old_mask = e ? e->mask : 0;
  n->value = (old & ~mask) | (value & mask);
  n->mask = old_mask | mask;
  ctl_index_insert(tx, w, tx->wn);
  tx->wn++;
  tx->bloom |= bloom_bit(w);
}

void stm_store_word(tm_tx *tx, uintptr_t w, uint64_t value, uint64_t mask) {
  /* The read-only hint was wrong: the reads so far were not recorded. */
  if (TM_UNLIKELY(stm_read_only(tx))) restart_read_only(tx);
  if (tx->mode == TM_MODE_CTL_WB)
    ctl_store(tx, w, value, mask);
  else
    etl_store(tx, w, value, mask);
}

/* ---- Begin, commit, rollback ---- */

void stm_irrevocable_acquire(tm_tx *tx) {
  for (unsigned i = 0;; i++) {
    tm_tx *expected = NULL;
    if (__atomic_load_n(&tm_irrevocable.owner, __ATOMIC_RELAXED) == NULL &&
        __atomic_compare_exchange_n(&tm_irrevocable.owner, &expected, tx, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      return;
    tm_pause_or_yield(i);
  }
}

void stm_irrevocable_release(tm_tx *tx) {
  (void)tx;
  __atomic_store_n(&tm_irrevocable.owner, NULL, __ATOMIC_SEQ_CST);
}

bool stm_try_become_irrevocable(tm_tx *tx) {
  tm_tx *expected = NULL;
  /* Nothing accessed yet (a read-only attempt records no reads: it restarts instead). */
  if (tx->depth != 1 || tm_rn(tx) != 0 || tx->wn != 0 || stm_read_only(tx)) return false;
  if (!__atomic_compare_exchange_n(&tm_irrevocable.owner, &expected, tx, false, __ATOMIC_SEQ_CST,
                                   __ATOMIC_RELAXED))
    return false;
  tx->mode = TM_MODE_IRREVOCABLE;
  tx->irrevocable = true;
  tm_fast_view_ = TM_VIEW_OFF_;
  return true;
}

void stm_begin(tm_tx *tx, bool irrevocable, bool fresh, bool read_only) {
  tm_mode mode = tx->begin_mode;
  tm_load_view_ *fast_view = tx->begin_fast_view;
  if (TM_UNLIKELY(irrevocable)) {
    stm_irrevocable_acquire(tx);
    mode = TM_MODE_IRREVOCABLE;
    tx->irrevocable = true;
    fast_view = TM_VIEW_OFF_;
  } else {
    /* New transactions wait while an irrevocable one runs (it would make them abort). */
    for (unsigned i = 0; __atomic_load_n(&tm_irrevocable.owner, __ATOMIC_ACQUIRE); i++)
      tm_pause_or_yield(i);
  }
  /* bloom is only ever set under CTL (ctl_store). */
  if (tx->bloom && mode == TM_MODE_CTL_WB) ctl_index_rebuild(tx, 0);
  uint64_t now = stm_begin_attempt(tx, mode, fast_view, read_only && !irrevocable, false);
  /* prio and status are read and changed only by the kill contention manager: under any
   * other cm, status stays TM_STATUS_ACTIVE (its initial value) and prio is never read. */
  if (tm_cfg.cm == TM_CM_KILL) {
    if (fresh) __atomic_store_n(&tx->prio, (now << 16) | (tx->id & 0xffff), __ATOMIC_RELAXED);
    __atomic_store_n(&tx->status, TM_STATUS_ACTIVE, __ATOMIC_RELEASE);
  }
}

/* CTL: take the locks of every buffered word; entries of one lock form its chain. */
static void ctl_acquire(tm_tx *tx) {
  for (size_t i = tx->ctl_locked; i < tx->wn; i++) {
    tm_wentry *e = &tx->wset[i];
    uint64_t *lock = e->lock;
    uint64_t l = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
    for (;;) {
      if (l & 1) {
        if (owned_by(tx, l)) {
          tm_wentry *head = lock_head(l);
          __atomic_store_n(&e->next, head, __ATOMIC_RELAXED);
          __atomic_store_n(&e->saved, head->saved, __ATOMIC_RELAXED);
          e->acquired = 0;
          __atomic_store_n(lock, locked_word(e), __ATOMIC_RELEASE);
          break;
        }
        l = on_locked(tx, lock, l, e->addr, TM_ABORT_WRITE_LOCKED);
        continue;
      }
      __atomic_store_n(&e->next, NULL, __ATOMIC_RELAXED);
      __atomic_store_n(&e->saved, l, __ATOMIC_RELAXED);
      e->acquired = 1;
      if (__atomic_compare_exchange_n(lock, &l, locked_word(e), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST))
        break;
    }
    tx->ctl_locked = i + 1;
  }
}

/* Releases the locks of entries [0, n) with version word `version`, each after recording
 * the commit under it for conflict attribution (the summary is stored before the release
 * that publishes it). */
static inline __attribute__((always_inline)) void release_all(tm_tx *tx, size_t n,
                                                              uint64_t version) {
  tm_wentry *ws = tx->wset;
  const bool attribution = stm_cfg.attribution;
  for (size_t i = 0; i < n; i++) {
    if (!ws[i].acquired) continue;
    uint64_t *lock = ws[i].lock;
    if (attribution)
      tm_record_commit(lock, lock_head(__atomic_load_n(lock, __ATOMIC_RELAXED)), ws[i].saved);
    __atomic_store_n(lock, version, __ATOMIC_RELEASE);
  }
}

/* Write-back commit (etl-wb, ctl-wb), every lock held and ts taken: writes the buffered
 * words back and releases every lock with version word `version`, in one pass over the
 * entries in order. A lock's chain holds entries in the order they were made (etl_store and
 * ctl_acquire push each new entry as the head; a child's rollback unlinks its newest ones
 * and truncates the set), so its head, which the lock word points to, is its last entry in
 * the set: when the pass reaches it, every word written under the lock holds its final
 * value (I2), and the summary is recorded from it (its `saved` is the acquirer's). Entries
 * of one word are all in its lock's chain and are written oldest first, so the newest
 * (merged) value is the one that stays. */
static inline __attribute__((always_inline)) void write_back_release(tm_tx *tx, uint64_t version) {
  tm_wentry *ws = tx->wset;
  /* 0: no summaries; 1: inline (stripes of at most 16 words); 2: the general case */
  const unsigned summary = !stm_cfg.attribution ? 0 : stm_cfg.shift <= 7 ? 1 : 2;
  for (size_t i = 0, n = tx->wn; i < n; i++) {
    tm_wentry *e = &ws[i];
    TXALLOC_ASSERT(owned_by(tx, __atomic_load_n(e->lock, __ATOMIC_RELAXED))); /* I1 */
    word_write(e->addr, e->value, e->mask);
    uint64_t *lock = e->lock;
    /* Our own lock word: only we change it while we hold it. */
    if (__atomic_load_n(lock, __ATOMIC_RELAXED) != locked_word(e)) continue; /* not the head */
    if (summary == 1)
      tm_record_commit_chain(lock, e, e->saved);
    else if (summary)
      tm_record_commit_general(lock, e, e->saved);
    TXALLOC_ASSERT(tm_word_version(version) > tm_word_version(e->saved)); /* I2 */
    __atomic_store_n(lock, version, __ATOMIC_RELEASE);
  }
}

/* Privatization safety for write-back: a transaction with an older timestamp may still be
 * writing back when we have committed; if our commit made some memory private (unlinked
 * it), our thread may then read it without the STM and must see those writes. So after
 * our release we wait until no committer with an older (or not yet known) timestamp is
 * still writing back. Committers never wait for anything while they write back, so the
 * wait is short and cannot deadlock. */
static __attribute__((noinline)) void privatization_wait(tm_tx *tx, uint64_t ts) {
  for (tm_tx *d = tm_all_descriptors(); d; d = d->all_next) {
    if (d == tx) continue;
    for (unsigned i = 0;; i++) {
      uint64_t v = __atomic_load_n(&d->wb_ts, __ATOMIC_ACQUIRE);
      if (v == 0 || v > ts) break;
      tm_pause_or_yield(i);
    }
  }
}

/* With one descriptor in existence, ours, there is nobody to wait for, and a thread that
 * registers concurrently cannot change that. Only a committer with a timestamp below ts
 * must be waited for (one with a larger timestamp took it after ours and is not older; one
 * still pending has not taken it yet, so it will get a larger one: waiting for it is only
 * conservative). Let T2 be such a committer, timestamp ts2 < ts. Its descriptor was counted
 * (stm_thread_init) before its thread's first transaction, so before its fetch-and-add of
 * the clock. The clock is only ever changed by read-modify-writes (sequentially consistent,
 * so release and acquire), hence our fetch-and-add, which comes after T2's in the clock's
 * modification order, reads the end of a release sequence headed by T2's: T2's increment
 * of the count happens before our load of it, which therefore sees at least 2, and we walk
 * (and see T2's wb_ts, PENDING or ts2, by the same argument, as the walk always did). A
 * count of 1 read after our fetch-and-add thus proves that no older committer exists. Our
 * own wb_ts is announced and reset as always: a thread that registers later and commits
 * after us reads it. */
static inline __attribute__((always_inline)) void privatization_barrier(tm_tx *tx, uint64_t ts) {
  __atomic_store_n(&tx->wb_ts, 0, __ATOMIC_RELEASE);
  if (__atomic_load_n(&stm_descriptors, __ATOMIC_RELAXED) > 1) privatization_wait(tx, ts);
}

/* An update commit once every lock is held and the timestamp ts is taken (with wb_ts
 * PENDING under privatization): validation unless nobody committed since our snapshot,
 * write-back, release, the privatization barrier. */
static __attribute__((noinline)) void commit_publish(tm_tx *tx, uint64_t ts) {
  /* I2: ts was taken with every lock held */
  TXALLOC_ASSERT(tx->mode != TM_MODE_CTL_WB || tx->ctl_locked == tx->wn);
  if (tm_snapshot_bound(ts - 1) !=
      __atomic_load_n(&tx->end, __ATOMIC_RELAXED)) { /* commits since */
    size_t bad = validate(tx);
    if (bad != SIZE_MAX) {
      tm_conflict_class cls = tm_classify_validation(tx, bad);
      tm_abort_conflict(tx, 1, TM_ABORT_VALIDATE_COMMIT, cls);
    }
  }
  if (stm_cfg.privatization) __atomic_store_n(&tx->wb_ts, ts, __ATOMIC_RELAXED);
  if (tx->mode != TM_MODE_ETL_WT)
    write_back_release(tx, tm_version_word(ts));
  else
    release_all(tx, tx->wn, tm_version_word(ts));
  wset_retire(tx);
  tx->ctl_locked = 0;
  if (stm_cfg.privatization) privatization_barrier(tx, ts);
}

/* Every commit but stm_commit's common case. */
static __attribute__((noinline)) void commit_general(tm_tx *tx) {
  if (tx->mode == TM_MODE_IRREVOCABLE) {
    if (tx->wn) {
      uint64_t ts = __atomic_add_fetch(&tm_clock.value, 1, __ATOMIC_SEQ_CST);
      release_all(tx, tx->wn, tm_version_word(ts));
      wset_retire(tx);
    }
    stm_irrevocable_release(tx);
    return;
  }
  if (tx->wn == 0) return; /* read-only: consistent at `end` (LSA), nothing to publish */
  if (tx->mode == TM_MODE_CTL_WB) ctl_acquire(tx);
  /* All our locks are held (sequentially consistent CAS); an irrevocable transaction that
   * set the flag before this load waits for them, one that sets it later sees them. */
  if (TM_UNLIKELY(__atomic_load_n(&tm_irrevocable.owner, __ATOMIC_SEQ_CST) != NULL))
    tm_abort_conflict(tx, 1, TM_ABORT_KILLED, TM_CLASS_UNKNOWN);
  if (tm_cfg.cm == TM_CM_KILL) {
    uint64_t expected = TM_STATUS_ACTIVE;
    if (!__atomic_compare_exchange_n(&tx->status, &expected, TM_STATUS_COMMITTING, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      check_killed(tx);
  }
  /* Announce the commit before taking the timestamp (the RMW orders the store). */
  if (stm_cfg.privatization) __atomic_store_n(&tx->wb_ts, TM_WB_PENDING, __ATOMIC_RELAXED);
  uint64_t ts = __atomic_add_fetch(&tm_clock.value, 1, __ATOMIC_SEQ_CST);
  tx->clock_seen = ts;
  commit_publish(tx, ts);
}

/* An etl-wb update commit of several entries, or of one partial word, when cm != kill, the
 * summaries are inline (tx->plain_commit) and no irrevocable transaction runs (stm_commit
 * checked both while holding every lock): what commit_general and commit_publish do for it,
 * in the same order, without their tests and one of their frames; ctl_locked is 0 already
 * (only a CTL commit sets it, and resets it). */
static __attribute__((noinline)) void commit_wb(tm_tx *tx) {
  if (tx->wn == 0) return; /* read-only: consistent at `end` (LSA), nothing to publish */
  const bool privatization = stm_cfg.privatization;
  /* Announce the commit before taking the timestamp (the RMW orders the store). */
  if (privatization) __atomic_store_n(&tx->wb_ts, TM_WB_PENDING, __ATOMIC_RELAXED);
  uint64_t ts = __atomic_add_fetch(&tm_clock.value, 1, __ATOMIC_SEQ_CST);
  tx->clock_seen = ts;
  if (TM_UNLIKELY(tm_snapshot_bound(ts - 1) != __atomic_load_n(&tx->end, __ATOMIC_RELAXED))) {
    commit_publish(tx, ts); /* commits since our snapshot: validate first */
    return;
  }
  if (privatization) __atomic_store_n(&tx->wb_ts, ts, __ATOMIC_RELAXED);
  write_back_release(tx, tm_version_word(ts));
  wset_retire(tx);
  if (privatization) privatization_barrier(tx, ts);
}

/* The common update commit has no stack frame: etl-wb, one entry (one word written, so
 * one lock, which that entry acquired: the lock word points to it and it ends its chain),
 * a whole word, cm != kill and a summary that tm_record_commit_word can compute
 * (attribution off, or shift <= 7: tx->plain_commit), no irrevocable transaction running,
 * and no commit since our snapshot (else commit_publish validates). It does what
 * commit_general and commit_publish do for such a transaction, in the same order;
 * ctl_locked is 0 already (only a CTL commit sets it, and resets it). The other etl-wb
 * commits with tx->plain_commit go on in commit_wb, every other one in commit_general. */
void stm_commit(tm_tx *tx) {
  tm_wentry *e = tx->wset;
  /* All our locks are held (sequentially consistent CAS); an irrevocable transaction that
   * set the flag before this load waits for them, one that sets it later sees them. */
  if (TM_UNLIKELY(tx->mode != TM_MODE_ETL_WB || !tx->plain_commit ||
                  __atomic_load_n(&tm_irrevocable.owner, __ATOMIC_SEQ_CST) != NULL)) {
    commit_general(tx);
    return;
  }
  if (TM_UNLIKELY(tx->wn != 1 || e->mask != ~UINT64_C(0))) {
    commit_wb(tx);
    return;
  }
  const bool privatization = stm_cfg.privatization;
  if (privatization) __atomic_store_n(&tx->wb_ts, TM_WB_PENDING, __ATOMIC_RELAXED);
  uint64_t ts = __atomic_add_fetch(&tm_clock.value, 1, __ATOMIC_SEQ_CST);
  tx->clock_seen = ts;
  if (TM_UNLIKELY(tm_snapshot_bound(ts - 1) != __atomic_load_n(&tx->end, __ATOMIC_RELAXED))) {
    commit_publish(tx, ts);
    return;
  }
  if (privatization) __atomic_store_n(&tx->wb_ts, ts, __ATOMIC_RELAXED);
  uintptr_t w = e->addr;
  uint64_t *lock = e->lock;
  TXALLOC_ASSERT(__atomic_load_n(lock, __ATOMIC_RELAXED) == locked_word(e)); /* I1 */
  word_write(w, e->value, ~UINT64_C(0));
  if (stm_cfg.attribution) tm_record_commit_word(lock, w, e->saved);
  __atomic_store_n(lock, tm_version_word(ts), __ATOMIC_RELEASE);
  wset_retire(tx);
  if (privatization) privatization_barrier(tx, ts);
}

/* Write-through: restores the words written by entries [mark, wn) and releases (or
 * unlinks) their locks. A restored stripe never gets its old lock word back: a reader may
 * have seen our uncommitted bytes between two loads of an unchanged lock word. It gets the
 * same version with the next incarnation (its content is that version's again, so other
 * transactions' reads of it stay valid), or after 7 incarnations a new version. */
static void rollback_in_place(tm_tx *tx, size_t mark) {
  tm_wentry *ws = tx->wset;
  for (size_t i = tx->wn; i-- > mark;) word_write(ws[i].addr, ws[i].value, ws[i].mask);
  uint64_t fresh = 0; /* a new version word, taken once if some stripe needs one */
  for (size_t i = tx->wn; i-- > mark;) {
    if (!ws[i].acquired) {
      __atomic_store_n(ws[i].lock, locked_word(ws[i].next), __ATOMIC_RELEASE);
      continue;
    }
    uint64_t word = ws[i].saved + TM_INC_ONE;
    if ((ws[i].saved & TM_INC_MASK) == TM_INC_MASK) {
      if (!fresh) fresh = tm_version_word(__atomic_add_fetch(&tm_clock.value, 1, __ATOMIC_SEQ_CST));
      word = fresh;
      /* Our surviving reads of this stripe saw the content we restored. */
      const tm_lock_map map = tm_lock_map_now();
      for (size_t r = 0, n = tm_rn(tx); r < n; r++)
        if (tm_same_version(tx->rset[r].seen, ws[i].saved) &&
            tm_lock_of(&map, tx->rset[r].addr) == ws[i].lock)
          tx->rset[r].seen = word;
    }
    if (stm_cfg.attribution) tm_record_commit(ws[i].lock, NULL, ws[i].saved);
    __atomic_store_n(ws[i].lock, word, __ATOMIC_RELEASE);
  }
  tx->wn = mark;
}

void stm_rollback(tm_tx *tx, unsigned level) {
  size_t wmark = level == 1 ? 0 : tx->levels[level]->wset_mark;
  size_t rmark = level == 1 ? 0 : tx->levels[level]->rset_mark;
  tm_rset_truncate(tx, rmark);
  if (level == 1 && tx->wb_ts) __atomic_store_n(&tx->wb_ts, 0, __ATOMIC_RELEASE);
  size_t wn = tx->wn;
  tm_wentry *ws = tx->wset;
  switch (tx->mode) {
  case TM_MODE_ETL_WT:
  case TM_MODE_IRREVOCABLE:
    rollback_in_place(tx, wmark);
    if (level == 1 && tx->mode == TM_MODE_IRREVOCABLE) stm_irrevocable_release(tx);
    break;
  case TM_MODE_CTL_WB:
    if (level == 1) {
      for (size_t i = 0; i < tx->ctl_locked; i++)
        if (ws[i].acquired) __atomic_store_n(ws[i].lock, ws[i].saved, __ATOMIC_RELEASE);
      tx->ctl_locked = 0;
    }
    tx->wn = wmark;
    ctl_index_rebuild(tx, wmark);
    break;
  default: /* ETL write-back: memory is untouched; newest entries are chain heads */
    for (size_t i = tx->wn; i-- > wmark;) {
      uint64_t word = ws[i].acquired ? ws[i].saved : locked_word(ws[i].next);
      __atomic_store_n(ws[i].lock, word, __ATOMIC_RELEASE);
    }
    tx->wn = wmark;
  }
  if (wn > wmark) wset_retire(tx);
}

void stm_merge_child(tm_tx *tx, unsigned child) {
  for (size_t i = tx->levels[child]->wset_mark; i < tx->wn; i++) tx->wset[i].level = child - 1;
}
