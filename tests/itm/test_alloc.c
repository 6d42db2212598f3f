/* malloc, calloc and free inside ABI transactions go to txalloc's transaction-aware
 * allocation: an allocation of a cancelled or conflicting attempt is given back, a free
 * takes effect only when the outermost block commits, and nothing leaks: after every
 * object is freed, the allocator holds no more objects than before, except those still
 * waiting for safe reuse (txmem's limbo). Conflicts come from threads (more than cores)
 * pushing and popping one shared stack; there txmem's counters account for every
 * allocation. Each test runs three times and the third run is
 * measured: the first ones set up what the runtime keeps (descriptors of exited threads
 * for reuse, logs and lists grown to their size). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "itm_test.h"
#include "txalloc/txalloc.h"
#include "txalloc/txmem.h"

typedef struct node {
  struct node *next;
  long value;
} node;

static node *top;
static long pushes, pops;

/* Objects the allocator holds now, less those waiting in txmem's limbo. */
static long held_objects(void) {
  txalloc_stats s;
  txmem_stats m;
  txalloc_stats_get(&s);
  txmem_stats_get(&m);
  return (long)s.mallocs - (long)s.frees - (long)m.limbo_objects;
}

static void test_cancelled(bool measured) {
  txmem_stats m0, m1;
  txmem_stats_get(&m0);
  long held = held_objects();
  enum { N = 1000 };
  for (long i = 0; i < N; i++) {
    __transaction_atomic {
      node *n = malloc(sizeof *n);
      n->value = i;
      n->next = top;
      top = n;
      if (i % 2) __transaction_cancel;
    }
  }
  /* Frees: each first attempt is cancelled, so the node is freed by the second. */
  while (top) {
    for (int attempt = 0; attempt < 2; attempt++) {
      __transaction_atomic {
        node *n = top;
        top = n->next;
        free(n);
        if (attempt == 0) __transaction_cancel;
      }
    }
  }
  /* calloc: zeroed, and given back by a cancel too. */
  long zeros = 0;
  for (int i = 0; i < 10; i++) {
    __transaction_atomic {
      long *v = calloc(8, sizeof *v);
      for (int j = 0; j < 8; j++) zeros += v[j] == 0;
      v[0] = i;
      pushes += v[0];
      if (i % 2) __transaction_cancel;
      free(v);
    }
  }
  if (!measured) return;
  txmem_stats_get(&m1);
  CHECK(zeros == 40); /* the cancelled blocks count theirs in a rolled-back local */
  CHECK(m1.tx_mallocs - m0.tx_mallocs == N + 10);
  CHECKF(m1.aborted_allocs - m0.aborted_allocs == N / 2 + 5, "aborted allocations %lu",
         (unsigned long)(m1.aborted_allocs - m0.aborted_allocs));
  CHECKF(held_objects() <= held, "held %ld before, %ld after", held, held_objects());
}

enum { THREADS = 6, OPS = 20000 };

static void *worker(void *arg) {
  unsigned seed = (unsigned)(long)arg;
  for (int i = 0; i < OPS; i++) {
    seed = seed * 1103515245u + 12345u;
    if (seed & 0x100) {
      __transaction_atomic {
        node *n = malloc(sizeof *n);
        n->value = i;
        n->next = top;
        top = n;
        pushes++;
      }
    } else {
      __transaction_atomic {
        node *n = top;
        if (n) {
          top = n->next;
          free(n);
          pops++;
        }
      }
    }
  }
  return NULL;
}

static void test_conflicts(bool measured) {
  txmem_stats m0, m1;
  txmem_stats_get(&m0);
  pushes = pops = 0;
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  long left = 0;
  for (node *n = top; n; n = n->next) left++;
  CHECKF(left == pushes - pops, "%ld nodes on the stack, %ld pushes, %ld pops", left, pushes, pops);
  while (top) {
    __transaction_atomic {
      node *n = top;
      top = n->next;
      free(n);
    }
  }
  if (!measured) return;
  /* Every allocation of an attempt was given back by its rollback, or freed by a committed
   * block: at once (balanced) or deferred to safe reuse. (The allocator's own count is not
   * exact here: exiting threads hand their deferred frees over, in runtime objects.) */
  txmem_stats_get(&m1);
  uint64_t mallocs = m1.tx_mallocs - m0.tx_mallocs, aborted = m1.aborted_allocs - m0.aborted_allocs;
  uint64_t freed =
      (m1.balanced_recycles - m0.balanced_recycles) + (m1.speculative_frees - m0.speculative_frees);
  CHECKF(mallocs == aborted + freed, "%lu allocations, %lu given back, %lu freed",
         (unsigned long)mallocs, (unsigned long)aborted, (unsigned long)freed);
  CHECK(mallocs - aborted == (uint64_t)pushes);
}

int main(void) {
  __transaction_atomic { free(malloc(16)); } /* thread and runtime set up */
  for (int run = 0; run < 3; run++) {
    test_cancelled(run == 2);
    test_conflicts(run == 2);
  }
  return check_exit();
}
