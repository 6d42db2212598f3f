/* Strategy thrifty under the TM runtime (ctest runs it with TXALLOC_TM=stm and htm-emul, a
 * heap of 8 MiB and first pools of 256 bytes):
 *   speculative  an allocation of an aborted attempt goes back to the pool;
 *   deferred     a free inside a transaction takes effect at the top-level commit;
 *   refill       a pool that runs dry inside a transaction aborts it (cause alloc_refill),
 *                the pool is refilled outside it and the transaction restarts and commits;
 *   nested       a refill in a child restarts the top level;
 *   bound        a block that needs more refills than the bound runs irrevocably;
 *   exhausted    an allocation the heap cannot serve returns NULL with ENOMEM, in the
 *                irrevocable retry, after one alloc_refill abort.
 * Pressure is read from thrifty_stats; aborts from tm_stats. */
#include <errno.h>

#include "../tm/tm_test.h"
#include "txalloc/thrifty.h"
#include "txalloc/txmem.h"

static thrifty_stats thr(void) {
  thrifty_stats s;
  thrifty_stats_get(&s);
  return s;
}
static tm_stats tms(void) {
  tm_stats s;
  tm_stats_get(&s);
  return s;
}

static int attempts;

static TM_TEST_TX void cancel_after_alloc(void) {
  TM_ATOMIC {
    char *p = tm_malloc(64);
    p[0] = 1;
    tm_abort();
  }
}

static void test_speculative(void) {
  void *warm = tm_malloc(32); /* outside: the thread's first pool */
  thrifty_stats s0 = thr();
  cancel_after_alloc();
  thrifty_stats s1 = thr();
  CHECK(s1.allocated_bytes == s0.allocated_bytes);
  CHECK(s1.mallocs == s0.mallocs + 1 && s1.frees == s0.frees + 1);
  tm_free(warm);
}

static TM_TEST_TX void free_in_tx(void *p, uint64_t *during) {
  TM_ATOMIC {
    tm_free(p);
    *during = thr().allocated_bytes;
  }
}

static void test_deferred(void) {
  void *p = tm_malloc(100);
  thrifty_stats s0 = thr();
  uint64_t during = 0;
  free_in_tx(p, &during);
  CHECK(during == s0.allocated_bytes); /* not before the commit */
  txmem_flush();                       /* past safe reuse's limbo */
  CHECK(thr().allocated_bytes < s0.allocated_bytes);
}

static TM_TEST_TX void *alloc_big(size_t size) {
  void *volatile p = NULL;
  attempts = 0;
  TM_ATOMIC {
    attempts++;
    p = tm_malloc(size);
  }
  return p;
}

static void test_refill(void) {
  tm_stats t0 = tms();
  thrifty_stats s0 = thr();
  char *p = alloc_big(1000); /* larger than the 256-byte pool */
  tm_stats t1 = tms();
  thrifty_stats s1 = thr();
  CHECK(p != NULL);
  CHECKF(attempts == 2, "%d attempts", attempts);
  CHECK(tm_test_cause(&t1, TM_ABORT_ALLOC_REFILL) == tm_test_cause(&t0, TM_ABORT_ALLOC_REFILL) + 1);
  CHECK(t1.commits_irrevocable == t0.commits_irrevocable);
  CHECK(s1.refills == s0.refills + 1);
  memset(p, 7, 1000);
  tm_free(p);
}

static TM_TEST_TX void nested_refill(void *volatile *outer, void *volatile *inner) {
  attempts = 0;
  TM_ATOMIC {
    attempts++;
    *outer = tm_malloc(16);
    TM_ATOMIC { *inner = tm_malloc(4000); }
  }
}

static void test_nested(void) {
  thrifty_stats s0 = thr();
  void *volatile outer = NULL, *volatile inner = NULL;
  nested_refill(&outer, &inner);
  CHECK(outer && inner);
  CHECKF(attempts == 2, "%d attempts of the top level", attempts);
  /* The first attempt's 16 bytes went back at the abort: two objects out, not three. */
  CHECK(thr().allocated_objects == s0.allocated_objects + 2);
  tm_free(outer);
  tm_free(inner);
}

/* Each request is more than twice the pool the previous refill made. */
static TM_TEST_TX void growing(void *volatile *objs, int n) {
  attempts = 0;
  TM_ATOMIC {
    attempts++;
    for (int i = 0; i < n; i++) objs[i] = tm_malloc((size_t)1024 << (2 * i));
  }
}

static void test_bound(void) {
  enum { N = 6 };
  void *volatile objs[N];
  thrifty_thread_exit(); /* an empty pool: the first request needs a refill too */
  tm_stats t0 = tms();
  growing(objs, N);
  tm_stats t1 = tms();
  for (int i = 0; i < N; i++) CHECK(objs[i] != NULL);
  /* Four refills restart the block; the fifth request sends it irrevocable. */
  CHECKF(attempts == 6, "%d attempts", attempts);
  CHECK(tm_test_cause(&t1, TM_ABORT_ALLOC_REFILL) == tm_test_cause(&t0, TM_ABORT_ALLOC_REFILL) + 5);
  CHECK(t1.commits_irrevocable == t0.commits_irrevocable + 1);
  for (int i = 0; i < N; i++) tm_free(objs[i]);
}

static TM_TEST_TX void alloc_or_fail(size_t size, void *volatile *out, volatile int *err) {
  attempts = 0;
  TM_ATOMIC {
    attempts++;
    errno = 0;
    *out = tm_malloc(size);
    *err = errno;
  }
}

static void test_exhausted(void) {
  /* Hold most of the heap outside any transaction, then ask for more than is left. */
  thrifty_thread_exit(); /* this thread's free memory back to the heap */
  void *hold = tm_malloc((size_t)5 << 20);
  CHECK(hold != NULL);
  tm_stats t0 = tms();
  thrifty_stats s0 = thr();
  void *volatile p = (void *)1;
  volatile int err = 0;
  alloc_or_fail((size_t)4 << 20, &p, &err);
  tm_stats t1 = tms();
  CHECK(p == NULL && err == ENOMEM);
  CHECKF(attempts == 2, "%d attempts", attempts);
  CHECK(tm_test_cause(&t1, TM_ABORT_ALLOC_REFILL) == tm_test_cause(&t0, TM_ABORT_ALLOC_REFILL) + 1);
  CHECK(t1.commits_irrevocable == t0.commits_irrevocable + 1);
  CHECK(thr().refill_failures > s0.refill_failures);
  /* Larger than the heap: NULL at once, no abort. */
  alloc_or_fail((size_t)64 << 20, &p, &err);
  CHECK(p == NULL && err == ENOMEM && attempts == 1);
  tm_free(hold);
}

int main(void) {
  tm_test_watchdog(120);
  CHECK(txmem_get_strategy() == TXMEM_THRIFTY);
  test_speculative();
  test_deferred();
  test_refill();
  test_nested();
  test_bound();
  test_exhausted();
  return check_exit();
}
