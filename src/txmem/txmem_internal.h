/* txmem internals: the per-thread state, the registry of thread records that epoch scans
 * traverse, and the functions the files of the layer share.
 *
 * Words:
 *   level        one open transaction level of this thread; levels[1] is the top level.
 *   ticket/seq   McRT's sequence number of a level. The top level's is 0: its logs are
 *                empty when it begins, so every entry is its own or a descendant's. Every
 *                nested level takes the next value of the thread's ticket (>= 1, growing for
 *                the thread's lifetime) when it begins. The thread id part is implicit: each
 *                thread has its own logs, so an object allocated by another thread is never
 *                found in this thread's undo log and its free is always speculative.
 *   undo log     objects allocated since the top level began, in allocation order, each
 *                tagged with the seq of the level that allocated it; an index (hash) maps an
 *                object to its entry. Dead entries (balanced frees) have ptr == NULL.
 *   commit log   speculative frees since the top level began, in order.
 *   limbo        objects freed by committed transactions, waiting for safe reuse: a FIFO
 *                whose epochs never decrease (the newest limbo_unpublished entries have
 *                none yet: the next scan tags them).
 *
 * Invariants (checked by the tests through their outcomes):
 *   I1 levels[k].undo_start <= levels[k+1].undo_start <= undo_len, same for commit_start.
 *   I2 an undo entry at index i >= levels[d].undo_start has seq >= levels[d].seq (it was
 *      allocated by level d or by a child that committed into it); one below has a smaller
 *      seq. So "balanced at level d" == "live undo entry with seq >= levels[d].seq".
 *   I3 every live undo entry below indexed_upto is in the index exactly once, with its
 *      current position; none above it is.
 *   I4 an object is never in the undo log and the limbo at once, and is released exactly
 *      once: by an abort (undo), a balanced free, or the top-level commit (commit log).
 *   I5 between top-level transactions (depth 0 and ready): undo_len == commit_len == 0,
 *      cur_seq == cur_undo_start == 0, and levels[1] == {0, 0, 0} always. A top-level begin
 *      therefore writes no level: the top level's record and cached copies are already
 *      right (the cheap top-level hooks, txmem.c).
 *   I6 the transactional run (txmem_thread.run, txmem_run.c): described at its fields. */
#ifndef TXALLOC_TXMEM_INTERNAL_H
#define TXALLOC_TXMEM_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/txmem.h"
#include "txmem/txmem_profile.h"
#include "util/debug_assert.h"

/* On the layer's shared data: declared hidden (their definitions are, by the build's
 * -fvisibility=hidden), the fast paths address them directly instead of through the GOT. */
#define TXMEM_HIDDEN __attribute__((visibility("hidden")))
#define TXMEM_LIKELY(x) __builtin_expect(!!(x), 1)
#define TXMEM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- Configuration (txmem_config.c), fixed at the first use ---- */
typedef struct txmem_config {
  int strategy; /* txmem_strategy */
  bool safe_reuse;
  /* Sticky epoch announcements, passed by reclamation scans with membarrier (see
   * txmem_epoch.c): safe_reuse, option txmem_membarrier, and
   * MEMBARRIER_CMD_PRIVATE_EXPEDITED registered. */
  bool sticky;
  size_t limbo_max; /* high-water mark of one thread's limbo, in objects */
} txmem_config;
extern TXMEM_HIDDEN txmem_config txmem_cfg;
extern TXMEM_HIDDEN _Atomic int txmem_cfg_ready;
void txmem_config_init_slow(void);
/* Registers the process for expedited membarrier; false when the kernel refuses (or in
 * ThreadSanitizer builds, which do not model it). */
bool txmem_membarrier_register(void);
static inline const txmem_config *txmem_config_get(void) {
  if (TXMEM_UNLIKELY(!atomic_load_explicit(&txmem_cfg_ready, memory_order_acquire)))
    txmem_config_init_slow();
  return &txmem_cfg;
}

/* ---- Statistics counters indices ---- */
enum {
#define TXMEM_COUNTER_ID_(name, doc) TXMEM_C_##name,
  TXMEM_STATS_COUNTERS(TXMEM_COUNTER_ID_)
#undef TXMEM_COUNTER_ID_
      TXMEM_C_COUNT_
};

/* Counters of the hot paths live in the thread (plain increments) and are published into
 * the record every 256 top-level transactions, at thread exit and when the thread itself
 * reads the statistics (txmem_hot_publish, which also publishes the limbo gauges). Top-level
 * begins are counted in txmem_thread.tx_pending first. */
#define TXMEM_HOT_COUNTERS(X)                                                                      \
  X(transactions)                                                                                  \
  X(tx_mallocs)                                                                                    \
  X(tx_frees)                                                                                      \
  X(speculative_bytes)                                                                             \
  X(balanced_recycles)                                                                             \
  X(balanced_bytes) X(cache_hits) X(speculative_frees) X(deferred_bytes)
enum {
#define TXMEM_HOT_ID_(name) TXMEM_HOT_##name,
  TXMEM_HOT_COUNTERS(TXMEM_HOT_ID_)
#undef TXMEM_HOT_ID_
      TXMEM_HOT_COUNT_
};

/* One per thread that ever used txmem; never freed, reused after the thread exits. Other
 * threads read the announcement (epoch scans) and the statistics (txmem_stats_get). */
typedef struct txmem_record {
  /* The thread's epoch announcement: TXMEM_ANNOUNCE(epoch, running), or 0 = none. With
   * sticky announcements (txmem_config.sticky) a thread between transactions keeps
   * its epoch with the running bit clear; otherwise it withdraws to 0 at the end of each
   * top-level transaction. Read by epoch scans and statistics (txmem_epoch.c). */
  _Atomic uint64_t announce;
  /* Sticky announcements: 0, TXMEM_FENCE_CONFIRMED, or the ticket of a scan that flagged
   * the record (>= TXMEM_FENCE_TICKET0) and has not yet finished its membarrier. Set while
   * the thread is between transactions; the thread's next top-level begin, seeing it
   * nonzero, clears it first and announces with the full barrier. A record not running and
   * CONFIRMED holds nothing back (txmem_epoch.c), so an idle thread costs one membarrier,
   * not one per scan. */
  _Atomic uint64_t fence_next;
  _Atomic int in_use;
  struct txmem_record *_Atomic next;
  /* Written only by the owning thread, with relaxed atomic stores. limbo_objects and
   * limbo_bytes follow every change of the limbo; limbo_peak is published at every
   * reclamation pass and with the hot counters (txmem_limbo_gauges), not at every push:
   * the limbo only grows between passes and each pass notes its length before releasing,
   * so the peak lags by less than one batch and is exact at each publication. */
  uint64_t counters[TXMEM_C_COUNT_];
  uint64_t limbo_objects, limbo_bytes, limbo_peak;
  txmem_profile_counts profile; /* published with the hot counters (txmem_profile.h) */
} txmem_record;

extern TXMEM_HIDDEN txmem_record *_Atomic txmem_registry; /* head of the list of records */

typedef struct txmem_level {
  uint64_t seq;
  size_t undo_start;
  size_t commit_start;
  uint32_t run_mark; /* run_top when the level began (levels[1]: unused, run_base is its) */
} txmem_level;

typedef struct txmem_undo_entry {
  void *ptr; /* NULL: released by a balanced free */
  size_t size;
  uint64_t seq;
} txmem_undo_entry;

typedef struct txmem_index_slot {
  void *key; /* NULL = empty */
  size_t pos;
} txmem_index_slot;

/* Where a limbo entry's object goes at its release (txmem_limbo_entry.release). */
enum {
  TXMEM_REL_FOREIGN = 0, /* the strategy's own release: the process's free, or the wrap-cache */
  TXMEM_REL_TXALLOC = 1, /* txalloc_free (large objects, pointers that start no object) */
  /* In a chunk of txalloc's small (medium) blocks: the allocator's owner-side free with that
   * span kind (txa_free_owned: no second region-map lookup, a granule keeps its kind), or
   * txalloc_free when it declines (remote, bad or double free: checked and reported). */
  TXMEM_REL_SMALL = 2,
  TXMEM_REL_MEDIUM = 3,
};

typedef struct txmem_limbo_entry {
  void *ptr;
  /* Usable size (the byte statistics), and where the release takes the object (TXMEM_REL_*),
   * decided by the one lookup at the push (txmem_direct.h). A live object's owner cannot
   * change before this release; a pointer that named no live object (a bad free) keeps the
   * push's verdict: txalloc_free reports it, as it would have then. */
  uint64_t size : 62;
  uint64_t release : 2;
  uint64_t epoch;
} txmem_limbo_entry;
_Static_assert(sizeof(txmem_limbo_entry) == 24, "the release code must not grow limbo entries");

#define TXMEM_RUN_CAP 32       /* objects of the transactional run (txmem_run.c) */
#define TXMEM_CACHE_CLASSES 64 /* 16-byte classes up to 1 KiB */
#define TXMEM_CACHE_DEPTH 64   /* objects per class */

typedef struct txmem_thread {
  /* First cache line: everything a malloc/free pair inside a transaction touches. */
  unsigned depth; /* 0 outside transactions: the only field the plain path reads */
  bool ready;
  /* Copies of the configuration, taken at setup (valid once ready). */
  bool txalloc; /* strategy txalloc: balanced recycling, the allocator's shortcuts */
  txmem_undo_entry *undo;
  size_t undo_len, undo_cap;
  /* Live undo entries below indexed_upto are in the index; the newest ones above it (at
   * most TXMEM_INDEX_PENDING) are not yet: they are found by a short backward scan, so an
   * object freed soon after its allocation (Figure 3) never touches the hash table. */
  size_t indexed_upto;
  /* The innermost open level's seq and undo_start (copies of levels[depth]; 0 at depth 0,
   * I5). */
  uint64_t cur_seq;
  size_t cur_undo_start;
  /* Not in depth's 8 bytes: the compiler would test both with one wide load there, which
   * the store forwarding of the previous hook's narrow stores to depth and tx_pending
   * cannot serve (a stall per hook). */
  uint8_t top; /* txmem_top_mode: how a top-level transaction announces; 0 until ready */
  /* Top-level begins not yet added to hot[transactions]: its 256th wraps it to 0, which
   * folds and publishes the counters (one memory increment and a branch per begin). */
  uint8_t tx_pending;

  txmem_record *rec;
  /* The announcement word at the end of a top-level transaction is the word & leave_keep
   * (txmem_epoch_leave): ~TXMEM_ANNOUNCE(0, 1) with sticky announcements, 0 otherwise. */
  uint64_t leave_keep;
  uint64_t ticket; /* the seq of the newest nested level */
  uint64_t hot[TXMEM_HOT_COUNT_];

  txmem_level *levels; /* levels[1..depth]; levels[1] is constant (I5) */
  size_t levels_cap;

  size_t undo_dead;

  txmem_index_slot *index;
  size_t index_mask, index_count; /* capacity = mask + 1, 0 when not allocated */

  void **commit;
  size_t commit_len, commit_cap;

  txmem_limbo_entry *limbo; /* ring buffer, capacity a power of two */
  size_t limbo_head, limbo_len, limbo_cap, limbo_bytes;
  /* A pass when either is reached. limbo_next_scan is also at most limbo_max + 1, so that
   * one test per commit covers the high-water mark too (txmem_epoch.c). */
  size_t limbo_next_scan, limbo_next_scan_bytes;
  size_t limbo_unpublished; /* newest entries, not yet tagged with an epoch */

  void **cache;                              /* wrap-cache: [class][depth] */
  unsigned cache_count[TXMEM_CACHE_CLASSES]; /* objects in each class */

  txmem_profile_counts prof; /* the allocation profile (txmem_profile.h) */

  /* The transactional run (txmem_run.c): objects for requests of run_size bytes, reserved
   * from the allocator (txa_direct_reserve) and handed out by transactions in order. I6:
   * run[run_base, run_top) were handed out in the running top-level transaction, run[run_top,
   * run_len) are reserved and free; the open levels' marks satisfy run_base <=
   * levels[2].run_mark <= ... <= levels[depth].run_mark <= run_top, and run[mark_d, run_top)
   * holds exactly the objects level d or its committed children allocated from the run
   * (balanced at d). run_mark caches the innermost level's mark (run_base at the top
   * level). Between top-level transactions run_top == run_base == run_mark. */
  size_t run_size; /* 0: no run */
  uint32_t run_top, run_len, run_base, run_mark;
  uint32_t run_gen;   /* txmem_placement_gen when the run was reserved */
  uint16_t run_class; /* the allocator's spaced class of run_size */
  uint16_t run_want;  /* objects the next refill reserves (adaptive, <= TXMEM_RUN_CAP) */
  uint8_t run_bucket; /* txmem_profile_bucket(run_size) */
  void *run[TXMEM_RUN_CAP];
} txmem_thread;

/* How a top-level transaction announces its epoch (txmem_thread.top). */
typedef enum txmem_top_mode {
  TXMEM_TOP_QUIET = 1,  /* safe_reuse=0: no announcement */
  TXMEM_TOP_FENCED = 2, /* the announcement with the full barrier, withdrawn at the end */
  TXMEM_TOP_STICKY = 3  /* sticky announcements (txmem_config.sticky) */
} txmem_top_mode;

extern TXMEM_HIDDEN __thread txmem_thread txmem_tls;

/* txmem_thread.c */
txmem_thread *txmem_thread_setup(txmem_thread *t); /* registers the thread on first use */
_Noreturn void txmem_contract_error(const char *what, unsigned depth, unsigned open);
void *txmem_meta_grow(void *array, size_t *cap, size_t elem, size_t min_cap);

void txmem_hot_publish(txmem_thread *t);
static inline void txmem_hot_count(txmem_thread *t, int hot, uint64_t add) { t->hot[hot] += add; }

static inline void txmem_count(txmem_thread *t, int counter, uint64_t add) {
  uint64_t *c = &t->rec->counters[counter];
  __atomic_store_n(c, *c + add, __ATOMIC_RELAXED);
}

/* txmem_index.c: undo log and its index */
#define TXMEM_INDEX_PENDING 8
void txmem_undo_push_slow(txmem_thread *t, void *ptr, size_t size, uint64_t seq);
size_t txmem_index_lookup(const txmem_thread *t, const void *ptr);
void txmem_index_remove(txmem_thread *t, const void *key);

static inline void txmem_undo_push(txmem_thread *t, void *ptr, size_t size, uint64_t seq) {
  if (TXMEM_LIKELY(t->undo_len < t->undo_cap &&
                   t->undo_len - t->indexed_upto < TXMEM_INDEX_PENDING)) {
    t->undo[t->undo_len++] = (txmem_undo_entry){ptr, size, seq};
    return;
  }
  txmem_undo_push_slow(t, ptr, size, seq);
}

/* Position of ptr's live undo entry, or SIZE_MAX. */
static inline size_t txmem_index_find(const txmem_thread *t, const void *ptr) {
  for (size_t i = t->undo_len; i > t->indexed_upto;) {
    if (t->undo[--i].ptr == ptr) return i;
  }
  return t->index_count ? txmem_index_lookup(t, ptr) : SIZE_MAX;
}

/* Marks the live entry at pos dead and drops it from the index; trims dead entries at the
 * end of the log down to `floor` (the current level's undo_start). */
static inline void txmem_undo_kill(txmem_thread *t, size_t pos, size_t floor) {
  TXALLOC_ASSERT(pos < t->undo_len && t->undo[pos].ptr != NULL); /* a live entry */
  if (pos < t->indexed_upto) txmem_index_remove(t, t->undo[pos].ptr);
  t->undo[pos].ptr = NULL;
  t->undo_dead++;
  while (t->undo_len > floor && !t->undo[t->undo_len - 1].ptr) {
    t->undo_len--;
    t->undo_dead--;
  }
  if (t->indexed_upto > t->undo_len) t->indexed_upto = t->undo_len;
}
/* I5, where a top level begins and where it has ended (debug builds). */
static inline void txmem_assert_between_top(const txmem_thread *t) {
  TXALLOC_ASSERT(t->depth == 0 && t->undo_len == 0 && t->commit_len == 0);
  TXALLOC_ASSERT(t->cur_seq == 0 && t->cur_undo_start == 0);
  TXALLOC_ASSERT(t->run_top == t->run_base && t->run_mark == t->run_base); /* I6 */
  TXALLOC_ASSERT(t->levels_cap <= 1 || (t->levels[1].seq == 0 && t->levels[1].undo_start == 0 &&
                                        t->levels[1].commit_start == 0));
}

/* Drops entries [from, undo_len) from the index and the log (abort). */
void txmem_undo_truncate(txmem_thread *t, size_t from);
/* Forgets the whole log (top-level commit or abort after the objects were handled). */
void txmem_undo_reset(txmem_thread *t);

/* txmem_run.c: the transactional run (I6) */
extern TXMEM_HIDDEN _Atomic uint32_t txmem_placement_gen; /* bumped by each geometry change */
/* A transactional allocation of `size` bytes that missed the run (txalloc strategy):
 * when no run object is in flight, (re)fills the run for this size and takes from it;
 * otherwise, or when nothing can be reserved, allocates through the undo log. */
void *txmem_run_malloc_miss(txmem_thread *t, size_t size);
/* txmem.c: an allocation in a transaction through the undo log (any strategy). */
void *txmem_tx_malloc_logged(txmem_thread *t, size_t size);
/* ptr, freed in a transaction, is a run object of the level whose slice starts at
 * `parent_mark` (run[parent_mark, run_top)): dropped from the run like a balanced free (it
 * is swapped with the newest); false when it is not one. Serves a balanced free of the
 * innermost level's object that is not the newest (mark run_mark) and a child commit's
 * speculative free of its parent's object. */
bool txmem_run_free_from(txmem_thread *t, const void *ptr, uint32_t parent_mark);
/* Gives every reserved object back to the allocator (depth 0: flush, thread exit). */
void txmem_run_drop(txmem_thread *t);
static inline uint32_t txmem_run_level_mark(const txmem_thread *t, unsigned depth) {
  return depth == 1 ? t->run_base : t->levels[depth].run_mark;
}

/* txmem_backend.c: the allocator underneath, per strategy */
void *txmem_backend_malloc(txmem_thread *t, size_t size); /* in a transaction */
void txmem_backend_release(txmem_thread *t, void *ptr);   /* really free (or cache) */
/* The release of an object that is not txalloc's to free: the process's free, or the
 * wrap-cache. (txmem_direct.h: txmem_backend_usable and txmem_backend_release_as, the
 * commit's one lookup of a freed pointer and the release that follows it.) */
void txmem_backend_release_foreign(txmem_thread *t, void *ptr);
void txmem_cache_flush(txmem_thread *t);
/* txmem_thrifty.c: an allocation inside a transaction, strategy thrifty (the refill path). */
void *txmem_thrifty_malloc(size_t size);

/* txmem_epoch.c (the reasoning is there) */
extern TXMEM_HIDDEN _Atomic uint64_t txmem_g_epoch; /* McRT's currentFreeEpoch */
/* An announcement word: the epoch and whether a top-level transaction runs in it. */
#define TXMEM_ANNOUNCE(epoch, running) ((uint64_t)(epoch) << 1 | (uint64_t)(running))
#define TXMEM_ANNOUNCE_EPOCH(word) ((word) >> 1)
#define TXMEM_ANNOUNCE_RUNNING(word) (((word)&1) != 0)
#define TXMEM_FENCE_CONFIRMED 1u /* fence_next: the barrier after the flag has completed */
#define TXMEM_FENCE_TICKET0 2u   /* fence_next: first ticket of a flagging scan */
/* Announces with a full barrier (seq_cst exchange, then a re-load of g_epoch until both
 * agree) that a top-level transaction runs. */
void txmem_epoch_announce_fenced(txmem_thread *t);
/* Sticky begin of a record a scan flagged: clears fence_next, then announces fenced. */
void txmem_epoch_announce_flagged(txmem_thread *t);
/* Announces the epoch a top-level transaction begins in, sticky mode (inline: one per
 * top-level begin): a plain store, which the compiler keeps before the transaction's first
 * load (the signal fence) but the CPU may delay; a scan that would rely on the record
 * showing no running transaction runs membarrier first (txmem_epoch.c). */
static inline void txmem_epoch_announce_sticky(txmem_thread *t) {
  txmem_record *r = t->rec;
  atomic_store_explicit(&r->announce, TXMEM_ANNOUNCE(atomic_load(&txmem_g_epoch), 1),
                        memory_order_relaxed);
  /* The flag and the transaction's loads come after the store. */
  atomic_signal_fence(memory_order_seq_cst);
  if (TXMEM_UNLIKELY(atomic_load_explicit(&r->fence_next, memory_order_relaxed)))
    txmem_epoch_announce_flagged(t);
}
/* The announcement of any mode: sticky, fenced (an xchg), or none. */
static inline void txmem_epoch_announce(txmem_thread *t) {
  if (TXMEM_LIKELY(t->top == TXMEM_TOP_STICKY))
    txmem_epoch_announce_sticky(t);
  else if (t->top == TXMEM_TOP_FENCED)
    txmem_epoch_announce_fenced(t);
}
/* The top-level transaction ended (commit or abort): the announcement word becomes
 * itself & leave_keep: sticky, the running bit cleared and the epoch kept; fenced, 0
 * (withdrawn); quiet, 0 stays 0. The record's word is read back (only this thread writes
 * it), so no mode test is needed. Release: the transaction's reads come before. */
static inline void txmem_epoch_leave(txmem_thread *t) {
  txmem_record *r = t->rec;
  uint64_t a = atomic_load_explicit(&r->announce, memory_order_relaxed);
  atomic_store_explicit(&r->announce, a & t->leave_keep, memory_order_release);
}
/* Releases the top-level commit's speculative frees: at once, or through the limbo. Counts
 * them (hot counters speculative_frees and deferred_bytes). */
void txmem_epoch_release_committed(txmem_thread *t, void **ptrs, size_t n);
/* Publishes the thread's limbo gauges (objects, bytes, peak) into its record (the
 * statistics' gauges; objects and bytes are also published at every push and pass). */
void txmem_limbo_gauges(txmem_thread *t);
void txmem_epoch_retire_one(txmem_thread *t, void *ptr);
void txmem_epoch_flush(txmem_thread *t);
void txmem_epoch_thread_exit(txmem_thread *t); /* hands the limbo to the orphans */
void txmem_epoch_atfork_prepare(void);         /* fork: hold the epoch layer's locks, */
void txmem_epoch_atfork_parent(void);          /* release them in the parent, */
void txmem_epoch_atfork_child(void);           /* fresh ones in the child */
/* For txmem_stats.c: the global epoch, and the orphaned limbo entries of exited threads. */
uint64_t txmem_epoch_now(void);
void txmem_orphan_gauges(uint64_t *objects, uint64_t *bytes);

#endif
