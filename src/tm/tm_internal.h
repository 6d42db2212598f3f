/* Internal view of the transactional runtime's front-end, shared with its backends: the
 * front-end's configuration, the thread descriptor, the nesting levels and the services the
 * front-end offers its backends. The backend interface is tm_backend.h; the STM's own
 * definitions (ORT, lock words, clock) are in stm_internal.h. See docs/stm.md.
 *
 * Glossary: a *word* is an aligned 8-byte unit (the STM's granule: sub-word accesses are
 * merged into their word with a byte mask); a *stripe* is the 2^shift bytes that map to
 * one *lock* (versioned lock = ownership record) of the STM's ORT; a *level* is one nesting
 * depth of the current transaction (1 = top level); an *attempt* is one execution of a
 * block, ended by its commit or an abort. */
#ifndef TXALLOC_TM_INTERNAL_H
#define TXALLOC_TM_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tm/tm_options.h"
#include "txalloc/tm.h"

#define TM_LIKELY(x) __builtin_expect(!!(x), 1)
#define TM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TM_CACHE_LINE 64

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the word-merging of sub-word accesses assumes a little-endian machine"
#endif

typedef enum { TM_CM_SUICIDE, TM_CM_BACKOFF, TM_CM_WAIT, TM_CM_KILL } tm_cm_kind;
typedef enum { TM_NESTING_CLOSED, TM_NESTING_FLAT } tm_nesting_kind;

/* How the current attempt executes: TM_MODE_NONE outside a transaction, else a value its
 * backend chose (each backend names its own; one backend runs in a process). A mode below
 * TM_MODE_HEAVY is light: an attempt in it that wrote nothing (wn == 0) and never aborted
 * commits by doing nothing, which tm_commit_ does without calling the backend. */
typedef unsigned tm_mode;
#define TM_MODE_NONE 0u
#define TM_MODE_HEAVY 0x80u

/* Conflict classification (false-conflict attribution). */
typedef enum {
  TM_CLASS_NONE = -1, /* not a conflict abort */
  TM_CLASS_TRUE = 0,
  TM_CLASS_FALSE = 1,
  TM_CLASS_UNKNOWN = 2,
} tm_conflict_class;

/* The front-end's configuration, read once at the runtime's initialisation. */
typedef struct tm_config {
  unsigned backend; /* index in the registry (tm_backends.def) */
  tm_cm_kind cm;    /* backoff is the front-end's; wait and kill are the backends' */
  tm_nesting_kind nesting;
  unsigned irrevocable_after;
} tm_config;
extern tm_config tm_cfg;

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

/* Read-set entries of a new descriptor (the set grows, stm_rset_grow). */
#define TM_RSET_INITIAL 1024
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

/* The thread descriptor. It holds the front-end's state (depth, levels, retry counters,
 * statistics) and, next to the fields their hot paths touch with them, the STM's: the view,
 * snapshot and CTL index, the contention managers' words, the privatization timestamp.
 * Each field is written by its owner only (the front-end, or the running backend), and one
 * backend runs in a process. A backend with per-thread state of its own adds its fields
 * here or keeps them thread-local. */
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
  bool plain_begin;       /* STM: cm != kill (stm_begin_is_plain) */
  bool plain_commit;      /* cm != kill, and the summaries inline (attribution off or shift <= 7):
                             stm_commit's frameless paths may apply (stm_thread_init) */
  bool irrevocable;       /* this attempt runs irrevocably (set by the backend, cleared by the
                             front-end when the top level ends) */
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
  unsigned abort_status; /* tm_last_abort_status: the last abort's RTM-style bits (set by a
                            backend that models a hardware TM, in its rollback) */
  unsigned top_refills;  /* pool refills the current top-level block had (tm_alloc.c) */
  size_t refill_size;    /* the request an alloc_refill abort refills for (0: none) */
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

/* An aligned access of exactly `size` (1, 2, 4 or 8) bytes, atomic: outside a transaction
 * (tm_access.c), and the glock backend's in-place accesses. Excluded from AddressSanitizer
 * like the STM's word reads (stm_access.h). */
__attribute__((no_sanitize("address"))) static inline uint64_t tm_plain_load(uintptr_t a,
                                                                             unsigned size) {
  switch (size) {
  case 1: return __atomic_load_n((const uint8_t *)a, __ATOMIC_ACQUIRE);
  case 2: return __atomic_load_n((const uint16_t *)a, __ATOMIC_ACQUIRE);
  case 4: return __atomic_load_n((const uint32_t *)a, __ATOMIC_ACQUIRE);
  default: return __atomic_load_n((const uint64_t *)a, __ATOMIC_ACQUIRE);
  }
}
static inline void tm_plain_store(uintptr_t a, unsigned size, uint64_t v) {
  switch (size) {
  case 1: __atomic_store_n((uint8_t *)a, (uint8_t)v, __ATOMIC_RELEASE); break;
  case 2: __atomic_store_n((uint16_t *)a, (uint16_t)v, __ATOMIC_RELEASE); break;
  case 4: __atomic_store_n((uint32_t *)a, (uint32_t)v, __ATOMIC_RELEASE); break;
  default: __atomic_store_n((uint64_t *)a, v, __ATOMIC_RELEASE); break;
  }
}

#ifdef TM_HAVE_FAST_ENTRY_
/* The fast entry (tm_entry_x86_64.S): tm_start_ (tm.h) calls tm_enter_ (tm_runtime.c);
 * tm_jump_ makes tm_start_ return `value` again in the frame it saved into *ctx. */
void tm_enter_(tm_context_ *ctx, int flags);
_Noreturn void tm_jump_(tm_context_ *ctx, int value);
#endif

/* ---- Front-end services (tm_runtime.c) ---- */
void tm_runtime_init(void);
tm_tx *tm_thread_setup(void);
tm_tx *tm_all_descriptors(void); /* every descriptor ever made, linked by all_next */
/* Abort because of a conflict or validation failure at level `level` (1 = top; closed
 * nesting may escalate to a lower level), rolling back and jumping to its restart point. */
/* Aborts the running revocable transaction to its top level with cause alloc_refill; the
 * pool is refilled for `size` bytes before the restart, or, past the bound of refills per
 * block, the restart runs irrevocably (tm_alloc.c). */
_Noreturn void tm_abort_refill(tm_tx *tx, size_t size);
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
/* For tm_stats.c: tm_threads_lock(true) holds the threads lock (no thread sets up or exits
 * meanwhile), under which tm_for_each_live visits the live descriptors. */
void tm_threads_lock(bool lock);
void tm_for_each_live(void (*fn)(tm_tx *, void *), void *arg);

/* ---- Statistics and configuration (tm_stats.c) ---- */
static inline void tm_stat_add(uint64_t *counter, uint64_t n) {
  __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
void tm_stats_fold_thread(tm_tx *tx); /* thread exit: into the global total */
void tm_stats_print_at_exit(void);
/* The word of choice `index` of the CHOICE option `id`, in buf (returned). */
const char *tm_choice_word(txalloc_option_id id, unsigned index, char *buf, size_t len);

#endif
