/* Irrevocable (serial) transactions.
 *   explicit   TM_ATOMIC_IRREVOCABLE runs exactly once (I/O allowed) and alone: while it
 *              runs, other threads keep trying to commit increments of a counter, and the
 *              irrevocable transaction must see the counter unchanged from its first read to
 *              its last, however long it waits for the others to have had their chance.
 *   fallback   with irrevocable_after=N (set through txalloc_option_set before the first
 *              transaction) a transaction that aborted N times in a row (validation
 *              failures forced by another thread) runs its next attempt irrevocably: it
 *              commits then, counted in commits_irrevocable, after exactly N aborts.
 *   off        with the option at 0 (argument "off": the default) the same transaction keeps
 *              aborting as often as it is made to, and nothing is counted as irrevocable. */
#include "tm_test.h"

#define FALLBACK_AFTER 4
#define OTHERS 3

static struct {
  _Alignas(64) uint64_t counter;
  _Alignas(64) uint64_t x;
  _Alignas(64) uint64_t y;
} m;

/* ---- explicit ---- */
static int fallback_enabled; /* irrevocable_after = FALLBACK_AFTER is in force */
static int irrevocable_started, stop_others, attempts_after_start, irrevocable_runs;
static volatile uint64_t first_read, last_read;
static int64_t others_committed[OTHERS];

static TM_TEST_TX void increment_counter(void) {
  TM_ATOMIC { tm_store(&m.counter, tm_load(&m.counter) + 1); }
}

/* Runs alone: the counter must not change between its first and its last read. */
static TM_TEST_TX void irrevocable_transaction(void) {
  TM_ATOMIC_IRREVOCABLE {
    flag_add(&irrevocable_runs, 1);
    fprintf(stderr, "irrevocable transaction: I/O inside\n");
    first_read = tm_load(&m.counter);
    flag_set(&attempts_after_start, 0);
    flag_set(&irrevocable_started, 1);
    /* The other threads get their chance to commit: wait until they have started
     * OTHERS more transactions (they may instead be held at begin or at commit by this
     * one: the wait is bounded), then a while longer. */
    for (int round = 0; round < 20000 && flag_get(&attempts_after_start) < OTHERS; round++)
      sched_yield();
    yield_for(200);
    last_read = tm_load(&m.counter);
    tm_store(&m.counter, last_read + 1000);
  }
}

static void explicit_worker(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    irrevocable_transaction();
    flag_set(&stop_others, 1);
  } else {
    int64_t committed = 0;
    while (!flag_get(&stop_others)) {
      if (flag_get(&irrevocable_started)) flag_add(&attempts_after_start, 1);
      increment_counter();
      committed++;
      sched_yield();
    }
    others_committed[index - 1] = committed;
  }
}

static void test_explicit(void) {
  m.counter = 0;
  tm_stats_reset();
  tm_test_run_threads(1 + OTHERS, explicit_worker, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("explicit", &s);
  CHECK(flag_get(&irrevocable_runs) == 1);
  CHECKF(first_read == last_read,
         "commits happened inside the irrevocable transaction: %llu -> %llu",
         (unsigned long long)first_read, (unsigned long long)last_read);
  int64_t others = 0;
  for (int i = 0; i < OTHERS; i++) others += others_committed[i];
  CHECK(m.counter == (uint64_t)others + 1000);
  if (!tm_test_is_glock()) {
    /* With the fallback in force, an increment that lost FALLBACK_AFTER conflicts in a row
     * (to the other incrementers: slow under sanitizers) legitimately commits irrevocably,
     * after exactly that many aborts (an irrevocable attempt cannot abort). */
    uint64_t fallbacks = fallback_enabled ? s.retry_histogram[FALLBACK_AFTER] : 0;
    CHECKF(s.commits_irrevocable == 1 + fallbacks, "%llu irrevocable commits, %llu fallbacks",
           (unsigned long long)s.commits_irrevocable, (unsigned long long)fallbacks);
    if (fallback_enabled)
      for (int k = FALLBACK_AFTER + 1; k < TM_RETRY_HISTOGRAM_BUCKETS; k++)
        CHECKF(s.retry_histogram[k] == 0, "%llu commits after %d aborts",
               (unsigned long long)s.retry_histogram[k], k);
  }
  CHECK(s.commits == (uint64_t)others + 1);
}

/* ---- fallback ---- */
static int b_read, a_committed, b_aborts;
static volatile int b_attempts;

static void count_abort(void *ctx, unsigned depth) {
  (void)ctx;
  (void)depth;
  flag_add(&b_aborts, 1);
}

/* B reads x and stores y; in each of its first `forced` attempts it waits for A to commit
 * a new x, so that attempt fails validation. A commits once per attempt of B. */
static int forced;
static TM_TEST_TX void increment_x(void) {
  TM_ATOMIC { tm_store(&m.x, tm_load(&m.x) + 1); }
}
static TM_TEST_TX void b_transaction(void) {
  b_attempts = 0;
  TM_ATOMIC {
    int attempt = ++b_attempts;
    uint64_t v = tm_load(&m.x);
    tm_store(&m.y, v + 1);
    if (attempt <= forced) {
      flag_set(&b_read, attempt);
      flag_wait_ge(&a_committed, attempt);
    }
    (void)tm_load(&m.x); /* an ETL read of the newer stripe fails here */
  }
}

static void fallback_worker(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    for (int k = 1; k <= forced; k++) {
      flag_wait_ge(&b_read, k);
      increment_x();
      flag_set(&a_committed, k);
    }
  } else {
    b_transaction();
  }
}

static void test_fallback(int enabled) {
  m.x = m.y = 0;
  b_read = a_committed = b_aborts = 0;
  /* With the fallback on, B is made to fail N times (the N+1-th attempt would be
   * irrevocable) and would be made to fail N+2 times more: irrevocability must stop that. */
  forced = enabled ? FALLBACK_AFTER : FALLBACK_AFTER + 2;
  tm_stats_reset();
  tm_test_run_threads(2, fallback_worker, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats(enabled ? "fallback" : "no fallback", &s);
  if (enabled) {
    CHECKF(b_attempts == FALLBACK_AFTER + 1, "B ran %d times", b_attempts);
    CHECK(s.commits_irrevocable == 1);
    CHECK(s.retry_histogram[FALLBACK_AFTER] == 1);
  } else {
    CHECKF(b_attempts == FALLBACK_AFTER + 3, "B ran %d times", b_attempts);
    CHECK(s.commits_irrevocable == 0);
  }
  CHECK(m.y == m.x + 1);
  CHECK(s.aborts == (uint64_t)flag_get(&b_aborts)); /* on_abort once per abort */
  CHECK(s.aborts == (uint64_t)b_attempts - 1);
}

int main(int argc, char **argv) {
  tm_test_watchdog(120);
  int fallback = !(argc > 1 && strcmp(argv[1], "off") == 0);
  fallback_enabled = fallback;
  if (fallback) {
    char value[16];
    snprintf(value, sizeof value, "%d", FALLBACK_AFTER);
    test_set_option("irrevocable_after", value);
    /* htm-emul's and tle's own fallback after conflicts, at the same count. */
    if (tm_test_is_htm_emul()) test_set_option("htm_retries", value);
    if (tm_test_option_is("tm", "tle")) test_set_option("tle_retries", value);
  }
  tm_callbacks cb = {NULL, NULL, count_abort, NULL, NULL};
  CHECK(tm_register_callbacks(&cb) == 0);
  tm_test_print_config("irrevocable");
  fprintf(stderr, "irrevocable_after=%s\n", tm_test_option("irrevocable_after"));
  test_explicit();
  if (tm_test_is_stm()) test_fallback(fallback); /* validation failures: the STM's */
  return check_exit();
}
