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
 * How "freed" is observed: the bytes in use of the process allocator (mallinfo2) where it
 * serves tm_malloc; in the ASan build every use of a freed object is reported and the leak
 * checker reports allocations that aborts did not free; a use-after-free of an object
 * whose tm_free should have been deferred is reported there too. */
#include <malloc.h>

#include "tm_test.h"

/* Nested TM_ATOMIC blocks shadow the macro's loop variable (notes/stm-bugs.md #1). */
#pragma GCC diagnostic ignored "-Wshadow"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

#define OBJ 4096
static int measurable; /* mallinfo2 sees tm_malloc's memory */

static long in_use(void) { return (long)mallinfo2().uordblks; }

static void test_commit_and_measure(void) {
  enum { N = 64 };
  void *volatile kept[N];
  long before = in_use();
  for (int i = 0; i < N; i++) {
    TM_ATOMIC {
      char *p = tm_malloc(OBJ);
      memset(p, i, OBJ); /* fresh memory is private to the transaction */
      tm_store_ptr((void **)&kept[i], p);
    }
  }
  long grown = in_use() - before;
  measurable = grown >= N * OBJ;
  fprintf(stderr, "committed %d x %d bytes: in use grew by %ld (%s)\n", N, OBJ, grown,
          measurable ? "measurable" : "not measurable through mallinfo2");
  if (!UNDER_SANITIZER) CHECKF(measurable, "tm_malloc's memory is not seen by mallinfo2");
  for (int i = 0; i < N; i++) {
    CHECK(((unsigned char *)kept[i])[OBJ - 1] == (unsigned char)i);
    free(kept[i]);
  }
}

/* The object allocated by the last attempt, for a look after the block. */
static void test_abort_frees(void) {
  long rounds = check_scaled(2000, 200);
  long before = in_use();
  for (long i = 0; i < rounds; i++) {
    TM_ATOMIC {
      char *p = tm_malloc(OBJ);
      memset(p, 1, OBJ);
      tm_abort();
    }
    volatile int attempt = 0;
    TM_ATOMIC {
      char *p = tm_malloc(OBJ);
      memset(p, 2, OBJ);
      if (++attempt < 3) tm_restart();
      tm_free(p); /* balanced in the committing attempt */
    }
  }
  long grown = in_use() - before;
  if (measurable)
    CHECKF(grown < 16 * OBJ, "%ld aborted allocations of %d bytes: in use grew by %ld", 3 * rounds,
           OBJ, grown);
}

static void test_free_deferred(void) {
  unsigned char *p = tm_malloc(OBJ); /* outside a transaction: plain malloc */
  memset(p, 7, OBJ);
  long before = in_use();
  volatile unsigned v = 0;
  TM_ATOMIC {
    tm_free(p);
    v = tm_load(&p[OBJ - 1]); /* still allocated until the commit */
    tm_free(NULL);
  }
  CHECK(v == 7);
  if (measurable) CHECKF(before - in_use() >= OBJ, "tm_free took effect at commit");

  p = tm_malloc(OBJ);
  memset(p, 8, OBJ);
  before = in_use();
  TM_ATOMIC {
    tm_free(p);
    tm_abort();
  }
  CHECK(p[0] == 8 && p[OBJ - 1] == 8); /* the abort undid the free */
  if (measurable) CHECK(before - in_use() < OBJ);
  volatile int attempt = 0;
  TM_ATOMIC {
    tm_free(p);
    if (++attempt == 1) tm_restart(); /* the first attempt's free is undone, the second's counts */
  }
  if (measurable) CHECKF(before - in_use() >= OBJ, "freed once by the committing attempt");
}

static void test_nested(int flat) {
  long before = in_use();
  /* child allocates and aborts */
  TM_ATOMIC {
    TM_ATOMIC {
      memset(tm_malloc(OBJ), 1, OBJ);
      tm_abort();
    }
  }
  /* child allocates and commits, parent aborts */
  TM_ATOMIC {
    TM_ATOMIC { memset(tm_malloc(OBJ), 1, OBJ); }
    tm_abort();
  }
  if (measurable)
    CHECKF(in_use() - before < OBJ, "nested allocations undone: %ld", in_use() - before);

  if (flat) return;
  unsigned char *p = tm_malloc(OBJ);
  memset(p, 3, OBJ);
  before = in_use();
  volatile unsigned seen = 0;
  TM_ATOMIC {
    TM_ATOMIC {
      tm_free(p);
      tm_abort(); /* the child's free is undone */
    }
    seen = tm_load(&p[5]);
    TM_ATOMIC { tm_free(p); } /* committed into the parent: waits for the top level */
    seen += tm_load(&p[6]);
    if (measurable) CHECK(before - in_use() < OBJ); /* (not yet freed) */
  }
  CHECK(seen == 6);
  if (measurable) CHECK(before - in_use() >= OBJ);
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

static void stack_worker(int t, void *arg) {
  (void)arg;
  uint64_t rng = (uint64_t)t * 0x9E3779B97F4A7C15ull + 11;
  for (long i = 0; i < concurrent_ops; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    int push = (rng >> 62) != 0; /* 3/4 pushes while small, then balanced */
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
    if (did > 0) pushed[t]++;
    if (did < 0) popped[t]++;
    if (pushed[t] - popped[t] > 64) {
      /* pop a batch in one transaction */
      TM_ATOMIC {
        for (int k = 0; k < 32; k++) {
          snode *top = tm_load(&stacks[t].top);
          tm_store(&stacks[t].top, tm_load(&top->next));
          tm_free(top);
        }
      }
      popped[t] += 32;
    }
  }
}

static void test_concurrent(void) {
  concurrent_ops = check_scaled(20000, 2000);
  long before = in_use();
  tm_test_run_threads(THREADS, stack_worker, NULL);
  CHECK(shared_counter == (uint64_t)(THREADS * concurrent_ops));
  for (int t = 0; t < THREADS; t++) {
    long n = 0;
    for (snode *s = stacks[t].top, *next; s; s = next, n++) {
      next = s->next;
      free(s);
    }
    CHECKF(n == pushed[t] - popped[t], "stack %d: %ld nodes, expected %ld", t, n,
           pushed[t] - popped[t]);
  }
  if (measurable)
    CHECKF(in_use() - before < 64 * OBJ, "after freeing every node: %ld bytes more in use",
           in_use() - before);
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
