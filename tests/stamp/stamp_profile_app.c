/* The allocation profile of a program written only with STAMP's macros
 * (include/txalloc/stamp/tm.h), compiled as STAMP's Makefile.stm compiles an application.
 * It calls no txalloc function but to read the counts at the end: the header alone must give
 * the three regions, as it does to STAMP's applications.
 *
 * The program is shaped as a STAMP application: a pool of threads made once, behind a
 * barrier, that runs one parallel phase after another (STAMP's thread_start), the main
 * thread taking part as thread 0, each thread's work bracketed by TM_THREAD_ENTER and
 * TM_THREAD_EXIT; sequential work before, between and after the phases. Phase 1 runs the
 * threads together (all enter, then a barrier); phase 2 one after the other, so that the
 * parallel region closes between two threads' turns. The transactions touch no shared data,
 * so none aborts (checked) and the counts are exact:
 *   seq  before: SEQ_MALLOC 3 x 20 B, P_MALLOC 2 x 100 B, TM_MALLOC 4 x 10 B outside a
 *        transaction, one SEQ_FREE and one P_FREE; between the phases a SEQ_MALLOC of 20 B
 *        and its SEQ_FREE; after: the rest freed (SEQ_FREE 2, P_FREE 1, TM_FREE 4);
 *   par  per thread and phase: P_MALLOC 5 x 48 B and their P_FREE, TM_MALLOC 2 x 300 B
 *        outside transactions, a P_MALLOC of 2000 B inside a transaction (not transactional
 *        memory: counted par) and its P_FREE after it, and TM_FREE outside transactions of
 *        the 300 B objects and of 3 objects the transaction allocated;
 *   tx   per thread and phase: one transaction with TM_MALLOC 3 x 200 B (kept) and
 *        2 x 12 B (freed in it with TM_FREE).
 * Usage: test_stamp_profile [THREADS] (default 8, at most 64). Exits 0 when every count is
 * the expected one. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tm.h"

enum { MAX_THREADS = 64, PHASES = 2, P_SMALL = 5, TM_OUTSIDE = 2, TX_KEPT = 3, TX_FREED = 2 };

static long num_threads = 8;
static pthread_barrier_t pool_barrier;  /* the pool's start and end of a phase */
static pthread_barrier_t phase_barrier; /* phase 1: every thread has entered */
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static long turn; /* phase 2: the thread whose turn it is */
static int phase;
static int shutting_down;
static int failures;

static void work(void) {
  void *small[P_SMALL], *outside[TM_OUTSIDE], *kept[TX_KEPT], *scratch = NULL;
  TM_THREAD_ENTER();
  if (phase == 1) pthread_barrier_wait(&phase_barrier); /* every thread inside at once */
  for (int i = 0; i < P_SMALL; i++) small[i] = P_MALLOC(48);
  for (int i = 0; i < P_SMALL; i++) P_FREE(small[i]);
  for (int i = 0; i < TM_OUTSIDE; i++) outside[i] = TM_MALLOC(300);
  TM_BEGIN();
  for (int i = 0; i < TX_KEPT; i++) kept[i] = TM_MALLOC(200);
  void *freed[TX_FREED];
  for (int i = 0; i < TX_FREED; i++) freed[i] = TM_MALLOC(12);
  for (int i = 0; i < TX_FREED; i++) TM_FREE(freed[i]);
  scratch = P_MALLOC(2000);
  TM_END();
  if (!scratch) __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
  P_FREE(scratch);
  for (int i = 0; i < TX_KEPT; i++) TM_FREE(kept[i]);
  for (int i = 0; i < TM_OUTSIDE; i++) TM_FREE(outside[i]);
  TM_THREAD_EXIT();
}

/* Phase 1: together. Phase 2: one thread at a time, in order of id. */
static void run_phase(long id) {
  if (phase == 1) {
    work();
    return;
  }
  pthread_mutex_lock(&turn_lock);
  while (turn != id) pthread_cond_wait(&turn_cond, &turn_lock);
  pthread_mutex_unlock(&turn_lock);
  work();
  pthread_mutex_lock(&turn_lock);
  turn++;
  pthread_cond_broadcast(&turn_cond);
  pthread_mutex_unlock(&turn_lock);
}

static void *pool_thread(void *arg) {
  long id = (long)(intptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&pool_barrier);
    if (shutting_down) return NULL;
    run_phase(id);
    pthread_barrier_wait(&pool_barrier);
  }
}

/* STAMP's thread_start: the main thread runs the phase as thread 0. */
static void start_phase(int which) {
  phase = which;
  turn = 0;
  pthread_barrier_wait(&pool_barrier);
  run_phase(0);
  pthread_barrier_wait(&pool_barrier);
}

static void expect(const char *what, unsigned long long got, unsigned long long want) {
  if (got == want) return;
  fprintf(stderr, "stamp_profile: %s: %llu, expected %llu\n", what, got, want);
  failures++;
}

static void expect_region(const txmem_profile *p, txmem_region r, unsigned long long mallocs,
                          unsigned long long frees, unsigned long long bytes,
                          const unsigned long long sizes[TXMEM_PROFILE_BUCKETS]) {
  const txmem_region_profile *g = &p->region[r];
  char what[64];
  snprintf(what, sizeof what, "%s mallocs", txmem_region_name(r));
  expect(what, g->mallocs, mallocs);
  snprintf(what, sizeof what, "%s frees", txmem_region_name(r));
  expect(what, g->frees, frees);
  snprintf(what, sizeof what, "%s bytes", txmem_region_name(r));
  expect(what, g->bytes, bytes);
  for (int b = 0; b < TXMEM_PROFILE_BUCKETS; b++) {
    snprintf(what, sizeof what, "%s bucket <= %zu", txmem_region_name(r),
             txmem_profile_bucket_limit((unsigned)b));
    expect(what, g->sizes[b], sizes[b]);
  }
}

MAIN(argc, argv) {
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    printf("usage: test_stamp_profile [THREADS]\n"
           "Runs a STAMP-shaped program with known SEQ_MALLOC, P_MALLOC and TM_MALLOC calls per\n"
           "phase and checks the allocation profile's counts by region (1..%d threads, "
           "default 8).\n",
           MAX_THREADS);
    return 0;
  }
  if (argc > 2) {
    fprintf(stderr, "test_stamp_profile: one argument at most (THREADS); see --help\n");
    return 2;
  }
  if (argc == 2) {
    char *end;
    num_threads = strtol(argv[1], &end, 10);
    if (*end || num_threads < 1 || num_threads > MAX_THREADS) {
      fprintf(stderr, "test_stamp_profile: THREADS must be 1..%d, got '%s'\n", MAX_THREADS,
              argv[1]);
      return 2;
    }
  }
  TM_STARTUP(num_threads);

  char *seq_a[3];
  void *seq_p[2], *seq_tm[4];
  for (int i = 0; i < 3; i++) seq_a[i] = (char *)SEQ_MALLOC(20);
  for (int i = 0; i < 2; i++) seq_p[i] = P_MALLOC(100);
  for (int i = 0; i < 4; i++) seq_tm[i] = TM_MALLOC(10);
  SEQ_FREE(seq_a[0]);
  P_FREE(seq_p[0]);

  pthread_t threads[MAX_THREADS];
  pthread_barrier_init(&pool_barrier, NULL, (unsigned)num_threads);
  pthread_barrier_init(&phase_barrier, NULL, (unsigned)num_threads);
  for (long i = 1; i < num_threads; i++)
    pthread_create(&threads[i], NULL, pool_thread, (void *)(intptr_t)i);

  start_phase(1);
  SEQ_FREE(SEQ_MALLOC(20)); /* between the phases: sequential */
  start_phase(2);

  shutting_down = 1;
  pthread_barrier_wait(&pool_barrier);
  for (long i = 1; i < num_threads; i++) pthread_join(threads[i], NULL);
  SEQ_FREE(seq_a[1]);
  SEQ_FREE(seq_a[2]);
  P_FREE(seq_p[1]);
  for (int i = 0; i < 4; i++) TM_FREE(seq_tm[i]);

  tm_stats stats;
  tm_stats_get(&stats);
  expect("aborts (the counts below assume none)", stats.aborts, 0);
  txmem_profile p;
  txmem_profile_get(&p);
  const unsigned long long runs = (unsigned long long)num_threads * PHASES;
  const unsigned long long seq_sizes[TXMEM_PROFILE_BUCKETS] = {4, 3 + 1, 0, 2, 0, 0, 0, 0};
  expect_region(&p, TXMEM_REGION_SEQ, 3 + 2 + 4 + 1, 2 + 1 + 2 + 1 + 4,
                3 * 20 + 2 * 100 + 4 * 10 + 20, seq_sizes);
  const unsigned long long par_sizes[TXMEM_PROFILE_BUCKETS] = {
      0, 0, P_SMALL * runs, 0, 0, TM_OUTSIDE * runs, runs, 0};
  expect_region(&p, TXMEM_REGION_PAR, (P_SMALL + TM_OUTSIDE + 1) * runs,
                (P_SMALL + 1 + TX_KEPT + TM_OUTSIDE) * runs,
                (48 * P_SMALL + 300 * TM_OUTSIDE + 2000) * runs, par_sizes);
  const unsigned long long tx_sizes[TXMEM_PROFILE_BUCKETS] = {TX_FREED * runs, 0, 0, 0,
                                                              TX_KEPT * runs,  0, 0, 0};
  expect_region(&p, TXMEM_REGION_TX, (TX_KEPT + TX_FREED) * runs, TX_FREED * runs,
                (200 * TX_KEPT + 12 * TX_FREED) * runs, tx_sizes);

  pthread_barrier_destroy(&pool_barrier);
  pthread_barrier_destroy(&phase_barrier);
  TM_SHUTDOWN();
  if (failures) fprintf(stderr, "test_stamp_profile: %d checks failed\n", failures);
  MAIN_RETURN(failures ? 1 : 0);
}
