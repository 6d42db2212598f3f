/* tle's policy, deterministically (src/tm/tle.c; the expectations follow the options in
 * force, and ctest runs several):
 *   adaptive   one section overflows an L1 set: it aborts once (capacity) and takes the
 *              lock without a retry; the next tle_skip sections take the lock without
 *              trying to elide it (no abort); the one after is elided again
 *   retries    another thread's commit dooms a section in each of its first attempts: the
 *              section is retried until it has tle_retries conflict aborts, then takes the
 *              lock and commits there
 *   lock busy  thread H holds the lock (an irrevocable section) while W's section starts:
 *              with tle_wait=1, W waits for the lock to be free and is elided without an
 *              abort; with tle_wait=0, W aborts (explicit, code 0xff) tle_retries times,
 *              then takes the lock after H */
#include "tm_test.h"

static unsigned retries, skip;
static int wait_for_lock;
static size_t l1_sets, l1_ways, line;
static char *area;

static _Alignas(64) uint64_t x;
static _Alignas(64) uint64_t y;
static _Alignas(64) uint64_t z;

static unsigned opt(const char *name) { return (unsigned)strtoul(tm_test_option(name), NULL, 10); }

/* ---- adaptive ---- */
static volatile int was_irrevocable;

static TM_TEST_TX void overflow_l1_set(void) {
  TM_ATOMIC {
    for (size_t i = 0; i <= l1_ways; i++)
      tm_store((uint64_t *)(void *)(area + i * l1_sets * line), (uint64_t)i);
  }
}

static TM_TEST_TX void small_section(void) {
  TM_ATOMIC {
    was_irrevocable = tm_is_irrevocable();
    tm_store(&y, tm_load(&y) + 1);
  }
}

static void test_adaptive(void) {
  tm_stats s = tm_test_measure("overflow", overflow_l1_set);
  CHECK(s.aborts == 1 && tm_test_cause(&s, TM_ABORT_CAPACITY) == 1 && s.commits_irrevocable == 1);
  tm_stats_reset();
  for (unsigned i = 0; i < skip; i++) {
    small_section();
    CHECKF(was_irrevocable, "section %u after the overflow elided the lock", i);
  }
  small_section();
  CHECKF(!was_irrevocable, "elision did not resume after %u sections", skip);
  tm_stats_get(&s);
  tm_test_print_stats("after the overflow", &s);
  CHECK(s.aborts == 0 && s.commits == skip + 1 && s.commits_irrevocable == skip);
  CHECK(s.lock_held_ns > 0 || skip == 0);
}

/* ---- retries ---- */
static int victim_read, other_wrote;
static volatile unsigned victim_attempts;
static volatile int victim_irrevocable;

static TM_TEST_TX void victim(void) {
  victim_attempts = 0;
  TM_ATOMIC {
    unsigned attempt = ++victim_attempts;
    victim_irrevocable = tm_is_irrevocable();
    (void)tm_load(&x);
    if (!victim_irrevocable) {
      flag_set(&victim_read, (int)attempt);
      flag_wait_ge(&other_wrote, (int)attempt);
    }
    (void)tm_load(&z); /* a doomed attempt aborts here */
  }
}

static TM_TEST_TX void write_x(void) {
  TM_ATOMIC { tm_store(&x, tm_load(&x) + 1); }
}

static void retries_side(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    victim();
    flag_set(&other_wrote, 1 << 20); /* nothing more to wait for */
    return;
  }
  for (int k = 1;; k++) {
    while (flag_get(&victim_read) < k && flag_get(&other_wrote) < (1 << 20)) sched_yield();
    if (flag_get(&other_wrote) >= (1 << 20)) return;
    write_x();
    flag_set(&other_wrote, k);
  }
}

static void test_retries(void) {
  victim_read = other_wrote = 0;
  tm_stats_reset();
  tm_test_run_threads(2, retries_side, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("retries", &s);
  unsigned conflicts = retries ? retries : 1;
  CHECKF(victim_attempts == conflicts + 1 && victim_irrevocable, "%u attempts, the last %s",
         victim_attempts, victim_irrevocable ? "on the lock" : "elided");
  CHECK(s.aborts == conflicts && tm_test_cause(&s, TM_ABORT_CONFLICT) == conflicts);
  CHECK(s.commits_irrevocable == 1 && s.commits == conflicts + 1);
}

/* ---- lock busy ---- */
static int holding, w_aborts, h_done;
static volatile int w_irrevocable;
static unsigned w_status;

static void count_abort(void *ctx, unsigned depth) {
  (void)ctx;
  (void)depth;
  flag_add(&w_aborts, 1);
}

static TM_TEST_TX void holder(void) {
  TM_ATOMIC_IRREVOCABLE {
    tm_store(&y, tm_load(&y) + 1);
    flag_set(&holding, 1);
    if (wait_for_lock)
      yield_for(300); /* W may start meanwhile: it must wait, not abort */
    else
      flag_wait_ge(&w_aborts, (int)(retries ? retries : 1));
  }
}

static TM_TEST_TX void waiter(void) {
  TM_ATOMIC {
    w_irrevocable = tm_is_irrevocable();
    tm_store(&z, tm_load(&z) + 1);
  }
  w_status = tm_last_abort_status();
}

static void busy_side(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    holder();
    flag_set(&h_done, 1);
    return;
  }
  flag_wait_ge(&holding, 1);
  waiter();
}

static void test_lock_busy(void) {
  holding = w_aborts = h_done = 0;
  tm_stats_reset();
  tm_test_run_threads(2, busy_side, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("lock busy", &s);
  if (wait_for_lock) {
    CHECK(s.aborts == 0 && !w_irrevocable && s.commits_irrevocable == 1);
  } else {
    unsigned n = retries ? retries : 1;
    CHECK(s.aborts == n && tm_test_cause(&s, TM_ABORT_EXPLICIT) == n);
    CHECKF(w_status == (TM_XABORT_EXPLICIT | 0xffu << 24), "status %#x", w_status);
    CHECK(w_irrevocable && s.commits_irrevocable == 2);
  }
}

int main(void) {
  tm_test_watchdog(120);
  tm_test_print_config("tle");
  if (!tm_test_option_is("tm", "tle")) {
    fprintf(stderr, "tle: runs under tm=tle only\n");
    return 2;
  }
  retries = opt("tle_retries");
  skip = opt("tle_skip");
  wait_for_lock = tm_test_option_is("tle_wait", "1");
  line = opt("htm_line");
  l1_sets = opt("htm_l1_sets");
  l1_ways = opt("htm_l1_ways");
  fprintf(stderr, "tle_retries %u, tle_skip %u, tle_wait %d\n", retries, skip, wait_for_lock);
  tm_callbacks cb = {NULL, NULL, count_abort, NULL, NULL};
  CHECK(tm_register_callbacks(&cb) == 0);
  area = aligned_alloc(4096, (l1_ways + 1) * l1_sets * line);
  CHECK(area != NULL);
  test_adaptive();
  test_retries();
  test_lock_busy();
  free(area);
  return check_exit();
}
