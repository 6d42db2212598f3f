/* Reclamation passes and threads between transactions (docs/txmem.md, "Safe reuse"). With
 * sticky announcements a thread between transactions keeps showing the epoch of its last
 * one, which holds back every batch tagged after it. A pass whose only held-back entries
 * are the batch it has just tagged keeps them for the next pass instead of running
 * membarrier: a thread that keeps running transactions announces a newer epoch meanwhile.
 * Steps, with a second thread B and this thread freeing 64 objects per transaction (one
 * pass per transaction, SCAN_BATCH in txmem_epoch.c):
 *   1. B ran a transaction and waits outside one; a pass keeps the new batch, no barrier;
 *   2. B runs one more transaction; the next pass releases the first batch (B's epoch is
 *      newer), keeps the second, still no barrier;
 *   3. B stays idle; the next pass finds the second batch held back for a whole batch and
 *      passes B with one membarrier: everything is released;
 *   4. B runs one more transaction and waits; a batch of more than 256 KiB (PATIENT_MAX_BYTES)
 *      is not kept: its pass passes B with a membarrier at once.
 * Without sticky announcements (option txmem_membarrier=0, ThreadSanitizer builds) a thread
 * between transactions shows no announcement: every pass releases everything, no barrier. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "txmem_test.h"

#define BATCH 64 /* SCAN_BATCH */

static _Atomic int phase;

static void wait_phase(int p) {
  while (atomic_load(&phase) < p) sched_yield();
}

static void empty_transaction(void) {
  txmem_tx_begin(1);
  txmem_tx_commit(1);
}

static void *thread_b(void *arg) {
  (void)arg;
  empty_transaction();
  atomic_store(&phase, 1);
  wait_phase(2);
  empty_transaction();
  atomic_store(&phase, 3);
  wait_phase(4);
  empty_transaction();
  atomic_store(&phase, 5);
  wait_phase(6); /* idle until this thread's last pass is done */
  return NULL;
}

/* One committed transaction that frees BATCH objects of `size` bytes allocated before it. */
static void commit_batch(size_t size) {
  void *objs[BATCH];
  for (int i = 0; i < BATCH; i++) objs[i] = txmem_malloc(size);
  txmem_tx_begin(1);
  for (int i = 0; i < BATCH; i++) txmem_free(objs[i]);
  txmem_tx_commit(1);
}

/* Checks the limbo and the barriers run since `s0` after a step. */
static void expect(const char *step, const txmem_stats *s0, uint64_t limbo, uint64_t barriers) {
  txmem_stats s;
  txmem_stats_get(&s);
  CHECKF(s.limbo_objects == limbo, "%s: limbo %llu, expected %llu", step,
         (unsigned long long)s.limbo_objects, (unsigned long long)limbo);
  CHECKF(s.scan_barriers - s0->scan_barriers == barriers, "%s: %llu barriers, expected %llu", step,
         (unsigned long long)(s.scan_barriers - s0->scan_barriers), (unsigned long long)barriers);
}

int main(void) {
  test_set_option("safe_reuse", "1");
  alarm(60);
  bool sticky = txmem_membarrier_in_force();
  fprintf(stderr, "strategy %s, sticky announcements %d\n",
          txmem_strategy_name(txmem_get_strategy()), sticky);
  txmem_flush(); /* an empty limbo: the next pass comes after BATCH frees */
  pthread_t b;
  CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0);
  wait_phase(1);
  txmem_stats s0;
  txmem_stats_get(&s0);

  commit_batch(40);
  expect("1. B idle, new batch", &s0, sticky ? BATCH : 0, 0);
  atomic_store(&phase, 2);
  wait_phase(3);
  commit_batch(40);
  expect("2. B ran a transaction", &s0, sticky ? BATCH : 0, 0);
  commit_batch(40);
  expect("3. B idle for a whole batch", &s0, 0, sticky ? 1 : 0);
  atomic_store(&phase, 4);
  wait_phase(5);
  commit_batch(8192); /* 512 KiB */
  expect("4. a batch of 512 KiB", &s0, 0, sticky ? 2 : 0);

  atomic_store(&phase, 6);
  CHECK(pthread_join(b, NULL) == 0);
  txmem_flush();
  return check_exit();
}
