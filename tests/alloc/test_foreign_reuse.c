/* Foreign reuse (src/alloc/foreign.c): a thread that frees objects of another thread's
 * blocks takes them back for its own mallocs, keeps only a few per class when it does
 * not allocate, and hands what it keeps back to the owner when it exits or collects.
 *
 * The main thread owns every block here: it allocates the objects, then idles (joins or
 * waits) while other threads free them.
 *   reuse       a thread frees one of main's 48-byte objects and mallocs 48 bytes, eight
 *               times: each malloc returns the object just freed, and foreign_reuses counts
 *               eight;
 *   double free the second free of an object the thread keeps is reported (DOUBLE_FREE)
 *               and changes nothing: the next malloc returns the object once;
 *   consumer    a thread frees 50 of main's 80-byte objects and mallocs nothing: it keeps
 *               TXA_FOREIGN_START of them, so while it lives main's next 50 mallocs of the
 *               class take back exactly the other 46; after it exits, the last 4;
 *   collect     a thread frees 4 of main's 48-byte objects and calls txalloc_collect:
 *               while it still lives, main's next mallocs take all 4 back.
 * At the end every object is freed and live bytes are back where they started. */
#include <string.h>

#include "alloc/layout.h"
#include "alloc_test.h"
#include "check.h"
#include "set_option.h"
#include "txalloc/txalloc.h"

enum { NX = 16, NY = 50, NZ = 4 };

static void *xs[NX], *ys[NY], *zs[NZ];
static test_error_log errors;
static pthread_barrier_t freed, taken;

static bool in_set(void *const *set, int n, const void *p) {
  for (int i = 0; i < n; i++)
    if (set[i] == p) return true;
  return false;
}

static uint64_t foreign_reuses(void) {
  txalloc_stats s;
  txalloc_stats_get(&s);
  return s.foreign_reuses;
}

/* A thread's first free, before it has a heap, goes to the public list. */
static void make_heap(void) { txalloc_free(txalloc_malloc(16)); }

static void *reuse_thread(void *arg) {
  (void)arg;
  make_heap();
  for (int i = 0; i < 8; i++) {
    txalloc_free(xs[i]);
    void *p = txalloc_malloc(48);
    CHECKF(p == xs[i], "reuse %d: malloc gave %p, not the object just freed %p", i, p, xs[i]);
    xs[i] = p;
  }
  void *x = xs[8];
  txalloc_free(x);
  txalloc_free(x);
  CHECKF(test_error_one(&errors, TXALLOC_ERROR_DOUBLE_FREE, x),
         "second free of a kept object: %d reports (want one double free)", errors.reports);
  void *again = txalloc_malloc(48), *next = txalloc_malloc(48);
  CHECKF(again == x, "after the double free, malloc gave %p, not %p", again, x);
  CHECKF(next != x, "the object was kept twice: malloc returned %p again", x);
  txalloc_free(next);
  return NULL;
}

static void *consumer_thread(void *arg) {
  (void)arg;
  make_heap();
  for (int i = 0; i < NY; i++) txalloc_free(ys[i]);
  pthread_barrier_wait(&freed);
  pthread_barrier_wait(&taken); /* main mallocs while this thread lives */
  return NULL;
}

static void *collect_thread(void *arg) {
  (void)arg;
  make_heap();
  for (int i = 0; i < NZ; i++) txalloc_free(zs[i]);
  txalloc_collect();
  pthread_barrier_wait(&freed);
  pthread_barrier_wait(&taken);
  return NULL;
}

/* Mallocs n objects of `size` into out and returns how many of them are in set[0..m). */
static int take_back(size_t size, void **out, int n, void *const *set, int m) {
  int hits = 0;
  for (int i = 0; i < n; i++) {
    out[i] = txalloc_malloc(size);
    CHECK(out[i] != NULL);
    hits += in_set(set, m, out[i]);
  }
  return hits;
}

int main(void) {
  test_set_option("foreign_reuse", "1");
  txalloc_error_fn old = txalloc_set_error_hook(test_error_record, &errors);
  txalloc_stats start;
  txalloc_stats_get(&start);
  for (int i = 0; i < NX; i++) xs[i] = txalloc_malloc(48);
  for (int i = 0; i < NY; i++) ys[i] = txalloc_malloc(80);
  for (int i = 0; i < NZ; i++) zs[i] = txalloc_malloc(48);

  uint64_t before = foreign_reuses();
  pthread_t t;
  CHECK(pthread_create(&t, NULL, reuse_thread, NULL) == 0);
  pthread_join(t, NULL);
  CHECKF(foreign_reuses() - before == 9, "foreign reuses: %llu (want 8 + the double-freed one)",
         (unsigned long long)(foreign_reuses() - before));

  /* The consumer keeps TXA_FOREIGN_START objects of the class while it lives. */
  void *got[NY];
  pthread_barrier_init(&freed, NULL, 2);
  pthread_barrier_init(&taken, NULL, 2);
  CHECK(pthread_create(&t, NULL, consumer_thread, NULL) == 0);
  pthread_barrier_wait(&freed);
  int hits = take_back(80, got, NY, ys, NY);
  CHECKF(hits == NY - TXA_FOREIGN_START, "main took back %d of the %d freed objects (want %d)",
         hits, NY, NY - TXA_FOREIGN_START);
  pthread_barrier_wait(&taken);
  pthread_join(t, NULL);
  void *rest[TXA_FOREIGN_START];
  hits = take_back(80, rest, TXA_FOREIGN_START, ys, NY);
  CHECKF(hits == TXA_FOREIGN_START,
         "after the consumer's exit, %d of its %d kept objects came back", hits, TXA_FOREIGN_START);
  for (int i = 0; i < NY; i++) txalloc_free(got[i]);
  for (int i = 0; i < TXA_FOREIGN_START; i++) txalloc_free(rest[i]);

  /* txalloc_collect hands the kept objects back while their thread lives. */
  CHECK(pthread_create(&t, NULL, collect_thread, NULL) == 0);
  pthread_barrier_wait(&freed);
  void *zback[NZ];
  hits = take_back(48, zback, NZ, zs, NZ);
  CHECKF(hits == NZ, "after txalloc_collect, main took back %d of the %d objects", hits, NZ);
  pthread_barrier_wait(&taken);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&freed);
  pthread_barrier_destroy(&taken);

  for (int i = 0; i < NX; i++) txalloc_free(xs[i]);
  for (int i = 0; i < NZ; i++) txalloc_free(zback[i]);
  txalloc_stats end;
  txalloc_stats_get(&end);
  CHECKF(end.live_bytes == start.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)start.live_bytes, (unsigned long long)end.live_bytes);
  CHECKF(errors.reports == 0, "%d unexpected error reports", errors.reports);
  txalloc_set_error_hook(old, NULL);
  return check_exit();
}
