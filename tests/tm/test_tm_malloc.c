/* tm_malloc / tm_free basic semantics.
 *   commit      memory allocated in a committed transaction stays allocated.
 *   abort       memory allocated in an aborted (tm_abort) or restarted attempt is freed.
 *   free        tm_free takes effect at the top-level commit: the object stays readable
 *               until then, and stays allocated if the transaction aborts.
 *   nested      a child's allocation is freed when the child aborts, or when the parent
 *               aborts after the child committed; a child's tm_free is undone by the
 *               child's abort and waits for the top level otherwise.
 *   concurrent  threads push and pop nodes of their own transactional stacks while
 *               conflicting on a shared counter, so allocations and frees meet aborts.
 * How "freed" is observed, whatever the txmem strategy (TXALLOC_TXMEM=wrap|wrap-cache|
 * txalloc) serves tm_malloc: bytes in use = glibc's main arena (mallinfo2, wrap strategies)
 * plus txalloc's live bytes (txalloc strategy), measured on the main thread; txmem's own
 * counters (aborted_allocs, limbo_objects); in the ASan build every use of a freed object
 * and, for the wrap strategies, every allocation an abort failed to free (leak checker). */
#include <malloc.h>

#include "tm_test.h"
#include "txalloc/txalloc.h"
#include "txalloc/txmem.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

#define OBJ 4096
/* Objects whose committed free may still wait for reclamation (tm_alloc.c batches 64). */
#define RECLAIM_SLACK 128
static int measurable; /* in_use() sees tm_malloc's memory */

static long in_use(void) {
  txalloc_stats a;
  txalloc_stats_get(&a);
  return (long)mallinfo2().uordblks + (long)a.live_bytes;
}

static txmem_stats txmem_now(void) {
  txmem_stats s;
  txmem_stats_get(&s);
  return s;
}

static TM_TEST_TX void alloc_and_publish(void *volatile *slot, int fill_byte) {
  TM_ATOMIC {
    char *p = tm_malloc(OBJ);
    memset(p, fill_byte, OBJ); /* fresh memory is private to the transaction */
    tm_store_ptr((void **)slot, p);
  }
}

static void test_commit_and_measure(void) {
  enum { N = 64 };
  void *volatile kept[N];
  long before = in_use();
  for (int i = 0; i < N; i++) alloc_and_publish(&kept[i], i);
  long grown = in_use() - before;
  measurable = grown >= N * OBJ;
  fprintf(stderr, "committed %d x %d bytes: in use grew by %ld (%s)\n", N, OBJ, grown,
          measurable ? "measurable" : "not measurable");
  if (!UNDER_SANITIZER) CHECKF(measurable, "tm_malloc's memory is not seen by in_use()");
  for (int i = 0; i < N; i++) {
    CHECK(((unsigned char *)kept[i])[OBJ - 1] == (unsigned char)i);
    tm_free(kept[i]); /* outside a transaction: the strategy's plain free */
  }
}

static TM_TEST_TX void alloc_then_abort(void) {
  TM_ATOMIC {
    char *p = tm_malloc(OBJ);
    memset(p, 1, OBJ);
    tm_abort();
  }
}

/* Allocates in three attempts; the first two restart, the third frees its own object. */
static TM_TEST_TX void alloc_restart_twice(void) {
  volatile int attempt = 0;
  TM_ATOMIC {
    char *p = tm_malloc(OBJ);
    memset(p, 2, OBJ);
    if (++attempt < 3) tm_restart();
    tm_free(p); /* balanced in the committing attempt */
  }
}

static void test_abort_frees(void) {
  long rounds = check_scaled(2000, 200);
  txmem_stats t0 = txmem_now();
  long before = in_use();
  for (long i = 0; i < rounds; i++) {
    alloc_then_abort();
    alloc_restart_twice();
  }
  long grown = in_use() - before;
  txmem_stats t1 = txmem_now();
  CHECKF(t1.aborted_allocs - t0.aborted_allocs == (uint64_t)(3 * rounds),
         "txmem released %llu aborted allocations, expected %ld",
         (unsigned long long)(t1.aborted_allocs - t0.aborted_allocs), 3 * rounds);
  if (measurable)
    CHECKF(grown < 2 * RECLAIM_SLACK * OBJ,
           "%ld aborted allocations of %d bytes: in use grew by %ld", 3 * rounds, OBJ, grown);
}

/* tm_free, then a read of the object: still allocated until the commit. */
static TM_TEST_TX unsigned free_then_read(unsigned char *p) {
  volatile unsigned v = 0;
  TM_ATOMIC {
    tm_free(p);
    v = tm_load(&p[OBJ - 1]);
    tm_free(NULL);
  }
  return v;
}

static TM_TEST_TX void free_then_abort(unsigned char *p) {
  TM_ATOMIC {
    tm_free(p);
    tm_abort();
  }
}

static TM_TEST_TX void free_restart_once(unsigned char *p) {
  volatile int attempt = 0;
  TM_ATOMIC {
    tm_free(p);
    if (++attempt == 1) tm_restart(); /* the first attempt's free is undone */
  }
}

/* A committed free returns the memory once no transaction may still read it; the runtime
 * may batch that (up to RECLAIM_SLACK objects per thread are allowed to wait). */
static void test_free_deferred(void) {
  enum { N = 4 * RECLAIM_SLACK };
  unsigned char *objs[N];
  for (int i = 0; i < N; i++) {
    objs[i] = tm_malloc(OBJ); /* outside a transaction: plain malloc */
    memset(objs[i], 7, OBJ);
  }
  long before = in_use();
  unsigned sum = 0;
  for (int i = 0; i < N; i++) sum += free_then_read(objs[i]);
  CHECK(sum == 7u * N);
  txmem_flush(); /* no transaction runs: every deferred free can go back now */
  CHECK(txmem_now().limbo_objects == 0);
  if (measurable)
    CHECKF(before - in_use() >= (long)(N - RECLAIM_SLACK) * OBJ,
           "%d committed frees of %d bytes: in use fell by %ld only", N, OBJ, before - in_use());

  unsigned char *p = tm_malloc(OBJ);
  memset(p, 8, OBJ);
  free_then_abort(p);
  CHECK(p[0] == 8 && p[OBJ - 1] == 8); /* the abort undid the free (ASan: no use after free) */
  free_restart_once(p); /* freed once, by the committing attempt (glibc/ASan: no double free) */
}

static TM_TEST_TX void child_alloc_child_abort(void) {
  TM_ATOMIC {
    TM_ATOMIC {
      memset(tm_malloc(OBJ), 1, OBJ);
      tm_abort();
    }
  }
}

static TM_TEST_TX void child_alloc_parent_abort(void) {
  TM_ATOMIC {
    TM_ATOMIC { memset(tm_malloc(OBJ), 1, OBJ); }
    tm_abort();
  }
}

/* The child's free is undone by its abort; a committed child's free waits for the top
 * level: the object stays readable until then. */
static TM_TEST_TX unsigned nested_frees(unsigned char *p) {
  volatile unsigned seen = 0;
  TM_ATOMIC {
    TM_ATOMIC {
      tm_free(p);
      tm_abort();
    }
    seen = tm_load(&p[5]);
    TM_ATOMIC { tm_free(p); }
    seen += tm_load(&p[6]);
  }
  return seen;
}

static void test_nested(int flat) {
  long rounds = check_scaled(500, 100);
  long before = in_use();
  for (long i = 0; i < rounds; i++) {
    child_alloc_child_abort();
    child_alloc_parent_abort();
  }
  if (measurable)
    CHECKF(in_use() - before < 2 * RECLAIM_SLACK * OBJ, "%ld nested allocations undone: %ld",
           2 * rounds, in_use() - before);
  if (flat) return;
  unsigned char *p = tm_malloc(OBJ);
  memset(p, 3, OBJ);
  CHECK(nested_frees(p) == 6);
}

/* ---- concurrent ---- */
#define THREADS 4
typedef struct snode {
  struct snode *next;
  uint64_t payload[5];
} snode;
static struct { _Alignas(64) snode *top; } stacks[THREADS];
static _Alignas(64) uint64_t shared_counter;
static long concurrent_ops;
static long pushed[THREADS], popped[THREADS];

/* Pushes (a new node) or pops (and frees) on stack t, and increments the shared counter;
 * returns +1 for a push, -1 for a pop. */
static TM_TEST_TX int stack_op(int t, int push, long i) {
  volatile int did = 0;
  TM_ATOMIC {
    did = 0;
    snode *top = tm_load(&stacks[t].top);
    if (push || !top) {
      snode *n = tm_malloc(sizeof *n);
      n->next = top; /* fresh memory: private until published */
      n->payload[0] = (uint64_t)i;
      tm_store(&stacks[t].top, n);
      did = 1;
    } else {
      tm_store(&stacks[t].top, tm_load(&top->next));
      tm_free(top);
      did = -1;
    }
    tm_store(&shared_counter, tm_load(&shared_counter) + 1); /* the conflict */
    if ((i & 31) == 0) sched_yield();
  }
  return did;
}

static TM_TEST_TX void stack_pop_batch(int t, int count) {
  TM_ATOMIC {
    for (int k = 0; k < count; k++) {
      snode *top = tm_load(&stacks[t].top);
      tm_store(&stacks[t].top, tm_load(&top->next));
      tm_free(top);
    }
  }
}

static void stack_worker(int t, void *arg) {
  (void)arg;
  uint64_t rng = (uint64_t)t * 0x9E3779B97F4A7C15ull + 11;
  for (long i = 0; i < concurrent_ops; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int did = stack_op(t, (rng >> 62) != 0 /* 3/4 pushes */, i);
    if (did > 0) pushed[t]++;
    if (did < 0) popped[t]++;
    if (pushed[t] - popped[t] > 64) {
      stack_pop_batch(t, 32);
      popped[t] += 32;
    }
  }
}

static void test_concurrent(void) {
  concurrent_ops = check_scaled(20000, 2000);
  tm_test_run_threads(THREADS, stack_worker, NULL);
  CHECK(shared_counter == (uint64_t)(THREADS * concurrent_ops));
  for (int t = 0; t < THREADS; t++) {
    long n = 0;
    for (snode *s = stacks[t].top, *next; s; s = next, n++) {
      next = s->next;
      tm_free(s);
    }
    CHECKF(n == pushed[t] - popped[t], "stack %d: %ld nodes, expected %ld", t, n,
           pushed[t] - popped[t]);
  }
  /* (Allocations that aborts failed to free: the leak checker of the ASan build.) */
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("tm_malloc");
  tm_thread_init();
  int flat = tm_test_option_is("nesting", "flat");
  test_commit_and_measure();
  test_abort_frees();
  test_free_deferred();
  test_nested(flat);
  test_concurrent();
  return check_exit();
}
