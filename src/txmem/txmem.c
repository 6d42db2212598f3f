/* The hook contract (include/txalloc/txmem.h): transaction events and allocation calls.
 *
 * Costs: outside a transaction, txmem_malloc/txmem_free test one thread-local field, count
 * the call in the thread's profile (txmem_profile.h) and take the plain path. A nested begin(d)
 * pushes a level; a top-level begin writes no level (I5): it sets the depth, counts the transaction
 * and, with safe_reuse, announces its epoch. Commit/abort of a level that neither allocated nor
 * freed only pops it (and ends the announcement at the top level): they never touch a log. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "thrifty/thrifty.h"
#include "txalloc/txalloc.h"
#include "txmem/txmem_direct.h"
#include "txmem/txmem_internal.h"
#include "txmem/txmem_run.h"

/* ---- The plain path ----
 * The fast paths of this file end in tail calls only (rare work in noinline functions), so
 * that they need no stack frame. */
static void *plain_malloc_first(size_t size);
static void plain_free_first(void *ptr);

static inline void *plain_malloc(size_t size) {
  if (TXMEM_UNLIKELY(!atomic_load_explicit(&txmem_cfg_ready, memory_order_acquire)))
    return plain_malloc_first(size);
  if (TXMEM_LIKELY(txmem_cfg.strategy == TXMEM_TXALLOC)) {
    void *p = txmem_direct_take(size);
    if (TXMEM_LIKELY(p != NULL)) return p;
    return txa_spaced_malloc(size);
  }
  if (txmem_cfg.strategy == TXMEM_THRIFTY) return thrifty_malloc(size);
  return malloc(size);
}

/* calloc of count * size (= bytes, checked) outside transactions, by the strategy. */
static inline void *plain_calloc(size_t count, size_t size, size_t bytes) {
  int strategy = txmem_config_get()->strategy;
  if (strategy == TXMEM_TXALLOC) return txa_spaced_calloc(bytes);
  if (strategy == TXMEM_THRIFTY) {
    void *p = thrifty_malloc(bytes);
    if (p) memset(p, 0, bytes);
    return p;
  }
  return calloc(count, size);
}

static inline void plain_free(void *ptr) {
  if (TXMEM_UNLIKELY(!atomic_load_explicit(&txmem_cfg_ready, memory_order_acquire))) {
    plain_free_first(ptr);
    return;
  }
  if (TXMEM_LIKELY(txmem_cfg.strategy == TXMEM_TXALLOC))
    txalloc_free(ptr);
  else if (txmem_cfg.strategy == TXMEM_THRIFTY)
    thrifty_free(ptr);
  else
    free(ptr);
}

/* The first use of the layer in the process: read the configuration. */
static __attribute__((noinline)) void *plain_malloc_first(size_t size) {
  txmem_config_init_slow();
  return plain_malloc(size);
}
static __attribute__((noinline)) void plain_free_first(void *ptr) {
  txmem_config_init_slow();
  plain_free(ptr);
}

/* txalloc strategy: gives back an object of this thread's undo log (live, allocated by this
 * thread in the running transaction) of `size` requested bytes. */
static inline void release_own(void *ptr, size_t size) {
  if (TXMEM_LIKELY(size <= TXMEM_DIRECT_SMALL_MAX))
    txmem_direct_give_back(ptr);
  else
    txalloc_free(ptr);
}

/* ---- Levels ----
 * The hooks' common cases stay free of calls (the rare work is in noinline functions
 * reached by tail calls), so that they need no stack frame. The top level has its own
 * path: its logs are empty when it begins and its level record is constant (I5), so a
 * top-level begin that will neither allocate nor free pays only the depth, the count of
 * transactions and the epoch announcement. */

/* The 256th top-level begin since the last publication (tx_pending wrapped to 0). */
static __attribute__((noinline)) void begin_top_publish(txmem_thread *t) {
  t->hot[TXMEM_HOT_transactions] += 256;
  txmem_hot_publish(t);
  txmem_epoch_announce(t);
}

/* Counts the top-level begin; the announcement follows (a tail call when it is rare). */
static inline bool begin_top_count(txmem_thread *t) {
  txmem_assert_between_top(t);
  /* depth first (only this thread reads it), so that the rest can end in tail calls */
  t->depth = 1;
  if (TXMEM_UNLIKELY(++t->tx_pending == 0)) {
    begin_top_publish(t);
    return false;
  }
  return true;
}

static inline void begin_nested(txmem_thread *t, unsigned depth) {
  uint64_t seq = ++t->ticket;
  const txmem_level *parent = &t->levels[depth - 1];
  /* I1 for the new level, and I2's order of seqs */
  TXALLOC_ASSERT(parent->undo_start <= t->undo_len && parent->commit_start <= t->commit_len);
  TXALLOC_ASSERT(parent->seq < seq);
  TXALLOC_ASSERT(txmem_run_level_mark(t, depth - 1) <= t->run_top); /* I6 */
  t->levels[depth] = (txmem_level){seq, t->undo_len, t->commit_len, t->run_top};
  t->cur_seq = seq;
  t->cur_undo_start = t->undo_len;
  t->run_mark = t->run_top;
  t->depth = depth;
}

static __attribute__((noinline)) void begin_slow(txmem_thread *t, unsigned depth) {
  if (!t->ready) txmem_thread_setup(t);
  if (depth != t->depth + 1)
    txmem_contract_error("begin: depth must be the open levels + 1", depth, t->depth);
  if (depth == 1) {
    if (begin_top_count(t)) txmem_epoch_announce(t);
    return;
  }
  if (depth >= t->levels_cap)
    t->levels = txmem_meta_grow(t->levels, &t->levels_cap, sizeof *t->levels, depth + 1);
  begin_nested(t, depth);
}

/* The top level in the other announce modes (frameless), and contract errors. */
static __attribute__((noinline)) void begin_top_other(txmem_thread *t) {
  if (TXMEM_UNLIKELY(t->depth != 0 || !t->top)) { /* or a thread's first begin */
    begin_slow(t, 1);
    return;
  }
  /* Quiet or fenced: a sticky thread at depth 0 took txmem_tx_begin's own path. */
  if (begin_top_count(t) && t->top == TXMEM_TOP_FENCED) txmem_epoch_announce_fenced(t);
}

void txmem_tx_begin(unsigned depth) {
  txmem_thread *t = &txmem_tls;
  if (TXMEM_LIKELY(depth == 1)) {
    /* The default mode inline (the thread is set up: levels[1] exists). */
    if (TXMEM_LIKELY(t->depth == 0 && t->top == TXMEM_TOP_STICKY)) {
      if (begin_top_count(t)) txmem_epoch_announce_sticky(t);
      return;
    }
    begin_top_other(t);
    return;
  }
  /* A nested level's parent is open, so the thread is set up. */
  if (TXMEM_UNLIKELY(depth != t->depth + 1 || depth >= t->levels_cap)) {
    begin_slow(t, depth);
    return;
  }
  begin_nested(t, depth);
}

/* Level `depth` is the innermost again: refresh the cached copies. */
static inline void level_current(txmem_thread *t, unsigned depth) {
  t->cur_seq = t->levels[depth].seq;
  t->cur_undo_start = t->levels[depth].undo_start;
  t->run_mark = txmem_run_level_mark(t, depth);
}

/* A child's commit turns its speculative frees of objects allocated by the parent (or by
 * an earlier committed child of the parent) into balanced frees: released now, dropped
 * from the undo log. Others stay in the commit log for the top level. */
static void merge_child_frees(txmem_thread *t, const txmem_level *child,
                              const txmem_level *parent) {
  size_t w = child->commit_start;
  uint32_t parent_mark = txmem_run_level_mark(t, (unsigned)(parent - t->levels));
  for (size_t i = child->commit_start; i < t->commit_len; i++) {
    void *p = t->commit[i];
    /* a run object of the parent (I6: its slice runs from parent_mark to run_top) */
    if (t->run_top > parent_mark && txmem_run_free_from(t, p, parent_mark)) continue;
    size_t pos = txmem_index_find(t, p);
    if (pos != SIZE_MAX && t->undo[pos].seq >= parent->seq) {
      size_t size = t->undo[pos].size;
      txmem_undo_kill(t, pos, parent->undo_start);
      txmem_backend_release(t, p);
      txmem_hot_count(t, TXMEM_HOT_balanced_recycles, 1);
      txmem_hot_count(t, TXMEM_HOT_balanced_bytes, size);
    } else {
      t->commit[w++] = p;
    }
  }
  t->commit_len = w;
}

/* Top-level commit of a transaction whose undo log has indexed entries. */
static __attribute__((noinline)) void commit_top_indexed(txmem_thread *t) {
  txmem_undo_reset(t);
  size_t n = t->commit_len;
  if (n) {
    t->commit_len = 0;
    txmem_epoch_release_committed(t, t->commit, n);
  }
}

/* Top-level commit of a transaction that allocated or freed: its allocations become
 * permanent (the undo log is forgotten, I4) and its speculative frees are released. Inline
 * and ending in tail calls: without indexed entries (at most TXMEM_INDEX_PENDING
 * allocations) forgetting the log is three stores, with no call. */
static inline void commit_top_logs(txmem_thread *t) {
  if (TXMEM_UNLIKELY(t->index_count != 0)) {
    commit_top_indexed(t);
    return;
  }
  /* txmem_undo_reset without an index to clear */
  t->undo_len = 0;
  t->undo_dead = 0;
  t->indexed_upto = 0;
  size_t n = t->commit_len;
  if (n) {
    t->commit_len = 0;
    txmem_epoch_release_committed(t, t->commit, n);
  }
}

static __attribute__((noinline)) void commit_slow(txmem_thread *t, unsigned depth) {
  if (depth == 0 || depth != t->depth)
    txmem_contract_error("commit: depth must be the innermost open level", depth, t->depth);
  /* depth >= 2 here: the top level's commit is txmem_tx_commit's own path. */
  const txmem_level *child = &t->levels[depth];
  TXALLOC_ASSERT(t->levels[depth - 1].undo_start <= child->undo_start &&
                 child->undo_start <= t->undo_len); /* I1 */
  TXALLOC_ASSERT(t->levels[depth - 1].commit_start <= child->commit_start &&
                 child->commit_start <= t->commit_len); /* I1 */
  if (t->commit_len > child->commit_start && t->txalloc)
    merge_child_frees(t, child, &t->levels[depth - 1]);
  t->depth = depth - 1;
  level_current(t, depth - 1);
}

void txmem_tx_commit(unsigned depth) {
  txmem_thread *t = &txmem_tls;
  if (TXMEM_UNLIKELY(depth != 1 || t->depth != 1)) {
    commit_slow(t, depth); /* nested levels and contract errors */
    return;
  }
  /* The top level, any announce mode. cur_seq and cur_undo_start are the top level's, 0
   * (I5). */
  t->depth = 0;
  txmem_epoch_leave(t);
  /* I6: the run's survivors leave it (ordinary objects from now on). */
  t->run_base = t->run_mark = t->run_top;
  if (TXMEM_UNLIKELY(t->undo_len != 0 || t->commit_len != 0)) commit_top_logs(t);
  txmem_assert_between_top(t);
}

void txmem_tx_abort(unsigned depth) {
  txmem_thread *t = &txmem_tls;
  if (TXMEM_UNLIKELY(depth == 0 || depth > t->depth))
    txmem_contract_error("abort: depth must be an open level", depth, t->depth);
  const txmem_level *level = &t->levels[depth];
  size_t undo_start = level->undo_start;
  TXALLOC_ASSERT(undo_start <= t->undo_len && level->commit_start <= t->commit_len); /* I1 */
  t->commit_len = level->commit_start;
  uint32_t run_mark = txmem_run_level_mark(t, depth);
  if (t->run_top != run_mark) {
    /* I6: the level's run objects and its children's are the slice above its mark: they
     * are free again, in the run, at once (the bump pointer reset). */
    uint64_t released = t->run_top - run_mark;
    t->run_top = run_mark;
    txmem_direct_count_frees(t->run_class, released);
    txmem_count(t, TXMEM_C_aborted_allocs, released);
    txmem_count(t, TXMEM_C_aborted_bytes, released * t->run_size);
  }
  if (t->undo_len > undo_start) {
    uint64_t released = 0, bytes = 0;
    for (size_t i = t->undo_len; i-- > undo_start;) {
      void *p = t->undo[i].ptr;
      if (!p) continue;
      size_t size = t->undo[i].size;
      bytes += size;
      released++;
      if (t->txalloc)
        release_own(p, size);
      else
        txmem_backend_release(t, p);
    }
    if (depth == 1)
      txmem_undo_reset(t);
    else
      txmem_undo_truncate(t, undo_start);
    txmem_count(t, TXMEM_C_aborted_allocs, released);
    txmem_count(t, TXMEM_C_aborted_bytes, bytes);
  }
  t->depth = depth - 1;
  if (depth > 1) {
    level_current(t, depth - 1);
  } else {
    /* I5: deeper levels may have been open; the next top level finds the copies at 0. */
    t->cur_seq = 0;
    t->cur_undo_start = 0;
    t->run_mark = t->run_base;
    txmem_epoch_leave(t);
    txmem_assert_between_top(t);
  }
}

bool txmem_in_tx(void) { return txmem_tls.depth != 0; }
unsigned txmem_depth(void) { return txmem_tls.depth; }

/* ---- Allocation ---- */
/* Whether the run serves a request of `size` bytes now (I6): not for another size, when
 * used up, of an older placement, or without a run (run_size 0). */
static inline bool run_serves(const txmem_thread *t, size_t size) {
  return size == t->run_size && t->run_top != t->run_len &&
         t->run_gen == atomic_load_explicit(&txmem_placement_gen, memory_order_relaxed);
}
/* An allocation in a transaction through the undo log (any strategy). */
static inline void *tx_malloc(txmem_thread *t, size_t size) {
  void *p = t->txalloc ? plain_malloc(size) : txmem_backend_malloc(t, size);
  if (TXMEM_UNLIKELY(!p)) return NULL;
  txmem_undo_push(t, p, size, t->cur_seq);
  t->hot[TXMEM_HOT_tx_mallocs]++;
  t->hot[TXMEM_HOT_speculative_bytes] += size;
  txmem_profile_count_tx_malloc(&t->prof, size);
  return p;
}

/* Appends ptr to a full commit log (out of line: the frees' fast paths stay frameless). */
static __attribute__((noinline)) void commit_push_grow(txmem_thread *t, void *ptr) {
  t->commit = txmem_meta_grow(t->commit, &t->commit_cap, sizeof *t->commit, t->commit_len + 1);
  t->commit[t->commit_len++] = ptr;
}

static inline void tx_free(txmem_thread *t, void *ptr) {
  t->hot[TXMEM_HOT_tx_frees]++;
  if (t->txalloc) {
    /* a run object of the innermost level (I6): balanced */
    if (t->run_top > t->run_mark && txmem_run_free_from(t, ptr, t->run_mark)) return;
    /* The common case first: the newest allocation, freed again (Figure 3). */
    size_t n = t->undo_len;
    size_t pos =
        n > t->indexed_upto && t->undo[n - 1].ptr == ptr ? n - 1 : txmem_index_find(t, ptr);
    if (pos != SIZE_MAX && t->undo[pos].seq >= t->cur_seq) {
      size_t size = t->undo[pos].size;
      txmem_undo_kill(t, pos, t->cur_undo_start);
      release_own(ptr, size);
      t->hot[TXMEM_HOT_balanced_recycles]++;
      t->hot[TXMEM_HOT_balanced_bytes] += size;
      return;
    }
  }
  if (TXMEM_UNLIKELY(t->commit_len == t->commit_cap)) {
    commit_push_grow(t, ptr);
    return;
  }
  t->commit[t->commit_len++] = ptr;
}

/* Out-of-line, reached by tail calls: keep the fast paths frameless (the wrap strategies'
 * frees, whose common path is tx_free itself, keep it inline). */
__attribute__((noinline)) void *txmem_tx_malloc_logged(txmem_thread *t, size_t size) {
  return tx_malloc(t, size);
}
static __attribute__((noinline)) void tx_free_cold(txmem_thread *t, void *ptr) { tx_free(t, ptr); }

/* A thread's first call outside transactions: registered, so that its profile counts are
 * published (txmem_profile.h). Then the call again. */
static __attribute__((noinline)) void *malloc_unregistered(size_t size) {
  txmem_thread_setup(&txmem_tls);
  return txmem_malloc(size);
}
static __attribute__((noinline)) void free_unregistered(void *ptr) {
  txmem_thread_setup(&txmem_tls);
  txmem_free(ptr);
}

void *txmem_malloc(size_t size) {
  txmem_thread *t = &txmem_tls;
  if (TXMEM_LIKELY(t->depth == 0)) {
    if (TXMEM_UNLIKELY(!t->rec)) return malloc_unregistered(size);
    txmem_profile_count_malloc(&t->prof, txmem_profile_outside(), size);
    return plain_malloc(size);
  }
  /* Fast path (txalloc): the next object of the run (I6). */
  if (TXMEM_LIKELY(run_serves(t, size))) return txmem_run_take(t, size);
  /* Fast path (txalloc, run objects in flight, so the run cannot be refilled now; room in
   * the log's unindexed tail): allocate from the thread's bin and append. */
  size_t n = t->undo_len;
  if (TXMEM_LIKELY(t->txalloc && t->run_top != t->run_base && n < t->undo_cap &&
                   n - t->indexed_upto < TXMEM_INDEX_PENDING)) {
    void *p = txmem_direct_take(size);
    if (TXMEM_UNLIKELY(!p)) return txmem_tx_malloc_logged(t, size); /* refill, large, ... */
    t->undo[n] = (txmem_undo_entry){p, size, t->cur_seq};
    t->undo_len = n + 1;
    t->hot[TXMEM_HOT_tx_mallocs]++;
    t->hot[TXMEM_HOT_speculative_bytes] += size;
    txmem_profile_count_tx_malloc(&t->prof, size);
    return p;
  }
  return txmem_run_malloc_miss(t, size); /* refills an idle run, else the undo log */
}

void *txmem_calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  txmem_thread *t = &txmem_tls;
  if (TXMEM_LIKELY(t->depth == 0)) {
    if (TXMEM_UNLIKELY(!t->rec)) txmem_thread_setup(t);
    txmem_profile_count_malloc(&t->prof, txmem_profile_outside(), bytes);
    return plain_calloc(count, size, bytes);
  }
  void *p = run_serves(t, bytes) ? txmem_run_take(t, bytes) : txmem_run_malloc_miss(t, bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

void txmem_free(void *ptr) {
  if (!ptr) return;
  txmem_thread *t = &txmem_tls;
  if (TXMEM_LIKELY(t->depth == 0)) {
    if (TXMEM_UNLIKELY(!t->rec)) {
      free_unregistered(ptr);
      return;
    }
    txmem_profile_count_free(&t->prof);
    plain_free(ptr);
    return;
  }
  /* Fast path (txalloc): the run's newest object, allocated by the current level (above its
   * mark: balanced by I6), freed again (Figure 3): it goes back to the run. */
  uint32_t top = t->run_top;
  if (TXMEM_LIKELY(top > t->run_mark && t->run[top - 1] == ptr)) {
    t->run_top = top - 1;
    t->hot[TXMEM_HOT_tx_frees]++;
    txmem_run_count_balanced_free(t);
    return;
  }
  /* Fast path (txalloc): the newest allocation, made by the current level (position >=
   * cur_undo_start: balanced by I2) and not yet indexed, freed again (Figure 3): pop its
   * entry and give the object straight back to the thread's bin. */
  if (TXMEM_UNLIKELY(!t->txalloc)) {
    tx_free(t, ptr);
    return;
  }
  size_t n = t->undo_len;
  if (TXMEM_LIKELY(n > t->indexed_upto && n > t->cur_undo_start && t->undo[n - 1].ptr == ptr)) {
    size_t size = t->undo[n - 1].size;
    t->undo_len = --n;
    if (TXMEM_UNLIKELY(n > t->cur_undo_start && !t->undo[n - 1].ptr)) {
      while (t->undo_len > t->cur_undo_start && !t->undo[t->undo_len - 1].ptr) {
        t->undo_len--;
        t->undo_dead--;
      }
      if (t->indexed_upto > t->undo_len) t->indexed_upto = t->undo_len;
    }
    t->hot[TXMEM_HOT_tx_frees]++;
    t->hot[TXMEM_HOT_balanced_recycles]++;
    t->hot[TXMEM_HOT_balanced_bytes] += size;
    release_own(ptr, size);
    return;
  }
  /* Fast path (txalloc): the current level has no undo entry (undo_len == cur_undo_start)
   * and no run object (run_top == run_mark), so by I2 and I6 ptr cannot be balanced, and
   * tx_free would find it speculative after its lookup. Append it to the commit log (the
   * common case of a transaction that frees an object allocated before it, such as a set's
   * remove). */
  size_t c = t->commit_len;
  if (TXMEM_LIKELY(n == t->cur_undo_start && top == t->run_mark && c < t->commit_cap)) {
    t->commit[c] = ptr;
    t->commit_len = c + 1;
    t->hot[TXMEM_HOT_tx_frees]++;
    return;
  }
  tx_free_cold(t, ptr);
}

void txmem_retire(void *ptr) {
  if (!ptr) return;
  txmem_thread *t = &txmem_tls;
  if (t->depth) {
    tx_free(t, ptr);
    return;
  }
  if (TXMEM_UNLIKELY(!t->ready)) txmem_thread_setup(t);
  txmem_profile_count_free(&t->prof);
  txmem_epoch_retire_one(t, ptr);
}

void txmem_flush(void) {
  txmem_thread *t = &txmem_tls;
  if (t->depth) return;
  if (TXMEM_UNLIKELY(!t->ready)) txmem_thread_setup(t);
  txmem_epoch_flush(t);
  txmem_cache_flush(t);
  txmem_run_drop(t);
}
