/* Lost-update detector: THREADS threads (more than cores) each add 1 to a shared counter
 * ITER times, and in the same transaction add 1 to their own slot and move one unit
 * between two shared words in different stripes. Any lost update, double commit or torn
 * write shows in the exact totals; the commit count must equal the number of transactions.
 * Runs on every design x cm. */
#include "tm_test.h"

#define THREADS 8

static struct {
  _Alignas(64) uint64_t counter;
  _Alignas(64) uint64_t left;
  _Alignas(256) uint64_t right;
  _Alignas(64) uint64_t slot[THREADS][8]; /* one cache line each */
} shared;

static long iterations;

static TM_TEST_TX void increment(int index, int odd, int yield_inside) {
  TM_ATOMIC {
    tm_store(&shared.counter, tm_load(&shared.counter) + 1);
    if (yield_inside) sched_yield(); /* 2 cores: let the others run into our locks */
    tm_store(&shared.slot[index][0], tm_load(&shared.slot[index][0]) + 1);
    if (odd) {
      tm_store(&shared.left, tm_load(&shared.left) - 1);
      tm_store(&shared.right, tm_load(&shared.right) + 1);
    } else {
      tm_store(&shared.right, tm_load(&shared.right) - 1);
      tm_store(&shared.left, tm_load(&shared.left) + 1);
    }
  }
}

static void worker(int index, void *arg) {
  (void)arg;
  for (long i = 0; i < iterations; i++) increment(index, (int)(i & 1), (i & 31) == 0);
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("counter");
  iterations = check_scaled(50000, 5000) & ~1L; /* even: left and right end where they began */
  shared.left = shared.right = 1000;
  tm_stats_reset();
  tm_test_run_threads(THREADS, worker, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("counter", &s);
  uint64_t expected = (uint64_t)THREADS * (uint64_t)iterations;
  CHECKF(shared.counter == expected, "counter %llu, expected %llu (lost updates)",
         (unsigned long long)shared.counter, (unsigned long long)expected);
  for (int t = 0; t < THREADS; t++) CHECK(shared.slot[t][0] == (uint64_t)iterations);
  CHECK(shared.left == 1000 && shared.right == 1000);
  CHECK(s.commits == expected);
  CHECK(s.commits_read_only == 0);
  uint64_t by_cause = 0;
  for (int c = 0; c < TM_ABORT_CAUSE_COUNT; c++) by_cause += s.aborts_by_cause[c];
  CHECK(by_cause == s.aborts);
  uint64_t histogram = 0;
  for (int k = 0; k < TM_RETRY_HISTOGRAM_BUCKETS; k++) histogram += s.retry_histogram[k];
  CHECK(histogram == s.commits);
  CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == 0);
  CHECK(s.true_conflicts + s.false_conflicts + s.unknown_conflicts <= s.aborts);
  if (tm_test_is_glock()) CHECK(s.aborts == 0);
  return check_exit();
}
