/* Snapshots from the last clock value seen (docs/stm.md, "Snapshots from the last clock
 * seen"): a block's first attempt may start its snapshot at the clock value its thread saw
 * last instead of loading the shared clock. A thread B commits, then another thread A
 * commits x and y, then B runs blocks that read them:
 *   logging     a block that records its reads sees A's values (the newest: a snapshot
 *               that is old only makes the attempt extend) and never aborts for it;
 *   read-only   a read-only block sees A's values too; on the configurations whose first
 *               attempts start from the last clock seen (etl designs, cm other than kill)
 *               it restarts exactly once (read_only), under ctl-wb at most once, with the
 *               glock backend and cm=kill never;
 *   after       the TM_FRESH_BEGINS blocks after such a restart load the clock: read-only
 *               blocks that each follow a commit of A never restart;
 *   new thread  a thread's first block starts from the clock of its set-up, not from an
 *               older thread's last value (descriptors are reused): no restart.
 * Runs on every design x cm and the global lock (no aborts there). */
#include "tm_test.h"

#define FOLLOWING 100 /* fewer than TM_FRESH_BEGINS (128) */

static struct {
  _Alignas(256) uint64_t x;
  _Alignas(256) uint64_t y;
  _Alignas(256) uint64_t own; /* B's own word */
} m;

/* 0: first attempts always load the clock (the glock backend, cm=kill); 1: they start from
 * the last value seen (etl designs); 2: sometimes (ctl-wb: after a block that wrote, the
 * next begins on the general path, which loads the clock). */
static int from_seen;
static int b_committed, a_round, b_round;
static volatile uint64_t r1, r2;
static tm_stats s_logging, s_read_only, s_following;

static TM_TEST_TX void write_xy(uint64_t v) {
  TM_ATOMIC {
    tm_store(&m.x, v);
    tm_store(&m.y, v);
  }
}
static TM_TEST_TX void read_xy(int flags) {
  TM_ATOMIC_FLAGS(flags) {
    r1 = tm_load(&m.x);
    r2 = tm_load(&m.y);
  }
}
static TM_TEST_TX void bump_own(void) {
  TM_ATOMIC { tm_store(&m.own, tm_load(&m.own) + 1); }
}

static tm_stats stats_of_read(int flags) {
  tm_stats_reset();
  read_xy(flags);
  tm_stats s;
  tm_stats_get(&s);
  return s;
}

/* A writes while B waits, and the reverse: the statistics B reads are B's alone. Round k
 * of A writes k + 1 into x and y. */
static void writer(void) {
  flag_wait_ge(&b_committed, 1);
  for (int k = 0; k < FOLLOWING + 2; k++) {
    flag_wait_ge(&b_round, k);
    for (int i = 0; i < 3; i++) write_xy((uint64_t)k + 1); /* several commits */
    flag_set(&a_round, k + 1);
  }
}

static void reader(void) {
  bump_own(); /* B's last clock value seen: its commit, older than A's */
  flag_set(&b_committed, 1);

  flag_wait_ge(&a_round, 1);
  s_logging = stats_of_read(TM_FLAG_NONE);
  CHECK(r1 == 1 && r2 == 1);
  flag_set(&b_round, 1);

  flag_wait_ge(&a_round, 2);
  s_read_only = stats_of_read(TM_FLAG_READ_ONLY);
  CHECK(r1 == 2 && r2 == 2);
  flag_set(&b_round, 2);

  tm_stats total = {0};
  int stale = 0;
  for (int k = 2; k < FOLLOWING + 2; k++) {
    flag_wait_ge(&a_round, k + 1);
    tm_stats s = stats_of_read(TM_FLAG_READ_ONLY);
    total.aborts += s.aborts;
    total.commits_read_only += s.commits_read_only;
    if (r1 != (uint64_t)k + 1 || r2 != (uint64_t)k + 1) stale++;
    flag_set(&b_round, k + 1);
  }
  CHECKF(stale == 0, "%d read-only blocks missed a commit that came before them", stale);
  s_following = total;
}

static void run(int index, void *arg) {
  (void)arg;
  if (index == 0)
    writer();
  else
    reader();
}

static int first_block_aborts;
static void new_thread(int index, void *arg) {
  (void)index;
  (void)arg;
  tm_stats s = stats_of_read(TM_FLAG_READ_ONLY);
  CHECK(r1 == 7 && r2 == 7);
  first_block_aborts = (int)s.aborts;
}

int main(void) {
  tm_test_watchdog(120);
  tm_test_print_config("clock_seen");
  if (!tm_test_is_stm() || tm_test_option_is("cm", "kill"))
    from_seen = 0;
  else
    from_seen = tm_test_is_etl() ? 1 : 2;
  tm_test_run_threads(2, run, NULL);

  tm_test_print_stats("logging", &s_logging);
  CHECKF(s_logging.aborts == 0, "an old snapshot extends: no abort");
  CHECK(s_logging.commits == 1);

  tm_test_print_stats("read-only", &s_read_only);
  CHECK(s_read_only.commits == 1 && s_read_only.commits_read_only == 1);
  if (from_seen == 0) {
    CHECK(s_read_only.aborts == 0);
  } else {
    CHECKF(from_seen == 2 || s_read_only.aborts == 1,
           "a read-only first attempt from the last clock seen restarts once");
    CHECK(s_read_only.aborts <= 1);
    CHECK(tm_test_cause(&s_read_only, TM_ABORT_READ_ONLY) == s_read_only.aborts);
    CHECK(s_read_only.true_conflicts + s_read_only.false_conflicts +
              s_read_only.unknown_conflicts ==
          0);
  }

  fprintf(stderr, "following: %llu read-only commits, %llu aborts\n",
          (unsigned long long)s_following.commits_read_only,
          (unsigned long long)s_following.aborts);
  CHECK(s_following.commits_read_only == FOLLOWING);
  CHECKF(s_following.aborts == 0, "the blocks after a restart load the clock");

  /* Commits by this thread, then a new thread (it may get a descriptor back whose last
   * value is old): its first block starts at its set-up's clock. */
  for (int i = 0; i < 5; i++) write_xy(7);
  tm_test_run_threads(1, new_thread, NULL);
  CHECKF(first_block_aborts == 0, "a new thread's first block restarted %d times",
         first_block_aborts);
  return check_exit();
}
