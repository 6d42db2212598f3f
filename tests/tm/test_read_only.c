/* Read-only attempts (TM_ATOMIC_RO: no read set, docs/stm.md "Read-only attempts") and the
 * per-block state that goes with them (tm_runtime.c: read_only_off, the retry counters and
 * the escalation state, zero at depth 0).
 *   validation  tm_request_validation resets the snapshot bound: a read-only attempt cannot
 *               validate, so its next load of a written stripe restarts it (read_only); a
 *               logging attempt validates and goes on.
 *   nested      the same from a closed or flat child of a read-only top level, and a store
 *               in such a child: the whole block restarts with a read set (never the child
 *               alone: the parent's reads were not recorded either).
 *   large       read-only attempts read more words than the read set's first capacity
 *               without growing it; the logging retry grows it and validates all of it.
 *   irrevocable tm_become_irrevocable in a read-only attempt (nothing recorded: it
 *               restarts irrevocably).
 *   per block   read_only_off, the retry counters and the escalation state end with their
 *               block (commit, tm_abort of the top level, a child's tm_abort).
 *   stress      transfers keep a total; read-only audits (some from a nested child, some
 *               reading every word) must always see it, while a thread keeps requesting
 *               validation.
 * Runs on every design x cm, flat nesting and the global lock (no aborts there). */
#include "tm_test.h"

#define WORDS 3000 /* more than the read set's initial capacity (1024) */

static struct {
  _Alignas(256) uint64_t x;
  _Alignas(256) uint64_t y;
  _Alignas(256) uint64_t z;
} m;
static _Alignas(256) uint64_t big[WORDS];

static int is_lock, is_flat;
static volatile uint64_t r1, r2;
static int top_runs, child_runs;

static tm_stats stats_now(void) {
  tm_stats s;
  tm_stats_get(&s);
  return s;
}

/* Gives x, y, z versions above 0 (a reset bound of 0 still admits a never-written stripe). */
static TM_TEST_TX void write_xyz(uint64_t x, uint64_t y, uint64_t z) {
  TM_ATOMIC {
    tm_store(&m.x, x);
    tm_store(&m.y, y);
    tm_store(&m.z, z);
  }
}

/* ---- tm_request_validation ---- */
/* Reads x, requests validation on the first attempt, reads y, in a block with `flags`. */
static TM_TEST_TX void validate_then_load(int flags) {
  top_runs = 0;
  TM_ATOMIC_FLAGS(flags) {
    r1 = tm_load(&m.x);
    if (++top_runs == 1) tm_request_validation();
    r2 = tm_load(&m.y);
  }
}
static void ro_validate_then_load(void) { validate_then_load(TM_FLAG_READ_ONLY); }
static void rw_validate_then_load(void) { validate_then_load(TM_FLAG_NONE); }

static void test_validation(void) {
  write_xyz(1, 2, 3);
  tm_stats s = tm_test_measure("validation (read-only)", ro_validate_then_load);
  CHECK(r1 == 1 && r2 == 2);
  CHECK(s.commits == 1 && s.commits_read_only == 1);
  if (is_lock) {
    CHECK(top_runs == 1 && s.aborts == 0);
  } else {
    CHECKF(top_runs == 2 && s.aborts == 1 && tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1,
           "a read-only attempt whose bound was reset cannot validate: it restarts");
    CHECK(s.retry_histogram[1] == 1);
  }

  /* A logging attempt validates (its reads are still valid) and goes on. */
  s = tm_test_measure(NULL, rw_validate_then_load);
  CHECK(r1 == 1 && r2 == 2);
  CHECK(top_runs == 1 && s.aborts == 0 && s.commits == 1 && s.retry_histogram[0] == 1);
}

/* ---- Children of a read-only top level ---- */
static TM_TEST_TX void child_validate_then_load(void) {
  TM_ATOMIC {
    if (++child_runs == 1) tm_request_validation();
    r2 = tm_load(&m.y);
  }
}
static TM_TEST_TX void ro_parent_of_validating_child(void) {
  top_runs = child_runs = 0;
  TM_ATOMIC_RO {
    top_runs++;
    r1 = tm_load(&m.x);
    child_validate_then_load();
  }
}

static TM_TEST_TX void child_store_z(void) {
  TM_ATOMIC {
    child_runs++;
    tm_store(&m.z, tm_load(&m.x) + tm_load(&m.y));
  }
}
static TM_TEST_TX void ro_parent_of_storing_child(void) {
  top_runs = child_runs = 0;
  TM_ATOMIC_RO {
    top_runs++;
    r1 = tm_load(&m.x);
    child_store_z();
    r2 = tm_load(&m.z);
  }
}

/* A read-only child of a logging parent: the hint is the top level's only. */
static TM_TEST_TX void ro_child_stores(void) {
  TM_ATOMIC_RO {
    child_runs++;
    tm_store(&m.y, tm_load(&m.x) * 10);
  }
}
static TM_TEST_TX void rw_parent_of_ro_child(void) {
  top_runs = child_runs = 0;
  TM_ATOMIC {
    top_runs++;
    ro_child_stores();
  }
}

static void test_nested(void) {
  write_xyz(4, 5, 6);
  tm_stats s = tm_test_measure("nested validation", ro_parent_of_validating_child);
  CHECK(r1 == 4 && r2 == 5);
  if (is_lock) {
    CHECK(top_runs == 1 && child_runs == 1 && s.aborts == 0);
  } else {
    CHECKF(top_runs == 2 && child_runs == 2 && s.aborts == 1 &&
               tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1,
           "the child of a read-only top level restarts the whole block (top %d child %d)",
           top_runs, child_runs);
  }
  CHECK(s.commits == 1 && s.commits_read_only == 1);

  s = tm_test_measure("nested store", ro_parent_of_storing_child);
  CHECK(m.z == 9 && r1 == 4 && r2 == 9);
  CHECK(s.commits == 1 && s.commits_read_only == 0);
  if (is_lock) {
    CHECK(top_runs == 1 && child_runs == 1 && s.aborts == 0);
  } else {
    CHECK(top_runs == 2 && child_runs == 2 && s.aborts == 1);
    CHECK(tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1);
  }

  s = tm_test_measure(NULL, rw_parent_of_ro_child);
  CHECK(m.y == 40 && top_runs == 1 && child_runs == 1 && s.aborts == 0);
}

/* ---- Read sets beyond their first capacity ---- */
static volatile uint64_t big_sum;
static TM_TEST_TX void ro_sum_big(int store_first, int validate_first) {
  top_runs = 0;
  TM_ATOMIC_RO {
    uint64_t sum = 0;
    int first = ++top_runs == 1;
    for (int i = 0; i < WORDS; i++) {
      sum += tm_load(&big[i]);
      if (first && validate_first && i == WORDS / 2) tm_request_validation();
    }
    if (first && store_first) tm_store(&m.z, sum);
    big_sum = sum;
  }
}

static TM_TEST_TX void fill_big(void) {
  TM_ATOMIC {
    for (int i = 0; i < WORDS; i++) tm_store(&big[i], (uint64_t)i * 7 + 1);
  }
}

static void test_large(void) {
  uint64_t expect = 0;
  fill_big();
  for (int i = 0; i < WORDS; i++) expect += (uint64_t)i * 7 + 1;
  for (int variant = 0; variant < 3; variant++) {
    tm_stats_reset();
    ro_sum_big(variant == 1, variant == 2);
    tm_stats s = stats_now();
    CHECKF(big_sum == expect, "variant %d: sum %llu, expected %llu", variant,
           (unsigned long long)big_sum, (unsigned long long)expect);
    int expect_runs = is_lock || variant == 0 ? 1 : 2;
    CHECKF(top_runs == expect_runs && s.aborts == (uint64_t)(expect_runs - 1),
           "variant %d: %d runs, %llu aborts", variant, top_runs, (unsigned long long)s.aborts);
    CHECK(s.commits == 1);
  }
}

/* ---- Irrevocability ---- */
static TM_TEST_TX void ro_become_irrevocable(void) {
  top_runs = 0;
  TM_ATOMIC_RO {
    top_runs++;
    tm_become_irrevocable();
    r1 = tm_load(&m.x);
  }
}

static void test_irrevocable(void) {
  write_xyz(11, 12, 13);
  tm_stats s = tm_test_measure("irrevocable", ro_become_irrevocable);
  CHECK(r1 == 11 && s.commits == 1 && s.commits_irrevocable == 1);
  if (tm_test_is_glock()) {
    CHECK(top_runs == 1 && s.aborts == 0);
  } else {
    /* Nothing recorded says whether it read: it restarts irrevocably. */
    CHECK(top_runs == 2 && s.aborts == 1 && tm_test_cause(&s, TM_ABORT_IRREVOCABLE) == 1);
  }
  /* The next block is revocable and read-only again. */
  s = tm_test_measure(NULL, ro_validate_then_load);
  CHECK(s.commits_irrevocable == 0);
  if (!is_lock) CHECK(top_runs == 2 && tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1);
}

/* ---- State that ends with its block ---- */
static TM_TEST_TX void ro_store_once(void) {
  top_runs = 0;
  TM_ATOMIC_RO {
    r1 = tm_load(&m.x);
    if (++top_runs == 1) tm_store(&m.z, tm_load(&m.z)); /* the same value: the lock's too */
  }
}
static TM_TEST_TX void load_x(void) {
  TM_ATOMIC { r1 = tm_load(&m.x); }
}
static TM_TEST_TX void ro_store_then_cancel(void) {
  top_runs = 0;
  TM_ATOMIC_RO {
    r1 = tm_load(&m.x);
    if (++top_runs == 1) tm_store(&m.z, (uint64_t)98);
    tm_abort();
  }
}
static TM_TEST_TX void restart_twice_then_cancel(void) {
  top_runs = 0;
  TM_ATOMIC {
    tm_store(&m.z, tm_load(&m.z) + 1);
    if (++top_runs <= 2) tm_restart();
    tm_abort();
  }
}
static TM_TEST_TX void child_cancels(void) {
  TM_ATOMIC {
    child_runs++;
    tm_store(&m.y, (uint64_t)777);
    tm_abort();
  }
}
static TM_TEST_TX void parent_of_cancelled_child(void) {
  top_runs = child_runs = 0;
  TM_ATOMIC {
    top_runs++;
    tm_store(&m.x, tm_load(&m.x) + 1);
    child_cancels();
  }
}

static void test_per_block(void) {
  write_xyz(21, 22, 23);
  /* A read-only attempt that stored: the block's retry logs; the next block is read-only
   * again (its reset bound restarts it). */
  tm_stats_reset();
  ro_store_once();
  ro_validate_then_load();
  tm_stats s = stats_now();
  tm_test_print_stats("per block", &s);
  CHECK(m.z == 23 && r1 == 21 && r2 == 22);
  if (!is_lock) {
    CHECK(tm_test_cause(&s, TM_ABORT_READ_ONLY) == 2 && s.aborts == 2);
    CHECK(s.retry_histogram[1] == 2 && s.max_consecutive_aborts == 1);
  }

  /* The same after the top level's tm_abort. */
  tm_stats_reset();
  ro_store_then_cancel();
  ro_validate_then_load();
  s = stats_now();
  CHECK(m.z == 23);
  CHECK(s.commits == 1);
  if (!is_lock) CHECK(tm_test_cause(&s, TM_ABORT_READ_ONLY) == 2);

  /* Aborts of a cancelled block do not follow the next one: it commits at its first try. */
  tm_stats_reset();
  restart_twice_then_cancel();
  CHECK(top_runs == 3 && m.z == 23);
  ro_validate_then_load();
  load_x();
  s = stats_now();
  CHECK(s.commits == 2 && s.aborts == (is_lock ? 3u : 4u));
  CHECK(s.retry_histogram[0] == 1 + (is_lock ? 1u : 0u));
  CHECK(s.retry_histogram[1] == (is_lock ? 0u : 1u));

  /* A child's tm_abort: closed, the parent commits after one abort (the child's) and the
   * next block starts clean; flat, the whole block is cancelled. */
  tm_stats_reset();
  uint64_t x0 = m.x;
  parent_of_cancelled_child();
  load_x();
  s = stats_now();
  CHECK(m.y == 22 && top_runs == 1 && child_runs == 1);
  if (is_flat) {
    CHECK(m.x == x0 && s.commits == 1 && s.retry_histogram[0] == 1);
  } else {
    CHECK(m.x == x0 + 1 && s.commits == 2);
    CHECK(s.retry_histogram[1] == 1 && s.retry_histogram[0] == 1);
  }
}

/* ---- Stress ---- */
#define ACCOUNTS 64
#define INITIAL 1000
static struct { _Alignas(64) uint64_t v; } accounts[ACCOUNTS];
static long transfers_each, audits_min;
static int audit_violations, writers_left, done;
static _Alignas(256) uint64_t unrelated; /* written alone: newer versions for the audits */

static TM_TEST_TX void transfer(uint64_t rnd) {
  int a = (int)(rnd % ACCOUNTS), b = (int)((rnd >> 16) % ACCOUNTS);
  TM_ATOMIC {
    uint64_t va = tm_load(&accounts[a].v);
    if (va > 0) {
      tm_store(&accounts[a].v, va - 1);
      tm_store(&accounts[b].v, tm_load(&accounts[b].v) + 1);
    }
    if ((rnd >> 40 & 7) == 0) tm_store(&unrelated, tm_load(&unrelated) + 1);
  }
}

static TM_TEST_TX uint64_t child_sum(int from, int to) {
  volatile uint64_t sum = 0;
  TM_ATOMIC {
    sum = 0;
    for (int i = from; i < to; i++) sum += tm_load(&accounts[i].v);
  }
  return sum;
}

static TM_TEST_TX void audit(long k) {
  TM_ATOMIC_RO {
    uint64_t sum = 0;
    for (int i = 0; i < ACCOUNTS / 2; i++) {
      sum += tm_load(&accounts[i].v);
      if (((k + i) & 15) == 0) sched_yield();
    }
    if (k & 1)
      sum += child_sum(ACCOUNTS / 2, ACCOUNTS);
    else
      for (int i = ACCOUNTS / 2; i < ACCOUNTS; i++) sum += tm_load(&accounts[i].v);
    if ((k & 7) == 0) /* a big read set: grows only in a logging retry */
      for (int i = 0; i < WORDS; i += 2) sum += tm_load(&big[i]) - tm_load(&big[i]);
    if (sum != (uint64_t)ACCOUNTS * INITIAL) flag_add(&audit_violations, 1);
  }
}

/* Threads 0-1 make transfers_each transfers each; 2-3 audit until the transfers are done
 * (at least audits_min times each); 4 requests validation meanwhile. */
static void stress_worker(int index, void *arg) {
  (void)arg;
  uint64_t rnd = (uint64_t)index * 0x9E3779B97F4A7C15ull + 3;
  if (index < 2) {
    for (long i = 0; i < transfers_each; i++) {
      rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
      transfer(rnd >> 8);
      if ((i & 7) == 0) sched_yield(); /* the audits must not starve */
    }
    if (flag_add(&writers_left, -1) == 0) flag_set(&done, 1);
  } else if (index < 4) {
    for (long k = 0; k < audits_min || !flag_get(&done); k++) {
      audit(k + index);
      sched_yield();
    }
  } else {
    while (!flag_get(&done)) {
      tm_request_validation();
      sched_yield();
    }
  }
}

static void test_stress(void) {
  for (int i = 0; i < ACCOUNTS; i++) accounts[i].v = INITIAL;
  transfers_each = check_scaled(100000, 10000);
  audits_min = check_scaled(1000, 100);
  writers_left = 2;
  done = 0;
  tm_stats_reset();
  tm_test_run_threads(5, stress_worker, NULL);
  tm_stats s = stats_now();
  tm_test_print_stats("stress", &s);
  CHECKF(audit_violations == 0, "%d audits saw a wrong total", audit_violations);
  uint64_t total = 0;
  for (int i = 0; i < ACCOUNTS; i++) total += accounts[i].v;
  CHECK(total == (uint64_t)ACCOUNTS * INITIAL);
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("read_only");
  is_lock = !tm_test_is_stm(); /* no read-only attempts: every block runs as written */
  is_flat = tm_test_option_is("nesting", "flat");
  test_validation();
  test_nested();
  test_large();
  test_irrevocable();
  test_per_block();
  test_stress();
  return check_exit();
}
