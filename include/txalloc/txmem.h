/* txmem: transaction-aware allocation (McRT-Malloc §4). The hook contract through which any
 * transactional-memory runtime (txalloc's own STM, a user's STM, an HTM fallback path)
 * drives allocation inside transactions. The layer knows nothing about the runtime: it
 * only hears the events below, always on the thread the transaction runs on.
 *
 * ---- Events the runtime reports (the hooks) ----
 *   txmem_tx_begin(d)   a transaction level begins; d = 1 for the top level, d = k + 1 for
 *                       a child of level k. Precondition: d == txmem_depth() + 1.
 *   txmem_tx_commit(d)  level d commits. d must be the innermost open level. For d == 1,
 *                       call it AFTER the transaction's writes are visible to other threads
 *                       (after the commit point), because deferred frees are released here.
 *                       For d > 1 (closed nesting) the child's allocations and frees are
 *                       merged into level d - 1.
 *   txmem_tx_abort(d)   level d, and every deeper level still open, is rolled back. Call it
 *                       after the runtime undid the level's writes (or while it can still
 *                       guarantee that no other thread reads them). Everything allocated
 *                       since level d began is released at once; every free since level d
 *                       began is forgotten (the objects stay valid and unchanged).
 *   txmem_thread_exit() the thread ends (idempotent; also run automatically by a thread-exit
 *                       destructor). An open transaction is treated as aborted.
 * A runtime with flat nesting reports only the top level. Reporting a level it cannot roll
 * back separately is wrong (a child abort must really undo only the child).
 *
 * ---- Calls the program (or the runtime's tm_malloc/tm_free) makes ----
 *   txmem_malloc / txmem_calloc / txmem_free, valid inside and outside transactions.
 *   Outside a transaction they cost one thread-local test over the plain path of the
 *   selected strategy. Inside one:
 *     speculative allocation  malloc inside level d: released at once if d aborts
 *                             (Figure 4 of the paper runs in constant space).
 *     speculative free        free of an object allocated before level d began (or by another
 *                             thread): takes effect only when the top level commits; an abort
 *                             of any level at or above the free's level restores the object
 *                             untouched.
 *     balanced free           free of an object allocated in the same level or in a child
 *                             that committed into it: recycled at once (Figure 3 runs in
 *                             constant space). A speculative free made in a child becomes
 *                             balanced, and is recycled, when the child commits into the
 *                             level that allocated the object (strategy txalloc).
 *   Privatization (allocated in a transaction, freed after it with plain free) and
 *   publication (allocated outside, freed inside) are both valid.
 *
 * ---- Safe reuse (McRT §4.2) ----
 * With option safe_reuse=1 (default), memory freed by a committed top-level transaction is
 * not handed out again while any transaction that began before that commit is still running:
 * a doomed transaction that still holds a pointer to it reads the old contents, never a new
 * object. Each top-level transaction announces the free epoch it started in; frees wait in
 * a per-thread FIFO (limbo) tagged with their epoch and are released by the freeing thread
 * once no running transaction is that old. No daemon thread. Idle and exited threads never
 * hold reclamation back. When a thread's limbo passes the high-water mark (option
 * txmem_limbo_max) the thread, at its next top-level commit or txmem_retire, calls the
 * runtime's stale-transaction hook (txmem_set_stale_hook: validate and abort doomed
 * transactions) and waits, yielding, until the older transactions have ended.
 * Requirement on the runtime: a transaction never dereferences a pointer it read from an
 * uncommitted write of another transaction (true of TinySTM-style and write-back STMs), so
 * that speculative allocations and balanced frees can be released without waiting.
 * A free OUTSIDE any transaction is a plain free; code that frees an object other threads'
 * transactions may still be reading (the end of Figure 9) uses txmem_retire instead.
 *
 * ---- Strategies (option txmem, read once at the first call) ----
 *   wrap        log allocations, call the process's malloc/free (whatever LD_PRELOAD put
 *               there): undo on abort, every transactional free deferred to commit (what
 *               TinySTM and libitm do; no balanced recycling).
 *   wrap-cache  wrap plus thread-local caches of aborted allocations and of committed frees,
 *               reused by later transactional allocations (Baldassin et al., Table 7).
 *   txalloc     integrated with txalloc_malloc/txalloc_free, balanced recycling (default).
 *   thrifty     the bounded allocator (txalloc/thrifty.h, docs/thrifty.md): no system call
 *               after the heap is mapped; every transactional free deferred to commit, as
 *               wrap. A pool that runs dry inside a transaction asks the runtime to abort
 *               the transaction, refill the pool outside it and restart it (below).
 * Objects passed to txmem_free must come from the strategy's allocator: malloc for wrap and
 * wrap-cache, txalloc_malloc (or malloc when libtxalloc.so is the process's malloc) for
 * txalloc, thrifty_malloc for thrifty; under txalloc a free inside a transaction of an object that
 * is not txalloc's (txalloc_owner_of) is deferred as usual and then handed to the process's free.
 * Objects txmem_malloc returns under txalloc must not be given to the process's free unless
 * libtxalloc.so is the process's malloc (privatization then uses txmem_free or
 * txalloc_free). The strategy never changes while the process runs.
 *
 * ---- Refill (strategy thrifty; Carle et al. §3.3.2, Figure 3) ----
 * An allocation inside a transaction never takes the heap lock. When the thread's pool
 * cannot serve it, txmem calls the runtime's refill hook (txmem_set_refill_hook) with the
 * request's size, on the transaction's thread, before it has changed anything. The hook
 * either does not return: it rolls the transaction back to its top level (txmem_tx_abort(1)
 * included, as for any abort), calls txmem_refill(size, n) outside any transaction, n being
 * how many refills the block already had, and restarts the block; or it returns, when the
 * attempt cannot be rolled back (irrevocable): txmem then refills in place. A runtime
 * bounds the refills of one block (a transaction that needs more than the heap holds would
 * otherwise restart forever) by running the next attempt irrevocably, where an allocation
 * the heap cannot serve returns NULL (errno ENOMEM). With no hook (NULL, the default) txmem
 * always refills in place. The other strategies never call the hook.
 *
 * ---- Conflict geometry (stripe-aware placement) ----
 *   txmem_set_conflict_geometry(shift, entries)  the runtime detects conflicts per stripe
 *                       of 2^shift bytes (an STM's ORT stripe, an HTM's cache line),
 *                       mapped onto `entries` records ((addr >> shift) mod entries for a
 *                       TinySTM-style ORT; 0 when the units do not wrap round, as cache
 *                       lines); shift 0: no such unit (a global lock). Call it once, at
 *                       the runtime's initialisation, before its first transaction; later
 *                       calls apply to later allocations. Under strategy txalloc (and
 *                       option txmem_placement=1) every object txmem allocates, inside a
 *                       transaction or not, then starts on a stripe boundary and is rounded
 *                       up to whole stripes, so no two objects share a stripe and a
 *                       transaction on one never conflicts falsely with one on another.
 *                       Stripes above the allocator's limit (txmem_placement_stripe stays
 *                       0; 1 KiB with the present classes) are not spaced. The wrap
 *                       strategies leave placement to the process's malloc (its own option
 *                       TXALLOC_STRIPE when that malloc is libtxalloc.so).
 *
 * Not async-signal-safe. Hooks and calls must not be made from inside the allocator. */
#ifndef TXALLOC_TXMEM_H
#define TXALLOC_TXMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Hooks (see above) ---- */
TXALLOC_API void txmem_tx_begin(unsigned depth);
TXALLOC_API void txmem_tx_commit(unsigned depth);
TXALLOC_API void txmem_tx_abort(unsigned depth);
TXALLOC_API void txmem_thread_exit(void);
TXALLOC_API bool txmem_in_tx(void);     /* true between begin(1) and its commit/abort */
TXALLOC_API unsigned txmem_depth(void); /* innermost open level, 0 outside */

/* ---- Allocation ---- */
TXALLOC_API void *txmem_malloc(size_t size);
TXALLOC_API void *txmem_calloc(size_t count, size_t size);
TXALLOC_API void txmem_free(void *ptr);
/* Outside a transaction: frees ptr once every transaction now running has ended (an
 * epoch-deferred free; a plain free when safe_reuse=0). Inside one: same as txmem_free. */
TXALLOC_API void txmem_retire(void *ptr);
/* Outside a transaction: releases everything this thread (and exited threads) deferred,
 * waiting for older transactions to end. For tests and orderly shutdown. */
TXALLOC_API void txmem_flush(void);

/* Called (on the waiting thread, outside any transaction) when a thread's limbo passed the
 * high-water mark and transactions that began before epoch `epoch` still run: the runtime
 * should make those transactions validate and abort if doomed. NULL (default): just wait. */
typedef void (*txmem_stale_hook)(uint64_t epoch, void *arg);
TXALLOC_API void txmem_set_stale_hook(txmem_stale_hook hook, void *arg);

/* The refill hook (see "Refill" above): called inside a transaction whose allocation of
 * `size` bytes needs a refill of the thread's pool. NULL (default): refill in place. */
typedef void (*txmem_refill_hook)(size_t size, void *arg);
TXALLOC_API void txmem_set_refill_hook(txmem_refill_hook hook, void *arg);
/* Outside any transaction: refills the calling thread's pool so that it can serve `size`
 * bytes, the pool doubled when `refills` (earlier refills of the same block) is nonzero.
 * false: the heap cannot serve it. True at once under the other strategies. */
TXALLOC_API bool txmem_refill(size_t size, unsigned refills);

/* ---- Conflict geometry (see above) ---- */
TXALLOC_API void txmem_set_conflict_geometry(unsigned stripe_shift, uint64_t entries);
/* The geometry last reported (0, 0 when none). */
TXALLOC_API void txmem_get_conflict_geometry(unsigned *stripe_shift, uint64_t *entries);
/* Bytes by which txmem's allocations are spaced now (0: not spaced). */
TXALLOC_API size_t txmem_placement_stripe(void);

/* ---- Configuration actually in force ---- */
typedef enum txmem_strategy {
  TXMEM_WRAP = 0,
  TXMEM_WRAP_CACHE = 1,
  TXMEM_TXALLOC = 2,
  TXMEM_THRIFTY = 3,
} txmem_strategy;
TXALLOC_API txmem_strategy txmem_get_strategy(void);
TXALLOC_API const char *txmem_strategy_name(txmem_strategy s); /* "wrap", ... */
TXALLOC_API bool txmem_safe_reuse(void);
/* Safe reuse with sticky epoch announcements passed by membarrier (option
 * txmem_membarrier, when the kernel registered the process for it); false: a full barrier
 * at every top-level begin, or no safe reuse. */
TXALLOC_API bool txmem_membarrier_in_force(void);

/* ---- Statistics, declared once. Counters only grow; gauges are current values; bytes are
 * requested sizes for allocations and usable sizes for frees of older objects. Merged over
 * all threads, exited threads included. Another thread's hot-path counters (transactions,
 * tx_mallocs, tx_frees, speculative_bytes, speculative_frees, deferred_bytes, balanced_*,
 * cache_hits) are published every 256 of its top-level transactions (at most 255 behind)
 * and at its exit, its limbo_peak at each of its reclamation passes too (less than one
 * scan batch behind); the calling thread's are exact. ---- */
#define TXMEM_STATS_COUNTERS(X)                                                                    \
  X(transactions, "top-level transactions begun")                                                  \
  X(tx_mallocs, "allocations inside transactions")                                                 \
  X(tx_frees, "frees inside transactions")                                                         \
  X(speculative_bytes, "bytes allocated inside transactions")                                      \
  X(aborted_allocs, "speculative allocations released by an abort")                                \
  X(aborted_bytes, "bytes released by aborts")                                                     \
  X(speculative_frees, "frees deferred to the top-level commit")                                   \
  X(deferred_bytes, "bytes of frees deferred to the top-level commit")                             \
  X(balanced_recycles, "frees recycled at once (balanced)")                                        \
  X(balanced_bytes, "bytes recycled at once (balanced)")                                           \
  X(cache_hits, "wrap-cache: transactional allocations served from the thread cache")              \
  X(reclaimed, "deferred frees released after their epoch became safe")                            \
  X(reclaim_scans, "scans of the running transactions' epochs")                                    \
  X(scan_barriers, "membarrier calls of scans held back by threads between transactions")          \
  X(forced_reclamations, "times a thread's limbo passed the high-water mark and it waited")        \
  X(orphaned, "deferred frees handed over by exiting threads")
#define TXMEM_STATS_GAUGES(X)                                                                      \
  X(limbo_objects, "deferred frees waiting for safe reuse")                                        \
  X(limbo_bytes, "bytes waiting for safe reuse")                                                   \
  X(limbo_peak, "largest limbo of one thread so far (objects)")                                    \
  X(epoch, "current free epoch")                                                                   \
  X(epoch_lag, "current epoch minus the oldest running transaction's epoch (0 if none)")           \
  X(active_transactions, "threads inside a top-level transaction now")

typedef struct txmem_stats {
#define TXMEM_STATS_FIELD_(name, doc) uint64_t name;
  TXMEM_STATS_COUNTERS(TXMEM_STATS_FIELD_)
  TXMEM_STATS_GAUGES(TXMEM_STATS_FIELD_)
#undef TXMEM_STATS_FIELD_
} txmem_stats;
TXALLOC_API void txmem_stats_get(txmem_stats *out);
/* One JSON object (no newline), including "strategy", "safe_reuse" and "membarrier" (in force);
 * never allocates. */
TXALLOC_API void txmem_stats_print_json(int fd);

/* ---- Allocation profile by region (Baldassin et al. 2015, Table 5) ----
 * Every call of txmem_malloc, txmem_calloc, txmem_free and txmem_retire (tm_malloc and
 * tm_free, STAMP's TM_MALLOC and TM_FREE) is counted in one region:
 *   seq  outside transactions, while no parallel region is open;
 *   par  outside transactions, while a parallel region is open: the program brackets the
 *        span where its threads run with txmem_parallel_begin (before it starts them) and
 *        txmem_parallel_end (after it joined them); the bench programs' thread runners do;
 *   tx   inside a transaction, every attempt (an aborted attempt's calls were served too).
 * Allocations are also counted by requested size in TXMEM_PROFILE_BUCKETS buckets, whose
 * upper bounds are 16, 32, 64, 128, 256, 1024 and 4096 bytes, then larger. Frees count
 * calls with a non-NULL pointer. Calls a program makes to the process's malloc directly are
 * not seen, unless it reports them with txmem_profile_note_malloc/free: the profile describes
 * the allocations that go through this layer, whatever allocator serves them. Counters live
 * in the thread (plain increments) and are published
 * as the hot statistics counters are; a thread's first counted call outside a transaction
 * registers it. Option profile=1 prints the table to stderr at exit. */
typedef enum txmem_region {
  TXMEM_REGION_SEQ = 0,
  TXMEM_REGION_PAR = 1,
  TXMEM_REGION_TX = 2,
  TXMEM_REGION_COUNT = 3,
} txmem_region;
#define TXMEM_PROFILE_BUCKETS 8
typedef struct txmem_region_profile {
  uint64_t mallocs; /* the sum of sizes[] */
  uint64_t frees;
  uint64_t bytes; /* requested */
  uint64_t sizes[TXMEM_PROFILE_BUCKETS];
} txmem_region_profile;
typedef struct txmem_profile {
  txmem_region_profile region[TXMEM_REGION_COUNT];
} txmem_profile;
TXALLOC_API void txmem_profile_get(txmem_profile *out);
TXALLOC_API const char *txmem_region_name(txmem_region r); /* "seq", "par", "tx" */
/* The largest request of bucket b (SIZE_MAX for the last one). */
TXALLOC_API size_t txmem_profile_bucket_limit(unsigned b);
/* Open and close a parallel region (they nest: the region is open while more have been
 * opened than closed). Any thread may call them. */
TXALLOC_API void txmem_parallel_begin(void);
TXALLOC_API void txmem_parallel_end(void);
/* Count a call the program made to the process's malloc (size) or free (ptr; NULL is not
 * counted) outside this layer, in the region of a call outside transactions (seq or par),
 * also when the caller is inside a transaction: such memory is not transactional. STAMP's
 * P_MALLOC/P_FREE and SEQ_MALLOC/SEQ_FREE report themselves so (txalloc/stamp/tm.h). */
TXALLOC_API void txmem_profile_note_malloc(size_t size);
TXALLOC_API void txmem_profile_note_free(const void *ptr);

#ifdef __cplusplus
}
#endif
#endif
