/* Reclamation of deferred frees (safe reuse), with TXALLOC_TXMEM_LIMBO_MAX set to 64 here:
 *   1. An idle thread (began and ended transactions, now blocked outside one) and an
 *      exited thread never hold reclamation back: another thread's flush completes.
 *   2. A running transaction does hold it back (epoch_lag and active_transactions show it);
 *      a thread that exits meanwhile hands its limbo over (orphaned), and the orphans are
 *      released once the old transaction ended.
 *   3. High-water mark: a "zombie" transaction that never ends by itself (it loops until it
 *      is told to validate) blocks a thread whose limbo passes the mark; the thread calls
 *      the stale hook, the hook dooms the zombie, the zombie aborts, the thread goes on.
 *   4. A child of fork does not wait for transactions of threads that do not exist in it.
 * A watchdog alarm turns a hang (reclamation stalled forever) into a failure. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "txmem_test.h"

#define LIMBO_MAX 64

static _Atomic int phase;

static void wait_phase(int p) {
  while (atomic_load(&phase) < p) sched_yield();
}

/* Frees n objects allocated outside a transaction inside one committed transaction. */
static void commit_frees(int n, size_t size) {
  void *objs[256];
  for (int i = 0; i < n; i++) objs[i] = txmem_malloc(size);
  txmem_tx_begin(1);
  for (int i = 0; i < n; i++) txmem_free(objs[i]);
  txmem_tx_commit(1);
}

/* ---- 1. idle and exited threads ---- */
static void *idle_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 10; i++) commit_frees(8, 64);
  atomic_store(&phase, 1);
  wait_phase(2); /* idle, outside any transaction, while main reclaims */
  return NULL;   /* exits without calling txmem_thread_exit: the destructor does it */
}

static void test_idle_threads(void) {
  atomic_store(&phase, 0);
  pthread_t t;
  pthread_create(&t, NULL, idle_thread, NULL);
  wait_phase(1);
  for (int i = 0; i < 20; i++) commit_frees(10, 48);
  txmem_flush(); /* must not wait for the idle thread */
  txmem_stats s;
  txmem_stats_get(&s);
  /* Only the idle thread's own last frees (less than a scan batch, 64, plus its last
   * commit) may still wait: it releases them at its next commit, flush or exit. */
  CHECKF(s.limbo_objects < 64 + 8, "limbo %llu", (unsigned long long)s.limbo_objects);
  /* With sticky announcements the idle thread still shows the epoch of its last
   * transaction, older than main's frees: only a membarrier lets the scans pass it. */
  if (txmem_membarrier_in_force())
    CHECKF(s.scan_barriers > 0, "no scan barrier with sticky announcements");
  else
    CHECKF(s.scan_barriers == 0, "%llu scan barriers without sticky announcements",
           (unsigned long long)s.scan_barriers);
  atomic_store(&phase, 2);
  pthread_join(t, NULL); /* its exit destructor releases them: nothing blocks */
  txmem_stats_get(&s);
  CHECKF(s.limbo_objects == 0, "limbo %llu after the idle thread exited",
         (unsigned long long)s.limbo_objects);
  CHECK(s.orphaned == 0);
}

/* ---- 2. a running transaction holds reclamation back; exiting threads hand over ---- */
static void *old_reader(void *arg) {
  (void)arg;
  txmem_tx_begin(1);
  atomic_store(&phase, 1);
  wait_phase(3);
  txmem_tx_abort(1);
  txmem_thread_exit();
  return NULL;
}

static void *exiting_freer(void *arg) {
  (void)arg;
  commit_frees(40, 96); /* below the high-water mark: no waiting */
  return NULL;          /* limbo handed over at exit */
}

static void test_running_transaction_and_orphans(void) {
  atomic_store(&phase, 0);
  txmem_stats s0, s1;
  txmem_stats_get(&s0);
  pthread_t reader, freer;
  pthread_create(&reader, NULL, old_reader, NULL);
  wait_phase(1);
  pthread_create(&freer, NULL, exiting_freer, NULL);
  pthread_join(freer, NULL);
  commit_frees(20, 96);
  txmem_stats_get(&s1);
  CHECKF(s1.orphaned - s0.orphaned == 40, "orphaned %llu",
         (unsigned long long)(s1.orphaned - s0.orphaned));
  CHECKF(s1.limbo_objects >= 60, "limbo %llu: the old transaction did not hold frees back",
         (unsigned long long)s1.limbo_objects);
  CHECK(s1.active_transactions == 1);
  CHECK(s1.epoch_lag >= 1); /* the exiting freer's scan published its frees */
  atomic_store(&phase, 3);
  pthread_join(reader, NULL);
  txmem_flush(); /* releases this thread's limbo and the orphans */
  txmem_stats_get(&s1);
  CHECKF(s1.limbo_objects == 0 && s1.limbo_bytes == 0, "limbo %llu objects, %llu bytes",
         (unsigned long long)s1.limbo_objects, (unsigned long long)s1.limbo_bytes);
  CHECK(s1.active_transactions == 0 && s1.epoch_lag == 0);
}

/* ---- 3. high-water mark and the stale hook ---- */
static _Atomic int zombie_doomed, hook_calls;
static _Atomic uint64_t zombie_epoch;

static void stale_hook(uint64_t epoch, void *arg) {
  (void)arg;
  atomic_fetch_add(&hook_calls, 1);
  if (atomic_load(&zombie_epoch) < epoch) atomic_store(&zombie_doomed, 1);
}

static void *zombie(void *arg) {
  (void)arg;
  txmem_stats s;
  txmem_tx_begin(1);
  txmem_stats_get(&s);
  atomic_store(&zombie_epoch, s.epoch); /* an upper bound of the epoch it announced */
  atomic_store(&phase, 1);
  while (!atomic_load(&zombie_doomed)) sched_yield(); /* "validation" fails only when told */
  txmem_tx_abort(1);
  txmem_thread_exit();
  return NULL;
}

static void test_high_water(void) {
  atomic_store(&phase, 0);
  txmem_set_stale_hook(stale_hook, NULL);
  txmem_stats s0, s1;
  txmem_stats_get(&s0);
  pthread_t z;
  pthread_create(&z, NULL, zombie, NULL);
  wait_phase(1);
  for (int i = 0; i < 10; i++) commit_frees(20, 32); /* 200 > LIMBO_MAX: must force */
  txmem_stats_get(&s1);
  CHECK(s1.forced_reclamations > s0.forced_reclamations);
  CHECK(atomic_load(&hook_calls) > 0);
  CHECK(atomic_load(&zombie_doomed) == 1);
  pthread_join(z, NULL);
  txmem_flush();
  txmem_set_stale_hook(NULL, NULL);
  txmem_stats_get(&s1);
  CHECK(s1.limbo_objects == 0);
  CHECKF(s1.limbo_peak <= LIMBO_MAX + 20, "limbo peak %llu", (unsigned long long)s1.limbo_peak);
}

/* ---- 4. fork while another thread is inside a transaction ---- */
static void *forever_reader(void *arg) {
  (void)arg;
  txmem_tx_begin(1);
  atomic_store(&phase, 1);
  wait_phase(2);
  txmem_tx_abort(1);
  txmem_thread_exit();
  return NULL;
}

static void test_fork(void) {
  atomic_store(&phase, 0);
  pthread_t t;
  pthread_create(&t, NULL, forever_reader, NULL);
  wait_phase(1);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    /* The reader's transaction does not exist here: it must not block reclamation. */
    alarm(20);
    for (int i = 0; i < 10; i++) commit_frees(20, 32); /* passes the high-water mark */
    txmem_flush();
    txmem_stats s;
    txmem_stats_get(&s);
    _exit(s.limbo_objects == 0 && s.active_transactions == 0 ? 0 : 3);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child of fork: status %d", status);
  atomic_store(&phase, 2);
  pthread_join(t, NULL);
}

int main(void) {
  test_set_option("txmem_limbo_max", "64");
  test_set_option("safe_reuse", "1");
  alarm(120); /* a stalled reclamation becomes a failure, not a hung test */
  long long l0 = txmem_test_live_bytes();
  test_idle_threads();
  test_running_transaction_and_orphans();
  test_high_water();
  test_fork();
  if (txmem_get_strategy() == TXMEM_TXALLOC && l0 >= 0)
    CHECKF(txmem_test_live_bytes() == l0, "live bytes %lld, expected %lld", txmem_test_live_bytes(),
           l0);
  txmem_stats_print_json(2);
  fputc('\n', stderr);
  return check_exit();
}
