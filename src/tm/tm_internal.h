/* Internal view of the transactional runtime: configuration, the thread descriptor, the
 * ownership-record table (ORT) and the entry points the front-end (tm_runtime.c) calls in
 * the backends (stm.c, tm_lock.c). See docs/stm.md for the algorithms.
 *
 * Glossary: a *word* is an aligned 8-byte unit (the STM's granule: sub-word accesses are
 * merged into their word with a byte mask); a *stripe* is the 2^shift bytes that map to
 * one *lock* (versioned lock = ownership record) of the ORT; a *level* is one nesting
 * depth of the current transaction (1 = top level). */
#ifndef TXALLOC_TM_INTERNAL_H
#define TXALLOC_TM_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/tm.h"

#define TM_LIKELY(x) __builtin_expect(!!(x), 1)
#define TM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TM_CACHE_LINE 64

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the word-merging of sub-word accesses assumes a little-endian machine"
#endif

typedef enum { TM_BACKEND_STM, TM_BACKEND_LOCK } tm_backend_kind;
typedef enum { TM_DESIGN_ETL_WB, TM_DESIGN_ETL_WT, TM_DESIGN_CTL_WB } tm_design;
typedef enum { TM_HASH_SHIFT_MASK, TM_HASH_MIX } tm_hash_kind;
typedef enum { TM_CM_SUICIDE, TM_CM_BACKOFF, TM_CM_WAIT, TM_CM_KILL } tm_cm_kind;
typedef enum { TM_NESTING_CLOSED, TM_NESTING_FLAT } tm_nesting_kind;

/* How the current attempt executes: selects the load/store/commit paths. */
typedef enum {
  TM_MODE_NONE = 0, /* not in a transaction */
  TM_MODE_ETL_WB,
  TM_MODE_ETL_WT,
  TM_MODE_CTL_WB,
  TM_MODE_IRREVOCABLE, /* stm backend, serial: in-place writes under locks, never aborts */
  TM_MODE_LOCK,        /* lock backend: in-place writes under the global lock */
} tm_mode;

/* Conflict classification (false-conflict attribution). */
typedef enum {
  TM_CLASS_NONE = -1, /* not a conflict abort */
  TM_CLASS_TRUE = 0,
  TM_CLASS_FALSE = 1,
  TM_CLASS_UNKNOWN = 2,
} tm_conflict_class;

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
typedef struct tm_config {
  tm_backend_kind backend;
  tm_design design;
  tm_hash_kind hash;
  tm_cm_kind cm;
  tm_nesting_kind nesting;
  unsigned ort_log2, shift;
  uint64_t ort_mask;
  unsigned irrevocable_after;
  unsigned wait_spins;
  bool attribution;
  bool privatization;       /* write-back commits wait for older write-backs (stm.c) */
  unsigned ort_stride;      /* log2 bytes per ORT entry: 3 (lock word), 4 (+ summary word) */
  uint64_t word_index_mask; /* word index inside a stripe, for attribution bitmaps */
  uint64_t *ort;            /* 2^ort_log2 entries */
} tm_config;
extern tm_config tm_cfg;

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
  return (tm_lock_map){.shift = tm_cfg.shift,
                       .stride = tm_cfg.ort_stride,
                       .ort_log2 = tm_cfg.ort_log2,
                       .mix = tm_cfg.hash == TM_HASH_MIX,
                       .mask = tm_cfg.ort_mask,
                       .ort = (char *)tm_cfg.ort};
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

/* ---- Read set and write set ---- */
/* One entry per read of a word (tm.h's struct tm_rentry_: the unlocked lock word seen and
 * the word's address, from which validation computes the lock and attribution the word).
 * Two words, not three with the lock's address: the append is two stores, and a long read
 * set (the list's) takes a third less cache (docs/stm.md). No merging: finding the previous
 * entry of the same stripe and merging a word bitmap into it cost more than the larger read
 * set's validation saves. */
typedef struct tm_rentry_ tm_rentry;

/* One written word at one nesting level. Fields other threads read (addr, next, tx, saved)
 * are written with relaxed atomic stores. */
typedef struct tm_wentry {
  _Alignas(TM_CACHE_LINE) uintptr_t addr; /* word address; lock mode: the byte address */
  uint64_t value;         /* write-back: new bytes (under mask); write-through: the bytes before */
  uint64_t mask;          /* bytes of the word this entry covers; lock mode: access size */
  struct tm_wentry *next; /* older entry of the same lock (chain), or NULL */
  struct tm_tx *tx;       /* owner */
  uint64_t *lock;
  uint64_t saved;    /* the unlocked lock word the chain's acquirer replaced */
  uint32_t level;    /* nesting level that wrote it */
  uint32_t acquired; /* 1: this entry acquired the lock (the tail of the chain) */
} tm_wentry;

/* Maximum entries per transaction (the write set is one reserved region that never moves). */
#define TM_WSET_MAX ((size_t)1 << 20)

/* ---- Nesting levels ---- */
typedef struct tm_level {
#ifdef TM_HAVE_FAST_ENTRY_
  tm_context_ *ctx; /* fast entry: the context tm_start_ saved; NULL: portable entry, jb */
#endif
  sigjmp_buf jb;
  size_t rset_mark, wset_mark; /* sizes of the sets when the level began (children only) */
  unsigned retries;            /* aborts of this level since its block was entered */
  unsigned conflict_retries;   /* consecutive conflict aborts (escalate to the parent) */
  int flags;
} tm_level;

/* CTL write-set index: open addressing from word address to entry index. A slot is valid
 * when its epoch equals the descriptor's (bumping the epoch empties the table). */
typedef struct tm_wslot {
  uintptr_t addr;
  uint32_t index;
  uint32_t epoch;
} tm_wslot;

#define TM_WB_PENDING 1 /* committing, timestamp not known yet (compares as the oldest) */

enum { TM_STATUS_ACTIVE = 0, TM_STATUS_COMMITTING = 1, TM_STATUS_KILLED = 2 };

typedef struct tm_tx {
  /* ---- hot: the owner's fast paths. First what the inline load (tm.h's tm_load_try_)
   * touches, as tm.h's tm_load_view_ and under the same names (ort_rshift, ort_amask,
   * ort_base, end: the snapshot bound as a lock word, rset/rlast/rlimit: the read set, rlast
   * = rset - 1 when empty, rlimit = rfull, its last slot, or the last scratch slot of a
   * read-only attempt), all in the first cache line; then what
   * begin/commit and stores touch. ---- */
  union {
    tm_load_view_ view;
    struct {
      TM_LOAD_VIEW_FIELDS_
    };
  };
  tm_mode mode;
  bool ro_attempt;          /* a read-only attempt: its read set is scratch (stm_read_only) */
  bool fast_ort;            /* the map above is valid (shift-mask hash, shift >= ort_stride) */
  struct tm_rentry_ *rfull; /* the read set's last slot: rlimit of a logging attempt */
  tm_load_view_ *begin_fast_view; /* tm_fast_view_ for a revocable attempt (stm_thread_init) */
  /* The newest clock value this thread has read or taken (at a begin, an extension, a
   * commit). A block's first attempt starts its snapshot there instead of loading the clock
   * (docs/stm.md, "Snapshots from the last clock seen"), unless fresh_begins > 0: the next
   * fresh_begins blocks load it (set when a read-only attempt restarted, which an old
   * snapshot makes likelier where transactions read much: the list). */
  uint64_t clock_seen;
  unsigned fresh_begins;

  unsigned depth;     /* current nesting depth (0 = outside) */
  unsigned wlevel;    /* level stamped on new write entries (depth; 1 when flat); with depth,
                         one aligned pair (a top-level begin sets both with one store) */
  tm_mode begin_mode; /* the mode of a revocable attempt (the configured design) */
  tm_wentry *wset;    /* reserved region of TM_WSET_MAX entries */
  size_t wn;
  tm_level **levels; /* levels[d] for d in [1, level_cap); levels[1] == &top_level */
  unsigned level_cap;
  unsigned top_retries;   /* aborts of the current top-level transaction so far */
  unsigned top_conflicts; /* of which conflict aborts (irrevocable_after counts these: a
                             transaction waiting with tm_restart must not go serial) */
  bool want_irrevocable;  /* next top-level attempt runs irrevocably */
  bool read_only_off;     /* the block's later attempts keep a read set (a read-only attempt
                             aborted with TM_ABORT_READ_ONLY) */
  bool plain_begin;       /* stm backend and cm != kill (stm_begin_is_plain) */
  bool plain_commit;      /* cm != kill, and the summaries inline (attribution off or shift <= 7):
                             stm_commit's frameless paths may apply (stm_thread_init) */
  bool irrevocable_stat;  /* this attempt counts as irrevocable (lock backend) */
  uint64_t bloom;         /* CTL: bit (addr >> 3) & 63 of each written word */
  size_t ctl_locked;      /* CTL commit: entries [0, ctl_locked) have been linked into locks (0
                             outside a commit: stm_commit and stm_rollback reset it) */

  tm_wslot *wslots;
  size_t wslot_mask;
  uint32_t wepoch;
  uint64_t *wait_lock; /* cm=wait: after this abort, wait until the lock is not wait_word */
  uint64_t wait_word;
  uint64_t rng; /* backoff randomisation */

  tm_stats stats; /* this thread's counters, read by others with relaxed loads; in them
                   `commits` counts the commits that wrote and commits_read_only stays 0
                   (every commit is in the retry histogram: tm_stats.c derives both) */

  /* ---- read/written by other threads ---- */
  _Alignas(TM_CACHE_LINE) uint64_t status; /* TM_STATUS_* (cm=kill) */
  uint64_t kill_class;                     /* classification the killer computed */
  uint64_t prio;    /* start time of the first attempt (older wins under cm=kill) */
  uint64_t attempt; /* incremented whenever write-set entries are given up (a write
                       attempt ended, or a child's were rolled back), before any is
                       reused: attribution re-checks it (stm.c's wset_retire) */
  struct tm_tx *free_next;
  bool live;
  unsigned id; /* creation order, from 1 */
  /* privatization: timestamp being written back, TM_WB_PENDING, or 0. Every write commit
   * of every thread reads it, then all_next to go on: the two share a line that nothing
   * else writes, so a committer's walk misses once per descriptor, and only after that
   * thread's own write commits (not after each of its begins, nor on `attempt`'s line). */
  _Alignas(TM_CACHE_LINE) uint64_t wb_ts;
  struct tm_tx *all_next; /* list of every descriptor ever made (never freed); set before
                             the descriptor is published, never changed */
  /* ---- the owner's again ---- */
  _Alignas(
      TM_CACHE_LINE) tm_level top_level; /* levels[1], in the descriptor: no load to reach it */
} tm_tx;

extern __thread tm_tx *tm_self __attribute__((tls_model("initial-exec")));
/* tm_fast_view_ (tm.h): &tm_self->view while the attempt may take the inline load path (an
 * ETL design with the descriptor's lock map), else &tm_view_off_, whose lock map sends every
 * word to a locked lock word: the path's own lock check covers "set up, in a transaction,
 * on the fast path" (one test fewer per load: rbtree lookups -4 %). The view is the
 * descriptor's first member. */
static inline tm_tx *tm_view_tx(tm_load_view_ *v) { return (tm_tx *)(void *)v; }

static inline size_t tm_rn(const tm_tx *tx) { return (size_t)(tx->rlast + 1 - tx->rset); }
static inline void tm_rset_truncate(tm_tx *tx, size_t n) { tx->rlast = tx->rset + n - 1; }

/* ---- Front-end services (tm_runtime.c) ---- */
void tm_runtime_init(void);
tm_tx *tm_thread_setup(void);
tm_tx *tm_all_descriptors(void); /* every descriptor ever made, linked by all_next */
/* Abort because of a conflict or validation failure at level `level` (1 = top; closed
 * nesting may escalate to a lower level), rolling back and jumping to its restart point. */
_Noreturn void tm_abort_conflict(tm_tx *tx, unsigned level, tm_abort_cause cause,
                                 tm_conflict_class cls);
/* A read-only attempt could not go on without a read set: the top level restarts, keeping
 * one from now on (TM_ABORT_READ_ONLY; not a conflict). */
_Noreturn void tm_abort_read_only(tm_tx *tx);
/* The innermost level a conflict aborts (closed nesting: the current depth). */
unsigned tm_conflict_level(const tm_tx *tx);
/* The level whose reads include read-set index `index`. */
unsigned tm_level_of_read(const tm_tx *tx, size_t index);
_Noreturn void tm_fatal(const char *what);
void tm_pause_or_yield(unsigned i);

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
/* Whether a top-level attempt may begin with stm_begin_attempt alone (tm_runtime.c's fast
 * begin): a revocable attempt (no irrevocability asked), no irrevocable transaction running
 * (new ones wait for it), no CTL index to empty, no kill contention manager to inform
 * (tx->plain_begin: the stm backend and cm != kill). `fresh`: the block's first attempt,
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
  return UINT64_C(1) << ((w >> 3) & tm_cfg.word_index_mask);
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
  tm_record_commit_bits(lock, tm_stripe_tag(w >> tm_cfg.shift), tm_word_bit(w), prev);
}
/* Any chain (NULL: a rollback) over the unlocked word `prev`: inline when the stripe has at
 * most 16 words and the chain's words (one entry, or up to TM_CHAIN_WALK_MAX entries, as
 * tm_record_commit_general walks them) lie in one stripe, else tm_record_commit_general. */
static inline void tm_record_commit_chain(uint64_t *lock, const tm_wentry *head, uint64_t prev);
static inline void tm_record_commit(uint64_t *lock, const tm_wentry *head, uint64_t prev) {
  if (TM_UNLIKELY(head == NULL || tm_cfg.shift > 7)) {
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
  uintptr_t stripe = head->addr >> tm_cfg.shift;
  uint64_t bits = 0;
  unsigned steps = 0;
  for (const tm_wentry *e = head; e; e = e->next) {
    if ((e->addr >> tm_cfg.shift) != stripe || ++steps > TM_CHAIN_WALK_MAX) {
      tm_record_commit_general(lock, head, prev); /* TM_TAG_MIXED */
      return;
    }
    bits |= tm_word_bit(e->addr);
  }
  tm_record_commit_bits(lock, tm_stripe_tag(stripe), bits, prev);
}

/* ---- Lock backend (tm_lock.c) ---- */
void tm_lock_begin(tm_tx *tx);
void tm_lock_commit(tm_tx *tx);
void tm_lock_rollback(tm_tx *tx, unsigned level);
uint64_t tm_lock_load(tm_tx *tx, uintptr_t addr, unsigned size);
void tm_lock_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value);

/* ---- Statistics (tm_stats.c) ---- */
static inline void tm_stat_add(uint64_t *counter, uint64_t n) {
  __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
void tm_stats_fold_thread(tm_tx *tx); /* thread exit: into the global total */
void tm_stats_print_at_exit(void);

#endif
