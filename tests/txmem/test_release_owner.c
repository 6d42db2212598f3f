/* Where a committed transactional free goes back, for the strategy in TXALLOC_TXMEM: the
 * commit decides it once, with the object's usable size for the statistics, and the
 * release after the epoch (or at once without safe reuse) follows that decision.
 *   1. An object of the process's malloc (foreign to txalloc) goes back to the process's
 *      free: no allocator report, deferred_bytes grows by its malloc_usable_size, and (plain
 *      builds) the process heap's in-use bytes are back where they were; in sanitizer
 *      builds a wrong free or a leak is the sanitizer's report.
 *   2. txalloc strategy: interior pointers of a small and of a large txalloc object reach
 *      txalloc_free, which reports each as an invalid (interior) free, in commit order; they
 *      add txalloc_usable_size's answer for them (0) to deferred_bytes, a valid object of
 *      the same commit its usable size; the objects themselves are unharmed and freed
 *      cleanly afterwards.
 *   3. Orphans keep the decision: a thread frees a foreign object and one of its own in a
 *      transaction while an older transaction of the main thread holds them back, exits
 *      (handing both over, with safe reuse), and the main thread's flush releases them
 *      without a report.
 *   4. txalloc strategy: the release of a small or medium object (the allocator's
 *      owner-side free with the span kind the commit found, no second region-map lookup)
 *      still checks the object: a small and a medium object freed by two committed
 *      transactions are reported as double frees at their second release, in commit
 *      order; an object freed outside transactions after its transactional free, before
 *      its release, is reported once (at the release with safe reuse, at the plain free
 *      without); a small and a medium object another thread allocated (and still owns)
 *      go back to it as remote frees, without a report. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "txmem_test.h"

static int calls;
static txalloc_error_kind kinds[4];
static const void *ptrs[4];
static char messages[4][256];

static void record(txalloc_error_kind kind, const void *ptr, const char *message, void *arg) {
  (void)arg;
  if (calls < 4) {
    kinds[calls] = kind;
    ptrs[calls] = ptr;
    snprintf(messages[calls], sizeof messages[calls], "%s", message ? message : "(null)");
  }
  calls++;
}

static txmem_stats stats_now(void) {
  txmem_stats s;
  txmem_stats_get(&s);
  return s;
}

/* Frees the n pointers in one committed top-level transaction; checks that they were all
 * counted as speculative frees and deferred with `bytes` usable bytes in all. */
static void commit_frees(void *const *objs, int n, size_t bytes, const char *what) {
  txmem_stats s0 = stats_now();
  txmem_tx_begin(1);
  for (int i = 0; i < n; i++) txmem_free(objs[i]);
  txmem_tx_commit(1);
  txmem_stats s1 = stats_now();
  CHECKF(s1.speculative_frees - s0.speculative_frees == (uint64_t)n, "%s: %llu frees, want %d",
         what, (unsigned long long)(s1.speculative_frees - s0.speculative_frees), n);
  CHECKF(s1.deferred_bytes - s0.deferred_bytes == bytes, "%s: deferred %llu bytes, want %zu", what,
         (unsigned long long)(s1.deferred_bytes - s0.deferred_bytes), bytes);
}

static void check_limbo_empty(const char *what) {
  txmem_stats s = stats_now();
  CHECKF(s.limbo_objects == 0 && s.limbo_bytes == 0, "%s: limbo %llu objects, %llu bytes", what,
         (unsigned long long)s.limbo_objects, (unsigned long long)s.limbo_bytes);
}

/* ---- 1. a foreign object ---- */
static void test_foreign(void) {
  /* Round 0 grows the layer's bookkeeping (commit log, limbo ring), which lives in the
   * process heap: only later rounds compare its in-use bytes. Above glibc's thread-cache
   * sizes, so that the free shows in mallinfo2. */
  enum { SIZE = 4000 };
  for (int round = 0; round < 3; round++) {
    txmem_flush();
    size_t heap0 = TXMEM_TEST_SANITIZED ? 0 : mallinfo2().uordblks;
    char *p = malloc(SIZE);
    CHECK(p != NULL);
    memset(p, 7, SIZE);
    size_t usable = malloc_usable_size(p);
    void *objs[1] = {p};
    commit_frees(objs, 1, usable, "foreign");
    txmem_flush();
    check_limbo_empty("foreign");
    CHECKF(calls == 0, "foreign object: %d allocator reports (first: %s)", calls, messages[0]);
    if (!TXMEM_TEST_SANITIZED && round > 0)
      CHECKF(mallinfo2().uordblks == heap0, "process heap in use: %zu bytes, %zu before",
             mallinfo2().uordblks, heap0);
  }
}

/* ---- 2. interior pointers of txalloc objects ---- */
static void test_interior(void) {
  if (txmem_get_strategy() != TXMEM_TXALLOC) return;
  calls = 0;
  /* Outside a transaction txmem_malloc is txalloc_malloc: committed objects. */
  char *small = txmem_malloc(64);
  char *large = txmem_malloc((size_t)8 << 20);
  char *valid = txmem_malloc(100);
  CHECK(small && large && valid);
  memset(small, 3, 64);
  memset(large, 4, 4096 + 64);
  size_t expected = txalloc_usable_size(small + 16) + txalloc_usable_size(large + 4096) +
                    txalloc_usable_size(valid);
  CHECK(expected == txalloc_usable_size(valid)); /* the interior ones count 0 */
  void *objs[3] = {small + 16, large + 4096, valid};
  commit_frees(objs, 3, expected, "interior");
  txmem_flush();
  check_limbo_empty("interior");
  CHECKF(calls == 2, "%d allocator reports, want 2", calls);
  const void *want[2] = {small + 16, large + 4096};
  for (int i = 0; i < 2 && i < calls; i++) {
    CHECKF(kinds[i] == TXALLOC_ERROR_INVALID_FREE && ptrs[i] == want[i] &&
               strstr(messages[i], "interior") != NULL,
           "report %d: kind %d, %p (want %p): %s", i, (int)kinds[i], ptrs[i], want[i], messages[i]);
  }
  /* The bad frees did nothing: the objects are intact and go back cleanly. */
  CHECK(small[0] == 3 && small[63] == 3 && large[4096] == 4 && large[4096 + 63] == 4);
  calls = 0;
  txmem_free(small);
  txmem_tx_begin(1);
  txmem_free(large);
  txmem_tx_commit(1);
  txmem_flush();
  CHECKF(calls == 0, "freeing the real objects: %d reports (first: %s)", calls, messages[0]);
}

/* ---- 3. orphans ---- */
static void *foreign_obj; /* handed to the freer; its own object it allocates itself */

static void *exiting_freer(void *arg) {
  (void)arg;
  char *own = txmem_malloc(96);
  memset(own, 1, 96);
  txmem_tx_begin(1);
  txmem_free(foreign_obj);
  txmem_free(own);
  txmem_tx_commit(1);
  txmem_thread_exit(); /* the main thread's transaction holds both: they become orphans */
  return NULL;
}

static void test_orphans(void) {
  calls = 0;
  foreign_obj = malloc(300);
  CHECK(foreign_obj != NULL);
  memset(foreign_obj, 2, 300);
  txmem_stats s0 = stats_now();
  txmem_tx_begin(1); /* announced (with safe reuse) before the freer's frees are tagged */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, exiting_freer, NULL) == 0);
  pthread_join(t, NULL);
  txmem_stats s1 = stats_now();
  uint64_t want = txmem_safe_reuse() ? 2 : 0;
  CHECKF(s1.orphaned - s0.orphaned == want, "orphaned %llu, want %llu",
         (unsigned long long)(s1.orphaned - s0.orphaned), (unsigned long long)want);
  txmem_tx_commit(1);
  txmem_flush(); /* releases the orphans: the foreign one to free, the other to its allocator */
  check_limbo_empty("orphans");
  CHECKF(calls == 0, "orphans: %d allocator reports (first: %s)", calls, messages[0]);
}

/* ---- 4. double frees and remote frees through the limbo ---- */
static _Atomic int owner_phase;
static void *owned[2]; /* a small and a medium object of the owner thread */

static void *owner_thread(void *arg) {
  (void)arg;
  owned[0] = txalloc_malloc(48);
  owned[1] = txalloc_malloc(1500); /* medium: above the largest small class, below runs */
  atomic_store(&owner_phase, 1);
  while (atomic_load(&owner_phase) < 2) sched_yield(); /* keeps its heap while they go back */
  return NULL;
}

static void test_double_and_remote(void) {
  if (txmem_get_strategy() != TXMEM_TXALLOC) return;
  calls = 0;
  void *objs[2] = {txmem_malloc(48), txmem_malloc(1500)}; /* small, medium class */
  CHECK(objs[0] && objs[1]);
  size_t bytes = txalloc_usable_size(objs[0]) + txalloc_usable_size(objs[1]);
  commit_frees(objs, 2, bytes, "double, first");
  commit_frees(objs, 2, bytes, "double, second"); /* the size does not depend on liveness */
  txmem_flush();
  check_limbo_empty("double");
  CHECKF(calls == 2, "double frees: %d allocator reports, want 2", calls);
  for (int i = 0; i < 2 && i < calls; i++)
    CHECKF(kinds[i] == TXALLOC_ERROR_DOUBLE_FREE && ptrs[i] == objs[i],
           "double free report %d: kind %d, %p (want %p): %s", i, (int)kinds[i], ptrs[i], objs[i],
           messages[i]);

  calls = 0;
  void *p = txmem_malloc(48);
  CHECK(p != NULL);
  commit_frees(&p, 1, txalloc_usable_size(p), "freed again");
  txmem_free(p); /* outside: with safe reuse p is still live here, its release is the 2nd */
  txmem_flush();
  /* p's block is its bin's current one: it stays, and the second free finds p on its list */
  CHECKF(calls == 1 && ptrs[0] == p && kinds[0] == TXALLOC_ERROR_DOUBLE_FREE,
         "freed again before its release: %d reports (first: kind %d, %p, want %p)", calls,
         (int)kinds[0], ptrs[0], p);

  calls = 0;
  atomic_store(&owner_phase, 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, owner_thread, NULL) == 0);
  while (atomic_load(&owner_phase) < 1) sched_yield();
  txalloc_stats a0, a1;
  txalloc_stats_get(&a0);
  commit_frees(owned, 2, txalloc_usable_size(owned[0]) + txalloc_usable_size(owned[1]), "remote");
  txmem_flush();
  txalloc_stats_get(&a1);
  CHECKF(calls == 0, "remote: %d allocator reports (first: %s)", calls, messages[0]);
  CHECKF(a1.remote_frees - a0.remote_frees == 2, "remote: %llu remote frees, want 2",
         (unsigned long long)(a1.remote_frees - a0.remote_frees));
  atomic_store(&owner_phase, 2);
  pthread_join(t, NULL);
}

int main(void) {
  txalloc_set_error_hook(record, NULL);
  test_foreign();
  test_interior();
  test_orphans();
  test_double_and_remote();
  txalloc_set_error_hook(NULL, NULL);
  return check_exit();
}
