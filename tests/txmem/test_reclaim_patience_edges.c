/* The limits of patient reclamation passes (txmem_epoch.c, PASS_PATIENT; docs/txmem.md,
 * "Safe reuse"). A pass may keep the batch it has just tagged instead of running
 * membarrier only when that batch is all that is held back; every other pass must pass
 * threads between transactions at once. test_reclaim_patience steps through the patient
 * case itself; this test checks where patience must stop, with a second thread B that
 * runs one empty transaction before each step (a record between transactions, its epoch
 * older than the step's frees, fence_next clear) and otherwise waits outside one:
 *   1. many batches, B running a transaction between two: each pass releases the batch
 *      before (B announced a newer epoch) and keeps its own: never a barrier, never more
 *      than one batch in the limbo;
 *   2. one commit over the high-water mark (txmem_limbo_max, 150 here): the pass is not
 *      patient: one scan, one barrier, everything released, no forced reclamation (a
 *      patient pass there would leave it to the forced loop);
 *   3. a kept batch and txmem_flush: the flush passes B with one barrier;
 *   4. a kept batch of a thread W that then exits: its exit pass passes B (and this
 *      thread) with one barrier, nothing is orphaned; the same when W freed less than a
 *      batch (the exit pass is the one that tags them);
 *   5. orphans: W frees a batch while B runs a transaction and exits (its batch becomes
 *      orphans); B ends its transaction; this thread's next pass is patient (its own batch
 *      and the orphans stay), the one after passes B with a barrier and releases its own
 *      entries and the orphans: an idle thread delays orphans by one pass, no more.
 * Without sticky announcements (txmem_membarrier=0, ThreadSanitizer builds) B between
 * transactions holds nothing back: every pass releases everything it tagged, no barrier;
 * in step 5 the orphans stay while B runs and go at this thread's first pass. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "txmem_test.h"

#define BATCH 64      /* SCAN_BATCH in txmem_epoch.c */
#define LIMBO_MAX 150 /* above two batches, below the 160 frees of step 2 */

/* ---- thread B: runs what it is told, one command at a time ---- */
enum { B_IDLE, B_RUN_TX, B_BEGIN, B_END, B_QUIT };
static _Atomic int b_cmd = B_IDLE, b_done;

static void b_do(int cmd) {
  atomic_store(&b_done, 0);
  atomic_store(&b_cmd, cmd);
  while (!atomic_load(&b_done)) sched_yield();
}

static void *thread_b(void *arg) {
  (void)arg;
  for (;;) {
    int cmd;
    while ((cmd = atomic_load(&b_cmd)) == B_IDLE) sched_yield();
    atomic_store(&b_cmd, B_IDLE);
    if (cmd == B_RUN_TX) {
      txmem_tx_begin(1);
      txmem_tx_commit(1);
    } else if (cmd == B_BEGIN) {
      txmem_tx_begin(1); /* stays running until B_END */
    } else if (cmd == B_END) {
      txmem_tx_commit(1);
    }
    atomic_store(&b_done, 1);
    if (cmd == B_QUIT) return NULL;
  }
}

/* ---- helpers ---- */
static txmem_stats stats_now(void) {
  txmem_stats s;
  txmem_stats_get(&s);
  return s;
}

/* One committed transaction of the calling thread that frees n objects allocated before it. */
static void commit_frees(int n) {
  void *objs[4 * BATCH];
  CHECK(n <= 4 * BATCH);
  for (int i = 0; i < n; i++) objs[i] = txmem_malloc(40);
  txmem_tx_begin(1);
  for (int i = 0; i < n; i++) txmem_free(objs[i]);
  txmem_tx_commit(1);
}

#define DELTA(now, before, field) ((unsigned long long)((now).field - (before).field))

static void expect(const char *step, const txmem_stats *s0, unsigned long long limbo,
                   unsigned long long barriers) {
  txmem_stats s = stats_now();
  CHECKF(s.limbo_objects == limbo, "%s: limbo %llu, expected %llu", step,
         (unsigned long long)s.limbo_objects, limbo);
  CHECKF(DELTA(s, *s0, scan_barriers) == barriers, "%s: %llu barriers, expected %llu", step,
         DELTA(s, *s0, scan_barriers), barriers);
  CHECKF(DELTA(s, *s0, forced_reclamations) == 0, "%s: %llu forced reclamations", step,
         DELTA(s, *s0, forced_reclamations));
}

/* ---- thread W: frees in one or two transactions, waiting for a go after each, exits ---- */
static _Atomic int w_freed, w_go;
static int w_frees[2]; /* objects freed by W's first and second transaction (0: none) */

static void *thread_w(void *arg) {
  (void)arg;
  for (int i = 0; i < 2; i++) {
    if (w_frees[i]) commit_frees(w_frees[i]);
    atomic_store(&w_freed, i + 1);
    while (atomic_load(&w_go) <= i) sched_yield();
  }
  txmem_thread_exit();
  return NULL;
}

static pthread_t w_start(int first, int second) {
  w_frees[0] = first;
  w_frees[1] = second;
  atomic_store(&w_freed, 0);
  atomic_store(&w_go, 0);
  pthread_t w;
  CHECK(pthread_create(&w, NULL, thread_w, NULL) == 0);
  return w;
}

/* Waits until W's transaction `i` (0 or 1) is done; W runs the first at once, the second
 * once it may (w_go > 0). */
static void w_step(int i) {
  atomic_store(&w_go, i);
  while (atomic_load(&w_freed) <= i) sched_yield();
}

static void w_exit(pthread_t w) {
  atomic_store(&w_go, 2);
  CHECK(pthread_join(w, NULL) == 0);
}

int main(void) {
  char max[32];
  snprintf(max, sizeof max, "%d", LIMBO_MAX);
  test_set_option("safe_reuse", "1");
  test_set_option("txmem_limbo_max", max);
  alarm(120);
  bool sticky = txmem_membarrier_in_force();
  fprintf(stderr, "strategy %s, sticky announcements %d\n",
          txmem_strategy_name(txmem_get_strategy()), sticky);
  txmem_flush();
  pthread_t b;
  CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
  char step[96];

  /* 1. B keeps running transactions between batches. */
  b_do(B_RUN_TX);
  txmem_stats s0 = stats_now(), s1;
  for (int i = 0; i < 50; i++) {
    commit_frees(BATCH);
    snprintf(step, sizeof step, "1. batch %d, B ran a transaction before", i);
    expect(step, &s0, sticky ? BATCH : 0, 0);
    b_do(B_RUN_TX);
  }
  txmem_flush(); /* B ran a transaction after the last batch: no barrier */
  expect("1. flush", &s0, 0, 0);

  /* 2. Over the high-water mark in one commit. */
  b_do(B_RUN_TX);
  s0 = stats_now();
  commit_frees(LIMBO_MAX + 10);
  expect("2. over the high-water mark", &s0, 0, sticky ? 1 : 0);
  s1 = stats_now();
  CHECKF(DELTA(s1, s0, reclaim_scans) == 1, "2. %llu scans, expected 1",
         DELTA(s1, s0, reclaim_scans));

  /* 3. A kept batch, then a flush. */
  b_do(B_RUN_TX);
  s0 = stats_now();
  commit_frees(BATCH);
  expect("3. batch kept", &s0, sticky ? BATCH : 0, 0);
  txmem_flush();
  expect("3. flush", &s0, 0, sticky ? 1 : 0);

  /* 4. Another thread's kept batch, then its exit. This thread ran a transaction just now
   * (step 3), so its record, like B's, holds W's batch back until a barrier. */
  commit_frees(1); /* this thread's record: a fresh epoch, fence_next clear */
  txmem_flush();   /* B was flagged by step 3's barrier: no barrier here */
  b_do(B_RUN_TX);
  s0 = stats_now();
  pthread_t w = w_start(BATCH, 0);
  w_step(0);
  expect("4. W's batch kept", &s0, sticky ? BATCH : 0, 0);
  w_step(1);
  w_exit(w);
  expect("4. W exited", &s0, 0, sticky ? 1 : 0);
  s1 = stats_now();
  CHECKF(DELTA(s1, s0, orphaned) == 0, "4. %llu orphaned", DELTA(s1, s0, orphaned));

  /* 4b. W's exit pass is the one that tags its frees: it must not be patient either. W's
   * first commit (its first pass) finds this thread and B flagged by step 4's barrier and
   * releases its one object; its second commit adds less than a batch (no pass). */
  s0 = stats_now();
  w = w_start(1, 10);
  w_step(0);
  expect("4b. W's first pass", &s0, 0, 0);
  b_do(B_RUN_TX); /* both records between transactions, older than W's next frees */
  txmem_tx_begin(1);
  txmem_tx_commit(1);
  w_step(1);
  expect("4b. W's frees not tagged yet", &s0, 10, 0);
  w_exit(w);
  expect("4b. W exited", &s0, 0, sticky ? 1 : 0);
  s1 = stats_now();
  CHECKF(DELTA(s1, s0, orphaned) == 0, "4b. %llu orphaned", DELTA(s1, s0, orphaned));

  /* 5. Orphans held by B's transaction, then by B between transactions. */
  b_do(B_BEGIN);
  s0 = stats_now();
  w = w_start(BATCH, 0);
  w_step(0);
  w_step(1);
  w_exit(w);
  s1 = stats_now();
  CHECKF(DELTA(s1, s0, orphaned) == BATCH, "5. %llu orphaned, expected %d", DELTA(s1, s0, orphaned),
         BATCH);
  b_do(B_END); /* B between transactions, its epoch older than the orphans' */
  s0 = stats_now();
  commit_frees(BATCH);
  expect("5. first pass after B's end", &s0, sticky ? 2 * BATCH : 0, 0);
  commit_frees(BATCH);
  expect("5. second pass", &s0, 0, sticky ? 1 : 0);

  b_do(B_QUIT);
  CHECK(pthread_join(b, NULL) == 0);
  txmem_flush();
  return check_exit();
}
