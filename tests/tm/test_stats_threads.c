/* tm_stats_get while threads commit and exit. Per thread the runtime counts every commit in
 * the retry histogram and, besides, only the commits that wrote; tm_stats_get derives
 * commits (the histogram's sum) and commits_read_only (the difference), over the live
 * threads and the exited ones (folded at their exit). Waves of threads each make UPDATES
 * update commits and READS read-only ones (every 8th after a tm_restart, so the histogram's
 * bucket 1 is used and the read-only commits take both commit paths), then exit, while a
 * reader calls tm_stats_get in a loop:
 *   - every reading: commits is the histogram's sum, commits_read_only <= commits, and
 *     the commits that wrote (commits - commits_read_only) never exceed those made;
 *   - every reading: commits, commits that wrote and aborts never fewer than in the
 *     reading before (tm_stats_get reads the exited total and the live threads under one
 *     hold of the threads lock; with two holds, a thread exiting in between was in
 *     neither, and this check failed in most runs);
 *   - at the end: the exact counts, whatever the threads' exits.
 * Every design and the glock backend. */
#include "tm_test.h"

enum { THREADS = 3, WAVES = 8, UPDATES = 600, READS = 600 };

static struct { _Alignas(256) uint64_t w; /* one stripe per thread */ } mem[THREADS];

static int stop_reader, bad_readings, readings;

static TM_TEST_TX void update(int index) {
  TM_ATOMIC { tm_store(&mem[index].w, tm_load(&mem[index].w) + 1); }
}

static TM_TEST_TX uint64_t read_only(int index, int restart) {
  volatile int runs = 0;
  volatile uint64_t v = 0;
  TM_ATOMIC_RO {
    v = tm_load(&mem[index].w);
    if (++runs == 1 && restart) tm_restart();
  }
  return v;
}

static void worker(int index, void *arg) {
  (void)arg;
  for (int i = 0; i < UPDATES || i < READS; i++) {
    if (i < UPDATES) update(index);
    if (i < READS) (void)read_only(index, i % 8 == 0);
  }
  tm_thread_exit();
}

static void *reader(void *arg) {
  (void)arg;
  const uint64_t most_updates = (uint64_t)THREADS * WAVES * UPDATES;
  tm_stats prev = {0};
  while (!flag_get(&stop_reader)) {
    tm_stats s;
    tm_stats_get(&s);
    uint64_t sum = 0;
    for (int k = 0; k < TM_RETRY_HISTOGRAM_BUCKETS; k++) sum += s.retry_histogram[k];
    int bad = sum != s.commits || s.commits_read_only > s.commits ||
              s.commits - s.commits_read_only > most_updates;
    int fell = s.commits < prev.commits || s.aborts < prev.aborts ||
               s.commits - s.commits_read_only < prev.commits - prev.commits_read_only;
    if (bad || fell) {
      tm_test_print_stats(bad ? "bad reading" : "reading below the one before", &s);
      flag_add(&bad_readings, 1);
    }
    prev = s;
    flag_add(&readings, 1);
  }
  tm_thread_exit();
  return NULL;
}

int main(void) {
  tm_test_watchdog(120);
  tm_test_print_config("stats_threads");
  tm_stats_reset();
  pthread_t r;
  if (pthread_create(&r, NULL, reader, NULL) != 0) return 2;
  for (int w = 0; w < WAVES; w++) tm_test_run_threads(THREADS, worker, NULL);
  flag_set(&stop_reader, 1);
  pthread_join(r, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("stats_threads", &s);
  fprintf(stderr, "stats_threads: %d readings\n", flag_get(&readings));
  CHECKF(flag_get(&bad_readings) == 0, "%d readings broke an invariant", flag_get(&bad_readings));
  const uint64_t updates = (uint64_t)THREADS * WAVES * UPDATES;
  const uint64_t reads = (uint64_t)THREADS * WAVES * READS;
  const uint64_t restarted = (uint64_t)THREADS * WAVES * ((READS + 7) / 8);
  CHECK(s.commits == updates + reads);
  CHECK(s.commits_read_only == reads);
  CHECK(s.commits_irrevocable == 0);
  /* Update commits never abort here (each thread writes its own word); the restarted
   * read-only blocks commit after one abort; under the glock backend nothing else aborts. */
  CHECK(s.retry_histogram[1] >= restarted);
  CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == restarted);
  for (int t = 0; t < THREADS; t++) CHECK(mem[t].w == (uint64_t)WAVES * UPDATES);
  return check_exit();
}
