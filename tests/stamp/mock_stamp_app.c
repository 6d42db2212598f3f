/* A mock STAMP application: uses every macro of include/txalloc/stamp/tm.h the way STAMP
 * 0.9.10's applications and lib/ do, compiled as STAMP's Makefile.stm compiles them
 * (-DSTM -I<the header's directory>, "tm.h" in quotes) and, without STM, as its sequential
 * build does. What each part stands for:
 *   - a lib/-style structure (a bank of accounts and a list) with TM_ARGDECL functions,
 *     TM_CALLABLE/TM_PURE declarations, reads and writes of long, int, float and pointer
 *     fields, TM_MALLOC/TM_FREE inside transactions (vacation, intruder, yada);
 *   - threads that enter and leave the TM twice, as STAMP's thread pool runs one parallel
 *     phase after another (ssca2, kmeans);
 *   - a block that waits for a condition with TM_RESTART (labyrinth's grid), and
 *     TM_LOCAL_WRITE of a flag undone by that restart (labyrinth's `success`);
 *   - main's simulator and memory macros, TM_PRINT*, P_MALLOC, SEQ_MALLOC.
 * Exits 0 when every check holds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tm.h"

enum { ACCOUNTS = 64, TRANSFERS = 2000, MAX_THREADS = 8 };

typedef struct node {
  long key;
  struct node *next;
} node;

typedef struct bank {
  long balance[ACCOUNTS];
  int touches;     /* an int counter, as kmeans's new_centers_len */
  float weight;    /* a float, as kmeans's new_centers */
  node *log;       /* a list head, as lib/list's */
  long phase_done; /* set by the last thread of a phase */
} bank;

static bank the_bank;
static long num_threads = 2;
static int failures;

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

TM_CALLABLE static void TMbank_transfer(TM_ARGDECL bank *b, long from, long to, long amount);
TM_PURE static long pure_amount(long i);

static long pure_amount(long i) { return 1 + i % 7; }

static void TMbank_transfer(TM_ARGDECL bank *b, long from, long to, long amount) {
  long a = (long)TM_SHARED_READ(b->balance[from]);
  long c = (long)TM_SHARED_READ_L(b->balance[to]);
  TM_SHARED_WRITE(b->balance[from], a - amount);
  TM_SHARED_WRITE_L(b->balance[to], c + amount);
  TM_SHARED_WRITE_I(b->touches, TM_SHARED_READ_I(b->touches) + 1);
  TM_SHARED_WRITE_F(b->weight, TM_SHARED_READ_F(b->weight) + 0.5f);
}

/* Pushes a node allocated in the transaction; every tenth call pops and frees one. */
static void TMbank_log(TM_ARGDECL bank *b, long key) {
  node *n = (node *)TM_MALLOC(sizeof(node));
  n->key = key;
  n->next = (node *)TM_SHARED_READ_P(b->log);
  TM_SHARED_WRITE_P(b->log, n);
  if (key % 10 == 0) {
    node *head = (node *)TM_SHARED_READ_P(b->log);
    TM_SHARED_WRITE_P(b->log, TM_SHARED_READ_P(head->next));
    TM_FREE(head);
  }
}

static long TMbank_sum(TM_ARGDECL_ALONE) {
  long sum = 0;
  for (long i = 0; i < ACCOUNTS; i++) sum += (long)TM_SHARED_READ(the_bank.balance[i]);
  TM_EARLY_RELEASE(the_bank.balance[0]);
  return sum;
}

static long transfers_per_thread(void) { return TRANSFERS / num_threads; }

/* One parallel phase; `index` as STAMP's thread_getId(). */
static void phase(long index) {
  TM_THREAD_ENTER();
  for (long i = 0; i < transfers_per_thread(); i++) {
    long from = (index * 7 + i * 13) % ACCOUNTS, to = (index * 3 + i * 5 + 1) % ACCOUNTS;
    if (from == to) to = (to + 1) % ACCOUNTS;
    TM_BEGIN();
    TMbank_transfer(TM_ARG & the_bank, from, to, pure_amount(i));
    TMbank_log(TM_ARG & the_bank, i);
    TM_END();
  }
  long sum;
  TM_BEGIN_RO();
  sum = TMbank_sum(TM_ARG_ALONE);
  TM_END();
  EXPECT(sum == 0);
  TM_THREAD_EXIT();
}

#ifdef STM
/* Labyrinth's shape: a flag set by TM_LOCAL_WRITE before a restart is undone by it; a
 * volatile counter, which no restart undoes, tells the attempts apart. */
static void local_write_undone(void) {
  TM_THREAD_ENTER();
  long success = 0;
  void *found = NULL;
  float level = 1.0f;
  volatile int attempts = 0;
  TM_BEGIN();
  attempts++;
  if (attempts == 2) EXPECT(success == 0 && found == NULL && level == 1.0f);
  TM_LOCAL_WRITE(success, 1);
  TM_LOCAL_WRITE_P(found, &the_bank);
  TM_LOCAL_WRITE_F(level, 2.0f);
  if (attempts == 1) TM_RESTART();
  TM_END();
  EXPECT(attempts == 2 && success == 1 && found == &the_bank && level == 2.0f);
  TM_THREAD_EXIT();
}

/* Waits in a transaction until the other threads finished the phase (TM_RESTART). */
static void wait_for_phase(void) {
  TM_THREAD_ENTER();
  long done;
  TM_BEGIN();
  done = (long)TM_SHARED_READ(the_bank.phase_done);
  if (done < num_threads - 1) TM_RESTART();
  TM_END();
  EXPECT(done == num_threads - 1);
  TM_THREAD_EXIT();
}
#endif

static void *worker(void *arg) {
  long index = (long)arg;
  for (int round = 0; round < 2; round++) phase(index); /* enter and leave twice */
#ifdef STM
  if (index != 0) {
    TM_THREAD_ENTER();
    TM_BEGIN();
    TM_SHARED_WRITE(the_bank.phase_done, TM_SHARED_READ(the_bank.phase_done) + 1);
    TM_END();
    TM_THREAD_EXIT();
  }
#endif
  return NULL;
}

MAIN(argc, argv) {
  GOTO_REAL();
  if (argc > 1) num_threads = atol(argv[1]);
#ifndef STM
  num_threads = 1; /* the sequential build has no TM */
#endif
  if (num_threads < 1 || num_threads > MAX_THREADS) num_threads = 2;
  SIM_GET_NUM_CPU(num_threads);
  TM_STARTUP(num_threads);
  P_MEMORY_STARTUP(num_threads);
  EXPECT(!IS_IN_SIM());
  long *scratch = (long *)SEQ_MALLOC(sizeof(long) * ACCOUNTS);
  for (long i = 0; i < ACCOUNTS; i++) scratch[i] = i;
  SEQ_FREE(scratch);

  pthread_t *threads = (pthread_t *)P_MALLOC(sizeof(pthread_t) * (size_t)num_threads);
  GOTO_SIM();
  for (long i = 1; i < num_threads; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
  worker((void *)0);
#ifdef STM
  wait_for_phase();
#endif
  for (long i = 1; i < num_threads; i++) pthread_join(threads[i], NULL);
  GOTO_REAL();
  P_FREE(threads);
#ifdef STM
  local_write_undone();
#endif

  long sum = 0, logged = 0;
  for (long i = 0; i < ACCOUNTS; i++) sum += the_bank.balance[i];
  for (node *n = the_bank.log, *next; n; n = next, logged++) {
    next = n->next;
    TM_FREE(n);
  }
  long transfers = 2 * num_threads * transfers_per_thread();
  long popped = 2 * num_threads * ((transfers_per_thread() + 9) / 10);
  EXPECT(sum == 0);
  EXPECT(the_bank.touches == transfers);
  EXPECT(the_bank.weight == 0.5f * (float)transfers);
  EXPECT(logged == transfers - popped);
  TM_PRINTF("mock STAMP application: %ld threads, ", num_threads);
  TM_PRINT0("sum ");
  TM_PRINT1("%ld, ", sum);
  TM_PRINT2("%ld transfers, %ld logged, ", transfers, logged);
  TM_PRINT3("%d failures%s%s\n", failures, failures ? "" : " (ok)", "");
  P_MEMORY_SHUTDOWN();
  TM_SHUTDOWN();
  MAIN_RETURN(failures ? 1 : 0);
}
