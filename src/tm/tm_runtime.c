/* The TM front-end: run-time configuration, thread descriptors, atomic blocks (begin,
 * commit, nesting, rollback and restart), irrevocability requests and the lifecycle
 * callbacks. The backend chosen by TXALLOC_TM runs the attempts, through the operations of
 * tm_backend.h only.
 *
 * Nesting. Every level d of the current transaction has a tm_level: its restart point
 * (the sigjmp_buf taken by TM_ATOMIC in the caller's frame), and the read/write-set sizes
 * when it began. A child's commit keeps its entries (relabelled to the parent); a child's
 * abort truncates the sets to its marks (releasing the locks it took) and jumps to its own
 * restart point, so the parent's work survives (closed nesting). With nesting=flat, levels
 * only count depth: everything belongs to level 1, and any abort restarts (or, tm_abort,
 * cancels) the outermost block. A conflict aborts the innermost level; after three
 * consecutive conflict aborts of one level the abort escalates to its parent (two children
 * that each wait for a lock their parents hold would otherwise retry forever). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "tm/tm_backend.h"
#include "tm/tm_syncchar.h"
#include "txalloc/txmem.h"
#include "util/debug_assert.h"
#include "util/message.h"

tm_config tm_cfg;
tm_backend tm_be;
__thread tm_tx *tm_self __attribute__((tls_model("initial-exec")));
/* Locked (bit 63 set), so it lies above every snapshot bound, tm_view_off_'s 0 included.
 * Both are const: read-only data, never on a cache line with written data (every load
 * through the off view reads them). */
static const uint64_t view_off_lock = UINT64_MAX;
const tm_load_view_ tm_view_off_ = {
    .ort_rshift = 0, .ort_amask = 0, .ort_base = (char *)&view_off_lock, .end = 0};
__thread tm_load_view_ *tm_fast_view_ __attribute__((tls_model("initial-exec"))) = TM_VIEW_OFF_;

static pthread_once_t runtime_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_tx *all_txs;  /* every descriptor ever made (atomic head, append-only) */
static tm_tx *free_txs; /* descriptors of exited threads, for reuse (under threads_lock) */
static unsigned tx_count;

#define TM_MAX_CALLBACKS 8
#define TM_ESCALATE_AFTER 3
#define TM_YIELD_AFTER 3
/* Refills one top-level block may trigger before its next attempt runs irrevocably (Carle
 * et al. double the pool at the second; a block that needs more is larger than any pool the
 * doubling would reach soon, or than the heap). */
#define TM_REFILLS_MAX 4
static tm_callbacks callbacks[TM_MAX_CALLBACKS];
static unsigned callback_count;
static pthread_mutex_t callbacks_lock = PTHREAD_MUTEX_INITIALIZER;

_Noreturn void tm_fatal(const char *what) {
  txalloc_message("tm: fatal: %s", what);
  abort();
}

void tm_pause_or_yield(unsigned i) {
  if ((i & 15) == 15) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* ---- Configuration ---- */
static void thread_key_destructor(void *tx) {
  (void)tx;
  tm_thread_exit();
}

/* fork: the forking thread holds the runtime's two mutexes across the fork, so that the
 * child's copies are not held by threads that do not exist there (a thread reading the
 * statistics, setting up or exiting). Registered at the runtime's initialisation, after the
 * allocator's handlers when txalloc is the process malloc (it initialises at the first
 * malloc): prepare handlers run in reverse order, so threads_lock is taken before the
 * allocator's locks, the order tm_thread_setup uses (it allocates under threads_lock). */
static void atfork_prepare(void) {
  pthread_mutex_lock(&callbacks_lock);
  pthread_mutex_lock(&threads_lock);
}
static void atfork_release(void) {
  pthread_mutex_unlock(&threads_lock);
  pthread_mutex_unlock(&callbacks_lock);
}

static void runtime_init_once(void) {
  tm_cfg.backend = (unsigned)txalloc_opt(TXALLOC_OPT_TM);
  tm_cfg.cm = (tm_cm_kind)txalloc_opt(TXALLOC_OPT_CM);
  tm_cfg.nesting = (tm_nesting_kind)txalloc_opt(TXALLOC_OPT_NESTING);
  tm_cfg.irrevocable_after = (unsigned)txalloc_opt(TXALLOC_OPT_IRREVOCABLE_AFTER);
  if (tm_cfg.backend >= tm_backend_count) tm_fatal("unknown backend");
  tm_be = *tm_backends[tm_cfg.backend];
  if (!tm_be.begin_first || !tm_be.begin_again || !tm_be.commit || !tm_be.rollback || !tm_be.load ||
      !tm_be.store || !tm_be.become_irrevocable)
    tm_fatal("the backend lacks a required operation (tm_backend.h)");
  if (tm_be.init) tm_be.init();
  /* Before the first transaction allocates: txmem spaces objects by the conflict unit. */
  unsigned shift = 0;
  uint64_t entries = 0;
  if (tm_be.conflict_geometry) tm_be.conflict_geometry(&shift, &entries);
  txmem_set_conflict_geometry(shift, entries);
  tm_syncchar_init(tm_be.name);
  if (pthread_key_create(&thread_key, thread_key_destructor) != 0)
    tm_fatal("pthread_key_create failed");
  if (pthread_atfork(atfork_prepare, atfork_release, atfork_release) != 0)
    tm_fatal("pthread_atfork failed");
  if (txalloc_opt(TXALLOC_OPT_STATS)) atexit(tm_stats_print_at_exit);
  if (txalloc_opt(TXALLOC_OPT_VERBOSE))
    txalloc_message("tm: backend %s, cm %u, nesting %u", tm_be.name, tm_cfg.cm, tm_cfg.nesting);
}

void tm_runtime_init(void) { pthread_once(&runtime_once, runtime_init_once); }

/* ---- Threads ---- */
static void levels_grow(tm_tx *tx) {
  unsigned cap = tx->level_cap ? tx->level_cap * 2 : 8;
  tm_level **levels = realloc(tx->levels, cap * sizeof *levels);
  if (!levels) tm_fatal("out of memory for nesting levels");
  for (unsigned i = tx->level_cap; i < cap; i++) {
    levels[i] = i == 1 ? &tx->top_level : calloc(1, sizeof(tm_level));
    if (!levels[i]) tm_fatal("out of memory for nesting levels");
  }
  tx->levels = levels;
  tx->level_cap = cap;
}

/* The read and write sets every backend may use: the read set grows (by the backend), the
 * write set is one reserved region that never moves (other threads may follow pointers
 * into it). */
static void sets_init(tm_tx *tx) {
  tx->rset = malloc((TM_RSET_INITIAL + 1) * sizeof *tx->rset);
  void *region = mmap(NULL, TM_WSET_MAX * sizeof(tm_wentry), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (!tx->rset || region == MAP_FAILED) tm_fatal("cannot allocate a transaction descriptor");
  tx->rset++; /* rset[-1]: where rlast points when the set is empty */
  tm_rset_truncate(tx, 0);
  tx->rlimit = tx->rfull = tx->rset + TM_RSET_INITIAL - 1;
  tx->wset = region;
}

tm_tx *tm_thread_setup(void) {
  tm_runtime_init();
  pthread_mutex_lock(&threads_lock);
  tm_tx *tx = free_txs;
  if (tx) {
    free_txs = tx->free_next;
  } else {
    tx = aligned_alloc(TM_CACHE_LINE,
                       (sizeof *tx + TM_CACHE_LINE - 1) & ~(size_t)(TM_CACHE_LINE - 1));
    if (!tx) tm_fatal("cannot allocate a transaction descriptor");
    memset(tx, 0, sizeof *tx);
    tx->id = ++tx_count;
    sets_init(tx);
    if (tm_be.thread_init) tm_be.thread_init(tx);
    levels_grow(tx);
    tx->all_next = all_txs;
    __atomic_store_n(&all_txs, tx, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&tx->live, true, __ATOMIC_RELAXED);
  tx->rng = 0x9E3779B97F4A7C15ull * tx->id + (uint64_t)(uintptr_t)&tx;
  if (tm_be.thread_attach) tm_be.thread_attach(tx);
  pthread_mutex_unlock(&threads_lock);
  tm_self = tx;
  pthread_setspecific(thread_key, tx);
  return tx;
}

void tm_thread_init(void) {
  if (!tm_self) tm_thread_setup();
}

static void run_callbacks_thread_exit(void);

void tm_thread_exit(void) {
  tm_tx *tx = tm_self;
  if (!tx) return;
  if (tx->depth) tm_fatal("tm_thread_exit inside a transaction");
  run_callbacks_thread_exit();
  if (tm_syncchar_enabled()) tm_syncchar_thread_exit();
  pthread_mutex_lock(&threads_lock);
  tm_stats_fold_thread(tx);
  __atomic_store_n(&tx->live, false, __ATOMIC_RELAXED);
  tx->free_next = free_txs;
  free_txs = tx;
  pthread_mutex_unlock(&threads_lock);
  tm_self = NULL;
  pthread_setspecific(thread_key, NULL);
}

tm_tx *tm_all_descriptors(void) { return __atomic_load_n(&all_txs, __ATOMIC_ACQUIRE); }

/* For tm_stats.c: visits the live descriptors. The caller holds threads_lock (through
 * tm_threads_lock), so that no thread exits, folding its counters, while it reads both the
 * exited total and the live threads. */
void tm_for_each_live(void (*fn)(tm_tx *, void *), void *arg) {
  for (tm_tx *t = all_txs; t; t = t->all_next)
    if (__atomic_load_n(&t->live, __ATOMIC_RELAXED)) fn(t, arg);
}
void tm_threads_lock(bool lock) {
  if (lock)
    pthread_mutex_lock(&threads_lock);
  else
    pthread_mutex_unlock(&threads_lock);
}

/* ---- Callbacks ---- */
int tm_register_callbacks(const tm_callbacks *cb) {
  pthread_mutex_lock(&callbacks_lock);
  unsigned n = __atomic_load_n(&callback_count, __ATOMIC_RELAXED);
  if (n == TM_MAX_CALLBACKS) {
    pthread_mutex_unlock(&callbacks_lock);
    return -1;
  }
  callbacks[n] = *cb;
  __atomic_store_n(&callback_count, n + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&callbacks_lock);
  return 0;
}

/* Lifecycle events. txmem (tm_malloc/tm_free, tm_alloc.c) is the runtime's own subscriber:
 * its hooks are called directly, first, with no table walk or indirect call; the table
 * holds the subscribers registered through tm_register_callbacks, which receive every
 * event after txmem, in registration order (run_table: txmem's hook, then the table). */
typedef enum tm_event { TM_EVENT_BEGIN, TM_EVENT_COMMIT, TM_EVENT_ABORT } tm_event;
static inline void txmem_hook(tm_event event, unsigned depth) {
  switch (event) {
  case TM_EVENT_BEGIN: txmem_tx_begin(depth); return;
  case TM_EVENT_COMMIT: txmem_tx_commit(depth); return;
  case TM_EVENT_ABORT: txmem_tx_abort(depth); return;
  }
}
static __attribute__((noinline)) void run_table(tm_event event, unsigned n, unsigned depth) {
  txmem_hook(event, depth);
  for (unsigned i = 0; i < n; i++) {
    const tm_callbacks *c = &callbacks[i];
    void (*fn)(void *, unsigned) = event == TM_EVENT_BEGIN    ? c->on_begin
                                   : event == TM_EVENT_COMMIT ? c->on_commit
                                                              : c->on_abort;
    if (fn) fn(c->ctx, depth);
  }
}
/* `event` is a constant at every call site: inlined, this is a load, a test and a tail
 * call of txmem's hook in the common case. */
static inline void run_callbacks(tm_event event, unsigned depth) {
  unsigned n = __atomic_load_n(&callback_count, __ATOMIC_ACQUIRE);
  if (TM_UNLIKELY(n)) {
    run_table(event, n, depth);
    return;
  }
  txmem_hook(event, depth);
}
static void run_callbacks_thread_exit(void) {
  txmem_thread_exit();
  unsigned n = __atomic_load_n(&callback_count, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (callbacks[i].on_thread_exit) callbacks[i].on_thread_exit(callbacks[i].ctx);
}

/* ---- Atomic blocks ---- */

/* A block is entered: the level it begins (depth + 1), its retry counters zeroed. */
static inline tm_level *level_enter(tm_tx *tx) {
  unsigned d = tx->depth + 1;
  if (TM_UNLIKELY(d >= tx->level_cap)) levels_grow(tx);
  tm_level *lv = tx->levels[d];
  lv->retries = 0;
  lv->conflict_retries = 0;
  return lv;
}

/* Begins level d (lv = tx->levels[d]), first or again (lv->retries > 0: a retry). The top
 * level's escalation state (top_retries, top_conflicts, want_irrevocable) belongs to the
 * block, not the attempt: it is reset when the block ends (end_top). `fresh`: the block's
 * first attempt, at depth 0. */
static inline __attribute__((always_inline)) void level_begin(tm_tx *tx, tm_level *lv, unsigned d,
                                                              int flags, bool fresh) {
  tx->depth = d;
  if (TM_LIKELY(d == 1)) {
    tx->wlevel = 1; /* next to depth: one store with it */
    lv->flags = flags;
    if (fresh)
      tm_be.begin_first(tx, flags);
    else
      tm_be.begin_again(tx, flags);
    run_callbacks(TM_EVENT_BEGIN, 1); /* a tail call where this is inlined last */
    return;
  }
  tx->wlevel = tm_cfg.nesting == TM_NESTING_CLOSED ? d : 1;
  lv->flags = flags;
  lv->rset_mark = tm_rn(tx);
  lv->wset_mark = tx->wn;
  /* Flat nesting: the children are part of one transaction; subscribers (txmem) treat each
   * reported depth as a level they can roll back on its own, so only depth 1 is reported. */
  if (tm_cfg.nesting == TM_NESTING_CLOSED) run_callbacks(TM_EVENT_BEGIN, d);
  if (flags & TM_FLAG_IRREVOCABLE) tm_become_irrevocable();
}

/* The top-level block ends (commit or tm_abort). Its escalation state and level 1's retry
 * counters go back to zero: they are zero whenever depth is 0 (tm_enter_ relies on it). A
 * block that never aborted changed none of them (each change comes with top_retries++):
 * `retried` is top_retries != 0, read by the caller before its counter stores. */
static inline void end_top(tm_tx *tx, bool retried) {
  tx->depth = 0;
  tx->mode = TM_MODE_NONE;
  tm_fast_view_ = TM_VIEW_OFF_;
  if (TM_UNLIKELY(retried)) {
    tx->top_retries = 0;
    tx->top_conflicts = 0;
    tx->want_irrevocable = false;
    tx->top_refills = 0;
    tx->read_only_off = false;
    tx->top_level.retries = 0;
    tx->top_level.conflict_retries = 0;
  }
}

sigjmp_buf *tm_checkpoint_(int flags) {
  (void)flags;
  tm_tx *tx = tm_self;
  if (TM_UNLIKELY(!tx)) tx = tm_thread_setup();
  tm_level *lv = level_enter(tx);
#ifdef TM_HAVE_FAST_ENTRY_
  lv->ctx = NULL;
#endif
  if (TM_UNLIKELY(tm_syncchar_enabled()) && tx->depth == 0)
    tm_syncchar_site(__builtin_return_address(0));
  return &lv->jb;
}

void tm_begin_(int flags) {
  tm_tx *tx = tm_self;
  unsigned d = tx->depth + 1;
  tm_level *lv = tx->levels[d];
  /* A retry comes here too (the portable entry): its level counted the abort. */
  level_begin(tx, lv, d, flags, d == 1 && lv->retries == 0);
}

#ifdef TM_HAVE_FAST_ENTRY_
/* The fast entry (tm.h): tm_start_ and tm_jump_ are in tm_entry_x86_64.S. tm_start_
 * calls tm_enter_, which begins the level and ends in a tail call to txmem's hook. */

static __attribute__((noinline)) void enter_other(tm_context_ *ctx, int flags) {
  tm_tx *tx = tm_self;
  if (!tx) tx = tm_thread_setup();
  tm_level *lv = level_enter(tx);
  lv->ctx = ctx;
  level_begin(tx, lv, tx->depth + 1, flags, tx->depth == 0);
}

/* The common case, a top-level block of a thread that is set up, has no stack frame: its
 * only calls are tail calls. */
__attribute__((used)) void tm_enter_(tm_context_ *ctx, int flags) { /* called from asm only */
  tm_tx *tx = tm_self;
  if (TM_LIKELY(tx != NULL) && TM_LIKELY(tx->depth == 0)) {
    tm_level *lv = &tx->top_level; /* levels[1]; its retries are 0 (end_top) */
    lv->ctx = ctx;
    level_begin(tx, lv, 1, flags, true);
    return;
  }
  enter_other(ctx, flags);
}
#endif

/* The top-level block committed: counters, end of the block, then the subscribers. */
static inline __attribute__((always_inline)) void commit_top_done(tm_tx *tx, bool read_only,
                                                                  bool irrevocable) {
  /* Every commit goes into one bucket of the retry histogram; the per-thread `commits`
   * counts only those that wrote, so that a read-only commit (the common one) adds one
   * counter, not two: tm_stats_get derives commits and commits_read_only (tm_stats.c). */
  tm_stats *s = &tx->stats;
  unsigned k = tx->top_retries;
  tm_stat_add(
      &s->retry_histogram[k < TM_RETRY_HISTOGRAM_BUCKETS ? k : TM_RETRY_HISTOGRAM_BUCKETS - 1], 1);
  if (!read_only) tm_stat_add(&s->commits, 1);
  if (irrevocable) tm_stat_add(&s->commits_irrevocable, 1);
  end_top(tx, k != 0);
  run_callbacks(TM_EVENT_COMMIT, 1);
}

static __attribute__((noinline)) void commit_other(tm_tx *tx) {
  unsigned d = tx->depth;
  if (d > 1) {
    if (tm_cfg.nesting == TM_NESTING_CLOSED && tm_be.merge_child) tm_be.merge_child(tx, d);
    tx->depth = d - 1;
    tx->wlevel = tm_cfg.nesting == TM_NESTING_CLOSED ? d - 1 : 1;
    if (tm_cfg.nesting == TM_NESTING_CLOSED) run_callbacks(TM_EVENT_COMMIT, d);
    return;
  }
  bool read_only = tx->wn == 0;
  bool irrevocable = tx->irrevocable;
  tm_be.commit(tx);
  tx->irrevocable = false;
  commit_top_done(tx, read_only, irrevocable);
}

/* The common case, a read-only top level in a light mode that never aborted, has no stack
 * frame and needs nothing of the backend (TM_MODE_HEAVY). */
void tm_commit_(void) {
  tm_tx *tx = tm_self;
  if (TM_LIKELY(tx->depth == 1 && tx->wn == 0 && tx->mode < TM_MODE_HEAVY &&
                tx->top_retries == 0)) {
    commit_top_done(tx, true, false); /* folds to retry_histogram[0]; end_top's resets go */
    return;
  }
  commit_other(tx);
}

static void backoff(tm_tx *tx, unsigned retries) {
  unsigned shift = retries < 12 ? retries : 12;
  tx->rng ^= tx->rng << 13;
  tx->rng ^= tx->rng >> 7;
  tx->rng ^= tx->rng << 17;
  uint64_t spins = tx->rng % ((uint64_t)32 << shift);
  for (uint64_t i = 0; i < spins; i++) tm_pause_or_yield((unsigned)i);
}

/* An alloc_refill abort's refill; a heap that cannot serve it sends the restart to run
 * irrevocably, where the allocation fails with ENOMEM instead of aborting again. */
static __attribute__((noinline)) void refill_after_abort(tm_tx *tx) {
  size_t size = tx->refill_size;
  tx->refill_size = 0;
  if (!txmem_refill(size, tx->top_refills++)) tx->want_irrevocable = true;
}

/* Rolls back levels >= level, then restarts (TM_JUMP_RETRY) or skips (TM_JUMP_CANCEL) the
 * block of `level`. */
static _Noreturn void abort_to(tm_tx *tx, unsigned level, tm_abort_cause cause,
                               tm_conflict_class cls, int jump) {
  unsigned depth = tx->depth;
  TXALLOC_ASSERT(level >= 1 && level <= depth);
  tm_be.rollback(tx, level);
  if (TM_UNLIKELY(tm_syncchar_enabled()) && level == 1)
    tm_syncchar_abort(tx, jump == TM_JUMP_CANCEL);
  /* The contract: the sets are back to their sizes when the level began. */
  TXALLOC_ASSERT(tx->wn == (level == 1 ? 0 : tx->levels[level]->wset_mark));
  TXALLOC_ASSERT(tm_rn(tx) <= (level == 1 ? 0 : tx->levels[level]->rset_mark));
  if (level == 1) {
    tx->mode = TM_MODE_NONE;
    tx->irrevocable = false;
    tm_fast_view_ = TM_VIEW_OFF_;
  }
  tx->depth = level - 1;
  tx->wlevel = tm_cfg.nesting == TM_NESTING_CLOSED ? (level > 1 ? level - 1 : 1) : 1;
  for (unsigned d = depth; d >= level; d--)
    if (d == 1 || tm_cfg.nesting == TM_NESTING_CLOSED) run_callbacks(TM_EVENT_ABORT, d);
  /* Outside every level now: the refill takes the heap lock out of the transaction. */
  if (TM_UNLIKELY(tx->refill_size)) refill_after_abort(tx);
  tm_stats *s = &tx->stats;
  tm_stat_add(&s->aborts, 1);
  tm_stat_add(&s->aborts_by_cause[cause], 1);
  if (cls == TM_CLASS_TRUE) tm_stat_add(&s->true_conflicts, 1);
  if (cls == TM_CLASS_FALSE) tm_stat_add(&s->false_conflicts, 1);
  if (cls == TM_CLASS_UNKNOWN) tm_stat_add(&s->unknown_conflicts, 1);
  tx->top_retries++;
  if (tx->top_retries > s->max_consecutive_aborts)
    __atomic_store_n(&s->max_consecutive_aborts, tx->top_retries, __ATOMIC_RELAXED);
  if (cls != TM_CLASS_NONE) {
    tx->top_conflicts++;
    /* irrevocable_after: the block's next top-level attempt runs irrevocably. */
    if (tm_cfg.irrevocable_after && tx->top_conflicts >= tm_cfg.irrevocable_after)
      tx->want_irrevocable = true;
  }
  tm_level *lv = tx->levels[level];
  lv->retries++;
  if (level == 1 && jump == TM_JUMP_CANCEL) end_top(tx, true); /* after: it zeroes lv's counters */
  if (tm_be.after_abort) tm_be.after_abort(tx);
  if (level == 1 && jump == TM_JUMP_RETRY && cls != TM_CLASS_NONE && tm_cfg.cm == TM_CM_BACKOFF)
    backoff(tx, lv->retries);
  /* Repeated conflicts usually mean the other transaction is descheduled (more threads than
   * cores): give it the processor instead of spinning through retries. */
  if (cls != TM_CLASS_NONE && tx->top_retries >= TM_YIELD_AFTER) sched_yield();
#ifdef TM_HAVE_FAST_ENTRY_
  if (lv->ctx) { /* fast entry: tm_start_ returns 1 with the level begun again, or 0 */
    if (jump == TM_JUMP_RETRY) level_begin(tx, lv, level, lv->flags, false);
#ifdef __SANITIZE_ADDRESS__
    __asan_handle_no_return(); /* the frames jumped over leave the stack */
#endif
    tm_jump_(lv->ctx, jump == TM_JUMP_RETRY);
  }
#endif
  siglongjmp(lv->jb, jump);
}

void tm_abort_read_only(tm_tx *tx) {
  tx->read_only_off = true;
  abort_to(tx, 1, TM_ABORT_READ_ONLY, TM_CLASS_NONE, TM_JUMP_RETRY);
}

unsigned tm_conflict_level(const tm_tx *tx) {
  return tm_cfg.nesting == TM_NESTING_CLOSED ? tx->depth : 1;
}

unsigned tm_level_of_read(const tm_tx *tx, size_t index) {
  if (tm_cfg.nesting == TM_NESTING_FLAT) return 1;
  for (unsigned d = tx->depth; d > 1; d--)
    if (tx->levels[d]->rset_mark <= index) return d;
  return 1;
}

void tm_abort_conflict(tm_tx *tx, unsigned level, tm_abort_cause cause, tm_conflict_class cls) {
  while (level > 1 && tx->levels[level]->conflict_retries >= TM_ESCALATE_AFTER) level--;
  tx->levels[level]->conflict_retries++;
  abort_to(tx, level, cause, cls, TM_JUMP_RETRY);
}

static tm_tx *current_or_die(const char *what) {
  tm_tx *tx = tm_self;
  if (!tx || tx->depth == 0) tm_fatal(what);
  return tx;
}

void tm_restart(void) {
  tm_tx *tx = current_or_die("tm_restart outside a transaction");
  abort_to(tx, tm_conflict_level(tx), TM_ABORT_EXPLICIT, TM_CLASS_NONE, TM_JUMP_RETRY);
}

void tm_abort_refill(tm_tx *tx, size_t size) {
  if (tx->top_refills < TM_REFILLS_MAX)
    tx->refill_size = size;
  else
    tx->want_irrevocable = true;
  abort_to(tx, 1, TM_ABORT_ALLOC_REFILL, TM_CLASS_NONE, TM_JUMP_RETRY);
}

void tm_abort(void) {
  tm_tx *tx = current_or_die("tm_abort outside a transaction");
  abort_to(tx, tm_conflict_level(tx), TM_ABORT_EXPLICIT, TM_CLASS_NONE, TM_JUMP_CANCEL);
}

void tm_restart_outermost(void) {
  tm_tx *tx = current_or_die("tm_restart_outermost outside a transaction");
  abort_to(tx, 1, TM_ABORT_EXPLICIT, TM_CLASS_NONE, TM_JUMP_RETRY);
}

void tm_abort_outermost(void) {
  tm_tx *tx = current_or_die("tm_abort_outermost outside a transaction");
  abort_to(tx, 1, TM_ABORT_EXPLICIT, TM_CLASS_NONE, TM_JUMP_CANCEL);
}

void tm_become_irrevocable(void) {
  tm_tx *tx = tm_self;
  if (!tx || tx->depth == 0) return;
  if (tx->irrevocable || tm_be.become_irrevocable(tx)) return;
  tx->want_irrevocable = true;
  abort_to(tx, 1, TM_ABORT_IRREVOCABLE, TM_CLASS_NONE, TM_JUMP_RETRY);
}

void tm_request_validation(void) {
  tm_runtime_init();
  if (tm_be.request_validation) tm_be.request_validation();
}

unsigned tm_last_abort_status(void) {
  tm_tx *tx = tm_self;
  return tx ? tx->abort_status : 0;
}

bool tm_in_transaction(void) {
  tm_tx *tx = tm_self;
  return tx && tx->depth > 0;
}

bool tm_is_irrevocable(void) {
  tm_tx *tx = tm_self;
  return tx && tx->depth > 0 && tx->irrevocable;
}

unsigned tm_depth(void) {
  tm_tx *tx = tm_self;
  return tx ? tx->depth : 0;
}
