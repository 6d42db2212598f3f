/* Runs under concurrency: 12 threads (more than the cores, so that they are
 * preempted inside the arenas' critical sections) start together at a barrier and, for
 * many rounds, allocate run objects (TXA_RUNS_MIN .. 128 KiB), realloc some of them (in
 * place or moved), and swap objects through a shared exchange, so that frees and reallocs
 * hit runs of another thread's arena while its owner allocates there. Every object keeps
 * its pattern until it is freed (no run is handed out twice, no realloc loses bytes), and
 * at the end the live bytes come back to where they started. Then, deterministically: a run
 * freed by a thread of another arena (pending) is reported when freed or realloc'd again,
 * and serves its owner's next request. */
#include "alloc/layout.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { THREADS = 12, SLOTS = 24, EXCHANGE = 16, ROUNDS = 20000 };

static pthread_barrier_t start;
static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static test_obj exchange[EXCHANGE];
static _Atomic(long) bad;

static size_t run_size(test_rng *r) {
  return TXA_RUNS_MIN + 1 + (size_t)test_rng_below(r, TXA_MEDIUM_MAX - TXA_RUNS_MIN);
}

static void *worker(void *arg) {
  int id = *(int *)arg;
  test_rng rng = {(uint64_t)id * 7919 + 1};
  test_obj slot[SLOTS] = {{0}};
  long my_bad = 0;
  uint64_t tag = (uint64_t)id << 32;
  pthread_barrier_wait(&start);
  for (int round = 0; round < ROUNDS; round++) {
    test_obj *o = &slot[test_rng_below(&rng, SLOTS)];
    switch (test_rng_below(&rng, 4)) {
    case 0: /* free, then a fresh object */
      test_obj_free(o, &my_bad);
      o->size = run_size(&rng);
      o->tag = ++tag;
      o->p = txalloc_malloc(o->size);
      if (!o->p) {
        my_bad++;
        *o = (test_obj){0};
        break;
      }
      test_fill(o->p, o->size, o->tag);
      break;
    case 1: { /* realloc: keeps the pattern of what both sizes hold */
      if (!o->p) break;
      if (!test_check(o->p, o->size, o->tag)) my_bad++;
      size_t size = run_size(&rng);
      void *q = txalloc_realloc(o->p, size);
      if (!q) {
        my_bad++;
        break;
      }
      o->p = q;
      o->size = size;
      o->tag = ++tag;
      test_fill(q, size, o->tag);
      break;
    }
    case 2: /* to another thread, which frees or reallocs it */
      if (o->p)
        *o = test_exchange_swap(&exchange_lock, exchange, (int)test_rng_below(&rng, EXCHANGE), *o,
                                &my_bad);
      break;
    default: test_obj_free(o, &my_bad);
    }
  }
  for (int i = 0; i < SLOTS; i++) test_obj_free(&slot[i], &my_bad);
  atomic_fetch_add(&bad, my_bad);
  return NULL;
}

/* A free from a thread of another arena leaves the run pending on its arena's list: a
 * second free of it, from that thread or from the owner, and a realloc of it are reported
 * as double frees; once the owner's next run drains it, it is a free run. */
static char *pending_victim;
static test_error_log pending_errors;
static uint32_t pending_arena;

static void *free_twice(void *arg) {
  (void)arg;
  txalloc_free(txalloc_malloc(16)); /* this thread's heap, another arena than main's */
  pending_arena = txa_tls_heap->runs_arena;
  txalloc_free(pending_victim);
  txalloc_free(pending_victim);
  return NULL;
}

static void remote_double_free(void) {
  txalloc_error_fn old = txalloc_set_error_hook(test_error_record, &pending_errors);
  pending_victim = txalloc_malloc(TXA_RUNS_MIN + 100);
  pthread_t t;
  pthread_create(&t, NULL, free_twice, NULL);
  pthread_join(t, NULL);
  CHECKF(pending_errors.reports == 1 && pending_errors.kind == TXALLOC_ERROR_DOUBLE_FREE,
         "second remote free: %d reports, kind %d", pending_errors.reports, pending_errors.kind);
  txalloc_free(pending_victim);
  CHECKF(pending_errors.reports == 2 && pending_errors.kind == TXALLOC_ERROR_DOUBLE_FREE,
         "owner's free of a pending run: %d reports", pending_errors.reports);
  CHECK(txalloc_realloc(pending_victim, TXA_RUNS_MIN + 500) == NULL && pending_errors.reports == 3);
  CHECK(pending_arena != txa_tls_heap->runs_arena); /* the thread's heap is the second one */
  txalloc_free(txalloc_malloc(TXA_RUNS_MIN + 100)); /* drains the pending run */
  txalloc_free(pending_victim);
  CHECKF(pending_errors.reports == 4 && pending_errors.kind == TXALLOC_ERROR_DOUBLE_FREE,
         "free of a drained run: %d reports", pending_errors.reports);
  txalloc_set_error_hook(old, NULL);
}

int main(void) {
  remote_double_free(); /* first: only the main thread has a heap so far */
  txalloc_stats before;
  txalloc_free(txalloc_malloc(TXA_RUNS_MIN + 1));
  txalloc_stats_get(&before);
  pthread_barrier_init(&start, NULL, THREADS);
  int ids[THREADS];
  for (int i = 0; i < THREADS; i++) ids[i] = i;
  test_run_threads(THREADS, worker, ids, sizeof ids[0]);
  long exchange_bad = 0;
  for (int e = 0; e < EXCHANGE; e++) test_obj_free(&exchange[e], &exchange_bad);
  CHECKF(bad == 0 && exchange_bad == 0, "%ld objects lost their pattern or failed",
         (long)bad + exchange_bad);
  txalloc_stats after;
  txalloc_stats_get(&after);
  CHECKF(after.live_bytes == before.live_bytes, "live bytes %llu before, %llu after",
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  CHECK(after.errors == before.errors);
  return check_exit();
}
