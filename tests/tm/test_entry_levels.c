/* The fast entry's block (tm.h: one for statement; its condition tests the once-pointer and
 * calls tm_start_, which returns twice; its increment clears the once-pointer and commits)
 * at every optimisation level: tests/tm/CMakeLists.txt builds this file at -O0, -O1, -O2
 * and -O3. The rollbacks that depend on the loop's shape:
 *   - a restart from inside tm_commit_, after the increment has cleared tm_ctx_once_
 *     (commit-time validation fails: another thread committed a word the block read),
 *     reached from the end of the body and from `continue`: the body runs once more;
 *   - tm_abort in the run after such a restart: the block is skipped, nothing stays;
 *   - a block nested in another (the names shadowed) that restarts itself, in an outer
 *     block restarted from its commit: a local of the outer block read in the inner one
 *     keeps its value;
 *   - blocks in a loop: the counter and the function's other locals, not modified in the
 *     block, keep their values across restarts from the commit.
 * Under the glock backend no commit fails (the other thread would wait for this one): the
 * blocks run once. The sanitizer builds use the portable entry: the same checks. */
#include "tm_test.h"

static struct {
  _Alignas(256) uint64_t x; /* written by the other thread */
  _Alignas(256) uint64_t y;
  _Alignas(256) uint64_t z;
} mem;

static int lock_backend, flat;
/* The cause of the abort another thread's commit forces: a failed validation, or (htm)
 * the conflict of that commit's store with this block's read. */
static tm_abort_cause commit_conflict;
static int requests, served, stopping;

/* The other thread: one transaction adding 1 to mem.x per request. */
static TM_TEST_TX void bump_x(void) {
  TM_ATOMIC { tm_store(&mem.x, tm_load(&mem.x) + 1); }
}

static void *other_thread(void *arg) {
  (void)arg;
  for (int done = 0;;) {
    while (flag_get(&requests) == done && !flag_get(&stopping)) sched_yield();
    if (flag_get(&requests) == done) break; /* stopping, nothing asked */
    bump_x();
    flag_set(&served, ++done);
  }
  tm_thread_exit();
  return NULL;
}

/* Called inside a block that read mem.x: another thread commits a new mem.x, so this
 * block's commit fails validation. Under the glock backend nothing happens. */
static void commit_x_elsewhere(void) {
  if (lock_backend) return;
  int n = flag_add(&requests, 1);
  flag_wait_ge(&served, n);
}

/* ---- a restart from the commit, from the end of the body or from `continue` ---- */
static int use_continue;
static volatile int runs, after;

static TM_TEST_TX void commit_restart(void) {
  runs = after = 0;
  TM_ATOMIC {
    runs++;
    tm_store(&mem.y, tm_load(&mem.x) + 100);
    if (runs == 1) commit_x_elsewhere();
    if (use_continue) continue;
    after++;
  }
}

static void test_commit_restart(void) {
  for (use_continue = 0; use_continue < 2; use_continue++) {
    tm_stats s = tm_test_measure(use_continue ? "commit restart, continue" : "commit restart",
                                 commit_restart);
    int expect_runs = lock_backend ? 1 : 2;
    CHECKF(runs == expect_runs, "the block ran %d times", runs);
    CHECK(after == (use_continue ? 0 : expect_runs));
    CHECK(mem.y == mem.x + 100 && tm_depth() == 0);
    /* The other thread's commit counts too (it wrote). */
    CHECK(s.commits == (lock_backend ? 1u : 2u) && s.commits_read_only == 0);
    CHECK(tm_test_cause(&s, commit_conflict) == (lock_backend ? 0u : 1u));
    CHECK(s.retry_histogram[0] == 1 && s.retry_histogram[1] == (lock_backend ? 0u : 1u));
  }
}

/* ---- tm_abort in the run after a restart from the commit ---- */
static TM_TEST_TX void commit_restart_then_cancel(void) {
  runs = after = 0;
  TM_ATOMIC {
    runs++;
    tm_store(&mem.y, (uint64_t)12345);
    tm_store(&mem.z, tm_load(&mem.x));
    if (runs == 1)
      commit_x_elsewhere();
    else
      tm_abort();
    after++;
  }
}

static void test_cancel_after_commit_restart(void) {
  mem.y = mem.z = 7;
  tm_stats s = tm_test_measure("cancel after commit restart", commit_restart_then_cancel);
  CHECK(tm_depth() == 0);
  if (lock_backend) { /* no restart: the first run commits */
    CHECK(runs == 1 && after == 1 && mem.y == 12345 && mem.z == mem.x);
    CHECK(s.commits == 1 && s.aborts == 0);
  } else {
    CHECK(runs == 2 && after == 1 && mem.y == 7 && mem.z == 7);
    CHECK(s.commits == 1 && s.aborts == 2); /* the other thread's */
    CHECK(tm_test_cause(&s, commit_conflict) == 1);
    CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == 1);
  }
  runs = 0;
  TM_ATOMIC { /* the next block is fresh */
    runs++;
    tm_store(&mem.z, (uint64_t)9);
  }
  CHECK(runs == 1 && mem.z == 9 && tm_depth() == 0);
}

/* ---- nested: the inner block restarts itself; the outer one restarts from its commit ---- */
static volatile int outer_runs, inner_runs, fired;

static TM_TEST_TX void nested_blocks(void) {
  outer_runs = inner_runs = fired = 0;
  TM_ATOMIC {
    outer_runs++;
    uint64_t v = tm_load(&mem.x) * 3 + 1; /* read after the inner block's restart */
    TM_ATOMIC {
      inner_runs++;
      tm_store(&mem.y, v);
      if (inner_runs == 1) tm_restart();
    }
    tm_store(&mem.z, tm_load(&mem.y) + 1);
    if (!fired) {
      fired = 1;
      commit_x_elsewhere();
    }
  }
}

static void test_nested(void) {
  tm_stats s = tm_test_measure("nested", nested_blocks);
  int outer_expect, inner_expect;
  if (lock_backend) { /* no commit restart; the inner restart re-runs the inner block */
    outer_expect = 1;
    inner_expect = 2;
  } else if (flat) { /* the inner restart re-runs the whole block */
    outer_expect = 3;
    inner_expect = 3;
  } else {
    outer_expect = 2;
    inner_expect = 3;
  }
  CHECKF(outer_runs == outer_expect && inner_runs == inner_expect, "outer %d, inner %d runs",
         outer_runs, inner_runs);
  CHECK(mem.y == mem.x * 3 + 1 && mem.z == mem.y + 1 && tm_depth() == 0);
  CHECK(s.commits == (lock_backend ? 1u : 2u)); /* with the other thread's */
}

/* ---- blocks in a loop; locals live across every block, never modified in one ---- */
static volatile int restarted_at;
/* The loop counter is a plain int under the fast entry (the case checked); around
 * sigsetjmp gcc's -Wclobbered flags it at -O1, so the portable entry gets a volatile one. */
#ifdef TM_FAST_ENTRY_
typedef int loop_counter;
#else
typedef volatile int loop_counter;
#endif

static TM_TEST_TX uint64_t blocks_in_loop(uint64_t a, uint64_t b, int n) {
  uint64_t k1 = a * 7 + b, k2 = a ^ (b << 3), k3 = b * 11 + 5;
  volatile uint64_t sum = 0;
  restarted_at = -1;
  for (loop_counter i = 0; i < n; i++) {
    TM_ATOMIC {
      tm_store(&mem.y, tm_load(&mem.x) + (uint64_t)i + k1);
      sum += k2 + (uint64_t)i;
      if (i % 2 == 0 && restarted_at != i) {
        restarted_at = i;
        commit_x_elsewhere();
      }
    }
  }
  return sum + k1 + k2 + k3 + a + b + (uint64_t)n;
}

static void test_loop(void) {
  const uint64_t a = 0x1234567, b = 0x89abcdef;
  const int n = 9;
  uint64_t k1 = a * 7 + b, k2 = a ^ (b << 3), k3 = b * 11 + 5, sum = 0;
  for (int i = 0; i < n; i++) /* even i: two runs (the first fails at its commit) */
    sum += (k2 + (uint64_t)i) * (i % 2 == 0 && !lock_backend ? 2 : 1);
  uint64_t expect = sum + k1 + k2 + k3 + a + b + (uint64_t)n;
  uint64_t got = blocks_in_loop(a, b, n);
  CHECKF(got == expect, "got %llu, expected %llu", (unsigned long long)got,
         (unsigned long long)expect);
  CHECK(mem.y == mem.x + (uint64_t)(n - 1) + k1 && tm_depth() == 0);
}

int main(void) {
  tm_test_watchdog(60);
  tm_test_print_config("entry_levels");
#ifdef TM_FAST_ENTRY_
  fprintf(stderr, "entry_levels: fast entry\n");
#else
  fprintf(stderr, "entry_levels: portable entry\n");
#endif
  lock_backend = tm_test_is_glock();
  commit_conflict = tm_test_is_htm() ? TM_ABORT_CONFLICT : TM_ABORT_VALIDATE_COMMIT;
  flat = tm_test_option_is("nesting", "flat");
  pthread_t other;
  if (pthread_create(&other, NULL, other_thread, NULL) != 0) {
    perror("pthread_create");
    return 2;
  }
  test_commit_restart();
  test_cancel_after_commit_restart();
  test_nested();
  test_loop();
  flag_set(&stopping, 1);
  pthread_join(other, NULL);
  CHECK(tm_depth() == 0);
  return check_exit();
}
