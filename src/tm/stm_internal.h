/* The STM backend's internal definitions, shared by its files (stm*.c) and their tests: its
 * configuration, the ownership-record table (ORT) and its lock words, the global clock,
 * irrevocability, read-only attempts and conflict attribution. See docs/stm.md. */
#ifndef TXALLOC_TM_STM_INTERNAL_H
#define TXALLOC_TM_STM_INTERNAL_H

#include "tm/tm_backend.h"

typedef enum { TM_DESIGN_ETL_WB, TM_DESIGN_ETL_WT, TM_DESIGN_CTL_WB } tm_design;
typedef enum { TM_HASH_SHIFT_MASK, TM_HASH_MIX } tm_hash_kind;

/* The STM's modes (tx->mode). Revocable modes are light (tm_internal.h): a read-only
 * attempt of theirs is consistent at its snapshot (LSA) and has nothing to publish. */
enum {
  TM_MODE_ETL_WB = 1,
  TM_MODE_ETL_WT,
  TM_MODE_CTL_WB,
  TM_MODE_IRREVOCABLE = TM_MODE_HEAVY, /* serial: in-place writes under locks, never aborts */
};

/* ---- The ORT. Lock word layout (one uint64_t per lock):
 *
 *   unlocked:  | 0 | version (59 bits)                 | incarnation (3 bits) | 0 |
 *   locked:    | 1 | address of the owner's newest write-set entry for it  | 1 |
 *
 * Bit 63 makes every locked word larger than every snapshot bound (versions stay below
 * 2^59: a billion commits a second for 18 years), so the load fast path's one comparison
 * with the bound (tm.h's tm_load_try_) also rejects locked stripes. Bit 0 tells the two
 * kinds apart everywhere else. */
#define TM_LOCKED_BITS (UINT64_C(1) << 63 | 1)
/*
 * version: the commit timestamp (global clock value) of the last transaction that wrote
 * a stripe mapped to this lock; incarnation: write-through rollbacks since (see below). Write-set
 * entries are 64-byte aligned, so bit 0 of their address is free. The owner's entries for one lock
 * form a chain (newest first) through tm_wentry.next; the chain's last entry (`acquired`) took the
 * lock and keeps the unlocked word it replaced (`saved`, copied into every newer entry of the
 * chain). Entries live in a per-descriptor region that never moves or goes away, so another thread
 * may follow a lock word it read (to find the owner, or to classify a conflict) even if the owner
 * has moved on; it re-checks the lock word afterwards. ---- */
typedef struct stm_config {
  tm_design design;
  tm_hash_kind hash;
  unsigned ort_log2, shift;
  uint64_t ort_mask;
  unsigned wait_spins;
  bool attribution;
  bool privatization;       /* write-back commits wait for older write-backs (stm.c) */
  unsigned ort_stride;      /* log2 bytes per ORT entry: 3 (lock word), 4 (+ summary word) */
  uint64_t word_index_mask; /* word index inside a stripe, for attribution bitmaps */
  uint64_t *ort;            /* 2^ort_log2 entries */
} stm_config;
extern stm_config stm_cfg;

/* Unlocked lock words: version << 4 | incarnation << 1. A write-through rollback restores
 * the stripe's bytes and bumps the incarnation (not the version: the content is that of
 * the version again), so a reader's re-check of the whole word catches the ABA while
 * validation, which compares versions only, does not fail; after 7 incarnations the
 * rollback takes a new version instead. */
#define TM_VERSION_SHIFT 4
#define TM_INC_MASK UINT64_C(0xE)
#define TM_INC_ONE UINT64_C(0x2) /* one incarnation */
static inline uint64_t tm_version_word(uint64_t version) { return version << TM_VERSION_SHIFT; }
static inline uint64_t tm_word_version(uint64_t word) { return word >> TM_VERSION_SHIFT; }
/* The snapshot bound `end` for a snapshot at clock value `now`: above every unlocked word
 * of a version <= now, whatever its incarnation. */
static inline uint64_t tm_snapshot_bound(uint64_t now) {
  return tm_version_word(now) | TM_INC_MASK;
}
static inline bool tm_same_version(uint64_t a, uint64_t b) { return ((a ^ b) & ~TM_INC_MASK) == 0; }

/* The global version clock, alone on its cache line. */
typedef struct {
  _Alignas(TM_CACHE_LINE) uint64_t value;
  char pad_[TM_CACHE_LINE - sizeof(uint64_t)];
} tm_clock_line;
extern tm_clock_line tm_clock;

/* Irrevocability: the descriptor of the irrevocable transaction, or NULL. Writers check it
 * (sequentially consistent) after holding all their locks and before taking a timestamp;
 * the irrevocable transaction sets it (CAS) before its first access. */
typedef struct {
  _Alignas(TM_CACHE_LINE) struct tm_tx *owner;
  char pad_[TM_CACHE_LINE - sizeof(void *)];
} tm_irrevocable_line;
extern tm_irrevocable_line tm_irrevocable;

/* The map from a word's address to its lock, as values: a loop over many addresses (the
 * read set's validation and attribution, a write-through rollback) takes it once, where
 * tm_cfg's fields would be loaded again after every acquire load of a lock. */
typedef struct tm_lock_map {
  unsigned shift, stride, ort_log2;
  bool mix;
  uint64_t mask;
  char *ort;
} tm_lock_map;
static inline tm_lock_map tm_lock_map_now(void) {
  return (tm_lock_map){.shift = stm_cfg.shift,
                       .stride = stm_cfg.ort_stride,
                       .ort_log2 = stm_cfg.ort_log2,
                       .mix = stm_cfg.hash == TM_HASH_MIX,
                       .mask = stm_cfg.ort_mask,
                       .ort = (char *)stm_cfg.ort};
}
static inline uint64_t *tm_lock_of(const tm_lock_map *m, uintptr_t addr) {
  uintptr_t i = addr >> m->shift;
  if (m->mix)
    i = (uintptr_t)((i * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - m->ort_log2));
  else
    i &= m->mask;
  return (uint64_t *)(m->ort + (i << m->stride));
}
static inline uint64_t *tm_ort_lock(uintptr_t addr) {
  const tm_lock_map m = tm_lock_map_now();
  return tm_lock_of(&m, addr);
}

#define TM_WB_PENDING 1 /* committing, timestamp not known yet (compares as the oldest) */

enum { TM_STATUS_ACTIVE = 0, TM_STATUS_COMMITTING = 1, TM_STATUS_KILLED = 2 };

/* ---- STM backend (stm.c) ---- */
void stm_thread_init(tm_tx *tx);
void stm_commit(tm_tx *tx);
/* Undoes the effects of levels >= level (level 1: everything, releasing all locks). */
void stm_rollback(tm_tx *tx, unsigned level);
/* Closed nesting: the child's writes become the parent's. */
void stm_merge_child(tm_tx *tx, unsigned child);
/* cm=wait, after an abort that held locks: waits (bounded) for the contended lock's release. */
void stm_wait_after_abort(tm_tx *tx);
uint64_t stm_load_word(tm_tx *tx, uintptr_t w);
void stm_store_word(tm_tx *tx, uintptr_t w, uint64_t value, uint64_t mask);
/* Accesses of any size and alignment (stm_access.c): the backend's load/store operations. */
uint64_t stm_load(tm_tx *tx, uintptr_t addr, unsigned size);
void stm_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value);
bool stm_try_become_irrevocable(tm_tx *tx); /* in place, when nothing was accessed yet */
void stm_irrevocable_acquire(tm_tx *tx);    /* waits until this thread holds the flag */
void stm_irrevocable_release(tm_tx *tx);
/* Read-only attempts (TinySTM's read-only mode). A block flagged TM_FLAG_READ_ONLY begins
 * attempts that record no reads: a read-only transaction needs its read set only to extend
 * its snapshot, and it commits without validation. So such an attempt cannot extend: a
 * read of a version newer than its snapshot (or a snapshot reset by tm_request_validation)
 * aborts it with TM_ABORT_READ_ONLY, as does a store (the hint was wrong), and the block's
 * later attempts record their reads like any other (read_only_off). A read-only attempt
 * runs the loads' fast path unchanged: it appends its reads to the read set as scratch that
 * nothing reads (it never validates: it cannot extend, and its commit has nothing to
 * check) and only the first TM_RO_SCRATCH slots of (rlimit = rset + TM_RO_SCRATCH - 1):
 * when they are full it starts again from empty instead of growing the set (rset_push).
 * So its loads take the same straight path as a logging attempt's, with no branch of their
 * own (a test that told the two apart on every load cost the read-only rbtree two taken
 * branches per load), and a long traversal (the list) writes 1 KB of scratch over and over
 * instead of streaming a set of thousands of entries through the cache. */
#define TM_RO_SCRATCH 64 /* <= the read set's initial capacity (stm_thread_init) */
static inline bool stm_read_only(const tm_tx *tx) { return tx->ro_attempt; }
/* Whether a top-level attempt of a block with `flags` keeps no read set. `fresh`: the
 * block's first attempt (read_only_off is false at depth 0). */
static inline bool stm_attempt_read_only(const tm_tx *tx, int flags, bool fresh) {
  return (flags & TM_FLAG_READ_ONLY) && (fresh || !tx->read_only_off);
}

/* Blocks whose first attempt loads the clock after a read-only attempt had to restart. */
#define TM_FRESH_BEGINS 128

/* The stores that start every STM attempt: its mode, a snapshot, empty read and write sets
 * (the read set off for a read-only attempt). Returns the snapshot's clock value: the current
 * clock, or with `from_seen` (a block's first attempt) the last one this thread saw,
 * clock_seen, unless fresh_begins asks for the clock. */
static inline __attribute__((always_inline)) uint64_t stm_begin_attempt(tm_tx *tx, tm_mode mode,
                                                                        tm_load_view_ *fast_view,
                                                                        bool read_only,
                                                                        bool from_seen) {
  tx->mode = mode;
  tm_fast_view_ = fast_view;
  uint64_t now = tx->clock_seen;
  if (!from_seen || TM_UNLIKELY(tx->fresh_begins != 0)) {
    if (from_seen) tx->fresh_begins--;
    now = __atomic_load_n(&tm_clock.value, __ATOMIC_ACQUIRE);
    tx->clock_seen = now;
  }
  __atomic_store_n(&tx->end, tm_snapshot_bound(now), __ATOMIC_RELAXED);
  tm_rset_truncate(tx, 0);
  tx->ro_attempt = read_only;
  tx->rlimit = read_only ? tx->rset + TM_RO_SCRATCH - 1 : tx->rfull;
  tx->wn = 0;
  return now;
}
/* Whether a top-level attempt may begin with stm_begin_attempt alone (stm_backend.c's
 * inline begin): a revocable attempt (no irrevocability asked), no irrevocable transaction
 * running (new ones wait for it), no CTL index to empty, no kill contention manager to
 * inform (tx->plain_begin: cm != kill). `fresh`: the block's first attempt,
 * begun at depth 0, where want_irrevocable is false (end_top). */
static inline bool stm_begin_is_plain(const tm_tx *tx, int flags, bool fresh) {
  return tx->plain_begin && !(flags & TM_FLAG_IRREVOCABLE) && (fresh || !tx->want_irrevocable) &&
         !tx->bloom && __atomic_load_n(&tm_irrevocable.owner, __ATOMIC_ACQUIRE) == NULL;
}
/* Top-level begin, every case; `fresh`: first attempt (not a retry). */
void stm_begin(tm_tx *tx, bool irrevocable, bool fresh, bool read_only);

/* ---- Attribution (stm_attribution.c) ----
 * With attribution on, every ORT entry is two words: the lock word and a summary of the
 * last commits (and write-through rollbacks) under it, written by the lock holder before
 * the release:
 *   | base version, low 20 bits | count (4) | stripe tag (8) | union bitmap (16) | last bitmap (16)
 * | It covers the `count` (1..TM_SUMMARY_WINDOW) commits after version `base`: `union` is the words
 * they wrote, `last` the words the newest one wrote. tag TM_TAG_MIXED: the words were in several
 * stripes, or a stripe has more than 16 words (shift > 7); bitmaps 0: no word changed (rollbacks).
 */
#define TM_SUMMARY_WINDOW 8
#define TM_SUMMARY_BASE_MASK ((UINT64_C(1) << 20) - 1)
#define TM_TAG_MIXED 0xffu
static inline uint64_t tm_stripe_tag(uint64_t stripe) {
  uint64_t h = (stripe * UINT64_C(0x9E3779B97F4A7C15)) >> 56; /* 0..255: h % 255 */
  return h == TM_TAG_MIXED ? 0 : h;
}
static inline uint64_t tm_word_bit(uintptr_t w) {
  return UINT64_C(1) << ((w >> 3) & stm_cfg.word_index_mask);
}
/* A lock held by another transaction stopped us at word w (lock word l seen). */
tm_conflict_class tm_classify_locked(const uint64_t *lock, uint64_t l, uintptr_t w);
/* Read-set entry `index` failed validation. */
tm_conflict_class tm_classify_validation(const tm_tx *tx, size_t index);
/* Writer side, holding `lock`: summarise the words of `head`'s chain (NULL: none) written
 * over the unlocked word `prev`. Every case (stm_attribution.c). */
void tm_record_commit_general(uint64_t *lock, const tm_wentry *head, uint64_t prev);
/* Chains longer than this are not walked by other threads (attribution gives UNKNOWN) nor
 * summarised word by word (TM_TAG_MIXED). */
#define TM_CHAIN_WALK_MAX 64
/* The same, inline, for the words `bits` (a non-empty 16-bit map) of one stripe with tag `tag`
 * written under the lock, in stripes of at most 16 words (shift <= 7): the common case of
 * every update commit. The window grows when it is not full (count 1..7) and describes that
 * stripe (tag equal; never TM_TAG_MIXED, which tm_stripe_tag does not return) or only
 * rollbacks (union 0, tag not TM_TAG_MIXED), else it starts at `prev`; the result is
 * tm_record_commit_general's, computed on the packed word (test_summary,
 * test_summary_cases): with bits != 0 and tag != TM_TAG_MIXED the general rule's test is
 * exactly this one, its new tag is `tag`, its union old | bits and its last `bits`. */
static inline void tm_record_commit_bits(uint64_t *lock, uint64_t tag, uint64_t bits,
                                         uint64_t prev) {
  uint64_t fields = tag << 32 | bits * (UINT64_C(1) << 16 | 1); /* tag, union and last bits */
  uint64_t old = __atomic_load_n(lock + 1, __ATOMIC_RELAXED), s;
  /* count << 8 | (old tag ^ tag): 0x100..0x700 exactly when the window holds 1..7 commits
   * of this stripe (the usual extension: one test instead of three). */
  uint64_t same = ((old >> 32) ^ tag) & 0xfff;
  uint64_t count = (old >> 40) & 15, old_tag = (old >> 32) & 0xff;
  if (((same & 0x8ff) == 0 && same != 0) ||
      (count - 1 < TM_SUMMARY_WINDOW - 1 && old_tag != TM_TAG_MIXED &&
       (old & UINT64_C(0xffff0000)) == 0))
    /* base kept, count + 1, tag, union | bits, last = bits */
    s = ((old & ~(UINT64_C(0xff) << 32 | UINT64_C(0xffff))) | fields) + (UINT64_C(1) << 40);
  else
    s = (tm_word_version(prev) & TM_SUMMARY_BASE_MASK) << 44 | UINT64_C(1) << 40 | fields;
  __atomic_store_n(lock + 1, s, __ATOMIC_RELEASE);
}
/* One word w under the lock (a one-entry chain), shift <= 7. */
static inline void tm_record_commit_word(uint64_t *lock, uintptr_t w, uint64_t prev) {
  tm_record_commit_bits(lock, tm_stripe_tag(w >> stm_cfg.shift), tm_word_bit(w), prev);
}
/* Any chain (NULL: a rollback) over the unlocked word `prev`: inline when the stripe has at
 * most 16 words and the chain's words (one entry, or up to TM_CHAIN_WALK_MAX entries, as
 * tm_record_commit_general walks them) lie in one stripe, else tm_record_commit_general. */
static inline void tm_record_commit_chain(uint64_t *lock, const tm_wentry *head, uint64_t prev);
static inline void tm_record_commit(uint64_t *lock, const tm_wentry *head, uint64_t prev) {
  if (TM_UNLIKELY(head == NULL || stm_cfg.shift > 7)) {
    tm_record_commit_general(lock, head, prev);
    return;
  }
  tm_record_commit_chain(lock, head, prev);
}
/* The same for a chain (head not NULL) in stripes of at most 16 words (shift <= 7). */
static inline void tm_record_commit_chain(uint64_t *lock, const tm_wentry *head, uint64_t prev) {
  if (TM_LIKELY(head->next == NULL)) {
    tm_record_commit_word(lock, head->addr, prev);
    return;
  }
  uintptr_t stripe = head->addr >> stm_cfg.shift;
  uint64_t bits = 0;
  unsigned steps = 0;
  for (const tm_wentry *e = head; e; e = e->next) {
    if ((e->addr >> stm_cfg.shift) != stripe || ++steps > TM_CHAIN_WALK_MAX) {
      tm_record_commit_general(lock, head, prev); /* TM_TAG_MIXED */
      return;
    }
    bits |= tm_word_bit(e->addr);
  }
  tm_record_commit_bits(lock, tm_stripe_tag(stripe), bits, prev);
}

#endif
