/* htm-emul under races: more threads than cores mix hardware attempts, capacity and
 * unfriendly aborts, the fallback lock and plain stores, and every invariant must hold.
 *   - transfers move one unit between two accounts (each on its own line); audits sum every
 *     account inside one transaction and must see the initial total;
 *   - every tenth transfer also writes one line more than an L1 set holds (capacity: it
 *     completes on the fallback, in place, while hardware attempts run and get doomed);
 *   - every 64th transfer allocates a large block (unfriendly: the fallback again);
 *   - one thread stores a ticker with plain tm_store outside transactions; hardware attempts
 *     read it at their start and at their end and must see it unchanged (strong isolation of
 *     the API's plain stores; a doomed attempt aborts at the second read). Irrevocable ones
 *     on the fallback are not isolated from plain stores, as under a real lock.
 * At the end: the total is intact, every transaction committed once, and each block that
 * aborted for capacity or unfriendliness committed on the fallback. */
#include "tm_test.h"

#define THREADS 8
#define ACCOUNTS 32
#define INITIAL 1000

static struct { _Alignas(64) uint64_t v; } accounts[ACCOUNTS];
static _Alignas(64) uint64_t ticker;
static uint64_t *wide; /* l1_ways + 1 lines of one L1 set */
static size_t l1_sets, l1_ways, line;
static int stop_ticker, audit_violations, isolation_violations;
static long iterations;

static TM_TEST_TX void transfer(uint64_t from, uint64_t to, int overflow, int allocate) {
  TM_ATOMIC {
    uint64_t t0 = tm_load(&ticker);
    tm_store(&accounts[from].v, tm_load(&accounts[from].v) - 1);
    tm_store(&accounts[to].v, tm_load(&accounts[to].v) + 1);
    if (overflow)
      for (size_t i = 0; i <= l1_ways; i++) {
        uint64_t *p = (uint64_t *)(void *)((char *)wide + i * l1_sets * line);
        tm_store(p, tm_load(p) + 1);
      }
    if (allocate) {
      void *p = tm_malloc((size_t)4 << 20);
      tm_free(p);
    }
    if (tm_load(&ticker) != t0 && !tm_is_irrevocable()) flag_add(&isolation_violations, 1);
  }
}

static TM_TEST_TX void audit(void) {
  TM_ATOMIC {
    uint64_t t0 = tm_load(&ticker);
    uint64_t total = 0;
    for (int i = 0; i < ACCOUNTS; i++) total += tm_load(&accounts[i].v);
    if (total != (uint64_t)ACCOUNTS * INITIAL) flag_add(&audit_violations, 1);
    if (tm_load(&ticker) != t0 && !tm_is_irrevocable()) flag_add(&isolation_violations, 1);
  }
}

static void worker(int index, void *arg) {
  (void)arg;
  if (index == THREADS - 1) {
    for (uint64_t t = 1; !flag_get(&stop_ticker); t++) {
      tm_store(&ticker, t);
      if ((t & 15) == 0) sched_yield();
    }
    return;
  }
  uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(index + 1);
  for (long i = 0; i < iterations; i++) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    if (i % 8 == 7) {
      audit();
      continue;
    }
    uint64_t from = rng % ACCOUNTS, to = (rng >> 20) % ACCOUNTS;
    transfer(from, to, i % 10 == 3, i % 64 == 5);
  }
}

static void run_workers(int index, void *arg) {
  worker(index, arg);
  /* The last worker to finish stops the ticker. */
  static int finished;
  if (index != THREADS - 1 && flag_add(&finished, 1) == THREADS - 1) flag_set(&stop_ticker, 1);
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("htm_race");
  line = (size_t)strtoul(tm_test_option("htm_line"), NULL, 10);
  l1_sets = (size_t)strtoul(tm_test_option("htm_l1_sets"), NULL, 10);
  l1_ways = (size_t)strtoul(tm_test_option("htm_l1_ways"), NULL, 10);
  wide = aligned_alloc(4096, (l1_ways + 1) * l1_sets * line);
  CHECK(wide != NULL);
  memset(wide, 0, (l1_ways + 1) * l1_sets * line);
  for (int i = 0; i < ACCOUNTS; i++) accounts[i].v = INITIAL;
  iterations = check_scaled(4000, 400);
  tm_stats_reset();
  tm_test_run_threads(THREADS, run_workers, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("race", &s);
  uint64_t total = 0;
  for (int i = 0; i < ACCOUNTS; i++) total += accounts[i].v;
  CHECKF(total == (uint64_t)ACCOUNTS * INITIAL, "total %llu", (unsigned long long)total);
  CHECKF(audit_violations == 0, "%d audits saw a wrong total", audit_violations);
  CHECKF(isolation_violations == 0, "%d transactions saw a plain store in their middle",
         isolation_violations);
  uint64_t transactions = (uint64_t)(THREADS - 1) * (uint64_t)iterations;
  CHECK(s.commits == transactions);
  /* Every overflowing transfer wrote each wide line once. */
  uint64_t overflows = 0;
  for (long i = 0; i < iterations; i++)
    if (i % 8 != 7 && i % 10 == 3) overflows++;
  overflows *= THREADS - 1;
  CHECK(*(uint64_t *)(void *)((char *)wide + l1_ways * l1_sets * line) == overflows);
  /* An overflowing block aborts for capacity at most once (its next attempt is on the
   * fallback), none if conflicts sent it there first; likewise for the allocations. */
  uint64_t capacity = tm_test_cause(&s, TM_ABORT_CAPACITY);
  uint64_t unfriendly = tm_test_cause(&s, TM_ABORT_UNFRIENDLY);
  CHECK(capacity <= overflows);
  CHECK(s.commits_irrevocable >= capacity + unfriendly);
  free(wide);
  return check_exit();
}
