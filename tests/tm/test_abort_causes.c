/* Every abort cause, forced deterministically by two threads (A and B) and checked in the
 * counters of tm_stats_get: each scenario makes exactly one abort happen, so the counts
 * are exact.
 *   read_locked       A stores x (ETL: locks its stripe) and stays open; B reads x.
 *   write_locked      A stores x and stays open; B stores x.
 *   validate_commit   B reads x and stores z; A commits x; B commits: its read set is stale.
 *   validate_read     B reads x; A commits x and y; B reads y, newer than B's snapshot: the
 *                     extension finds x changed.
 *   validate_extend   as above, but B's next access is a store to y (ETL: the store sees
 *                     the newer stripe; CTL: the commit fails validation instead).
 *   explicit          tm_restart / tm_abort.
 *   irrevocable       tm_become_irrevocable inside a transaction.
 *   read_only         a TM_ATOMIC_RO block (no read set) reads x; A commits x and y; the
 *                     block reads y, newer than its snapshot: it cannot extend, so it
 *                     restarts, with a read set. Also: a TM_ATOMIC_RO block that stores.
 * Lock conflicts can only be forced under encounter-time locking (etl-*): under ctl-wb a
 * store takes no lock before commit, so those scenarios check instead that B commits
 * without a lock-conflict abort. Under cm=wait a reader of a locked stripe waits instead of
 * aborting: the lock scenarios check only that B sees A's value. tm=lock runs the explicit
 * and irrevocable scenarios (nothing else can abort). */
#include "tm_test.h"

static struct {
  _Alignas(256) uint64_t x;
  _Alignas(256) uint64_t y;
  _Alignas(256) uint64_t z;
} mem;

static int a_locked, a_committed, b_ready, b_aborted;

typedef void (*side_fn)(void);

static void run_pair_thread(int index, void *arg) {
  side_fn *sides = arg;
  sides[index]();
}

/* Resets memory, flags and counters, runs a() and b() on two threads, returns the stats. */
static tm_stats run_pair(const char *name, side_fn a, side_fn b) {
  mem.x = mem.y = mem.z = 0;
  a_locked = a_committed = b_ready = b_aborted = 0;
  tm_stats_reset();
  side_fn sides[2] = {a, b};
  tm_test_run_threads(2, run_pair_thread, sides);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats(name, &s);
  return s;
}

static int cm_waits(void) { return tm_test_option_is("cm", "wait"); }

/* ---- read_locked / write_locked (ETL) ---- */
/* A: store x, hold the transaction open until B has aborted once (or, under cm=wait, until
 * B is about to access x and has had time to block on the lock). */
static void a_store_x_and_hold(void) {
  TM_ATOMIC {
    tm_store(&mem.x, (uint64_t)1);
    flag_set(&a_locked, 1);
    if (cm_waits()) {
      flag_wait_ge(&b_ready, 1);
      yield_for(200);
    } else {
      flag_wait_ge(&b_aborted, 1);
    }
  }
  flag_set(&a_committed, 1);
}

static volatile uint64_t b_seen;
static _Alignas(256) uint64_t b_private;

/* One commit of B's own word, after A began: B's next transaction starts at a later clock,
 * so it is the younger one (cm=kill lets the older transaction kill the younger; with equal
 * start times the thread ids would decide). */
static TM_TEST_TX void b_advance_clock(void) {
  TM_ATOMIC { tm_store(&b_private, tm_load(&b_private) + 1); }
}

/* B reads (or writes) x: its first attempt hits A's lock; later attempts wait for A's
 * commit first. */
static void b_access_x(bool write) {
  flag_wait_ge(&a_locked, 1);
  b_advance_clock();
  volatile int attempt = 0;
  volatile bool store = write;
  TM_ATOMIC {
    if (++attempt >= 2) {
      flag_set(&b_aborted, 1);
      flag_wait_ge(&a_committed, 1);
    }
    flag_set(&b_ready, 1);
    if (store)
      tm_store(&mem.x, (uint64_t)2);
    else
      b_seen = tm_load(&mem.x);
  }
}

static void b_read_x(void) { b_access_x(false); }
static void b_write_x(void) { b_access_x(true); }

/* Commit-time locking: A's store takes no lock before A commits, so B reads the old x and
 * commits (read-only) while A is still open; nothing aborts. */
static int b_done;
static void a_store_x_until_b_done(void) {
  TM_ATOMIC {
    tm_store(&mem.x, (uint64_t)1);
    flag_set(&a_locked, 1);
    flag_wait_ge(&b_done, 1);
  }
}
static void b_read_x_once(void) {
  flag_wait_ge(&a_locked, 1);
  TM_ATOMIC { b_seen = tm_load(&mem.x); }
  flag_set(&b_done, 1);
}

static void test_lock_conflicts(void) {
  if (!tm_test_is_stm()) return;
  if (!tm_test_is_etl()) {
    b_done = 0;
    tm_stats s = run_pair("ctl_no_encounter_lock", a_store_x_until_b_done, b_read_x_once);
    CHECK(b_seen == 0 && mem.x == 1);
    CHECK(s.commits == 2 && s.aborts == 0);
    return;
  }
  tm_stats s = run_pair("read_locked", a_store_x_and_hold, b_read_x);
  CHECK(b_seen == 1);
  CHECK(mem.x == 1);
  CHECK(s.commits == 3); /* A, B, and B's clock advance */
  if (!cm_waits()) {
    CHECK(s.aborts == 1);
    CHECK(tm_test_cause(&s, TM_ABORT_READ_LOCKED) == 1);
    CHECK(s.true_conflicts == 1 && s.false_conflicts == 0);
    CHECK(s.max_consecutive_aborts == 1);
    CHECK(s.retry_histogram[0] == 2 && s.retry_histogram[1] == 1);
  } else {
    CHECK(s.aborts == tm_test_cause(&s, TM_ABORT_READ_LOCKED));
  }

  s = run_pair("write_locked", a_store_x_and_hold, b_write_x);
  CHECK(mem.x == 2); /* B's store is the later one */
  CHECK(s.commits == 3);
  if (!cm_waits()) {
    CHECK(s.aborts == 1);
    CHECK(tm_test_cause(&s, TM_ABORT_WRITE_LOCKED) == 1);
    CHECK(s.true_conflicts == 1 && s.false_conflicts == 0);
  } else {
    CHECK(s.aborts == tm_test_cause(&s, TM_ABORT_WRITE_LOCKED));
  }
}

/* ---- validation failures ---- */
static void a_commit_x_y_after_b_read(void) {
  flag_wait_ge(&b_ready, 1);
  TM_ATOMIC {
    tm_store(&mem.x, (uint64_t)10);
    tm_store(&mem.y, (uint64_t)10);
  }
  flag_set(&a_committed, 1);
}

static volatile uint64_t b_r1, b_r2;

/* B: read x; (first attempt: wait for A's commit); store z. Commit validation fails. */
static void b_read_x_store_z(void) {
  volatile int attempt = 0;
  TM_ATOMIC {
    b_r1 = tm_load(&mem.x);
    tm_store(&mem.z, b_r1 + 1);
    if (++attempt == 1) {
      flag_set(&b_ready, 1);
      flag_wait_ge(&a_committed, 1);
    }
  }
}

/* B: read x; (first attempt: wait); read y, newer than B's snapshot; store z. */
static void b_read_x_then_y(void) {
  volatile int attempt = 0;
  TM_ATOMIC {
    b_r1 = tm_load(&mem.x);
    if (++attempt == 1) {
      flag_set(&b_ready, 1);
      flag_wait_ge(&a_committed, 1);
    }
    b_r2 = tm_load(&mem.y);
    tm_store(&mem.z, b_r1 + b_r2);
  }
}

/* B: read x; (first attempt: wait); store y, whose stripe is newer than B's snapshot. */
static void b_read_x_then_store_y(void) {
  volatile int attempt = 0;
  TM_ATOMIC {
    b_r1 = tm_load(&mem.x);
    if (++attempt == 1) {
      flag_set(&b_ready, 1);
      flag_wait_ge(&a_committed, 1);
    }
    tm_store(&mem.y, b_r1 + 5);
  }
}

static uint64_t validation_aborts(const tm_stats *s) {
  return tm_test_cause(s, TM_ABORT_VALIDATE_READ) + tm_test_cause(s, TM_ABORT_VALIDATE_EXTEND) +
         tm_test_cause(s, TM_ABORT_VALIDATE_COMMIT);
}

static void test_validation(void) {
  if (!tm_test_is_stm()) return;
  tm_stats s = run_pair("validate_commit", a_commit_x_y_after_b_read, b_read_x_store_z);
  CHECK(mem.z == 11 && b_r1 == 10);
  CHECK(s.commits == 2);
  CHECK(s.aborts == 1);
  CHECK(tm_test_cause(&s, TM_ABORT_VALIDATE_COMMIT) == 1);
  /* A really wrote the word B read: a sound classification never calls it false. */
  CHECK(s.false_conflicts == 0);
  CHECK(s.true_conflicts + s.unknown_conflicts == 1);

  s = run_pair("validate_on_read", a_commit_x_y_after_b_read, b_read_x_then_y);
  CHECK(b_r1 == 10 && b_r2 == 10 && mem.z == 20); /* never a mixed snapshot */
  CHECK(s.commits == 2);
  CHECK(s.aborts == 1);
  CHECKF(tm_test_cause(&s, TM_ABORT_VALIDATE_READ) == 1,
         "a read beyond the snapshot whose extension fails is a validate_read abort");
  CHECK(s.false_conflicts == 0);
  CHECK(s.true_conflicts + s.unknown_conflicts == 1);

  s = run_pair("validate_on_write", a_commit_x_y_after_b_read, b_read_x_then_store_y);
  CHECK(b_r1 == 10 && mem.y == 15);
  CHECK(s.commits == 2);
  CHECK(s.aborts == 1);
  CHECK(validation_aborts(&s) == 1);
  if (tm_test_is_etl())
    CHECKF(tm_test_cause(&s, TM_ABORT_VALIDATE_EXTEND) == 1,
           "ETL sees the newer stripe at the store and fails to extend its snapshot");
  else
    CHECKF(tm_test_cause(&s, TM_ABORT_VALIDATE_COMMIT) == 1,
           "CTL takes the lock and validates at commit");
  CHECK(s.false_conflicts == 0);
}

/* ---- read-only attempts ---- */
static volatile int b_ro_attempts;

/* B, read-only: read x; (first attempt: wait for A's commit); read y. */
static void b_read_only_x_then_y(void) {
  b_ro_attempts = 0;
  TM_ATOMIC_RO {
    b_r1 = tm_load(&mem.x);
    if (++b_ro_attempts == 1) {
      flag_set(&b_ready, 1);
      flag_wait_ge(&a_committed, 1);
    }
    b_r2 = tm_load(&mem.y);
  }
}

/* A is ready as soon as B began: B's second attempt (with a read set) extends its snapshot
 * at the next commit instead of aborting, here a commit of a word B has not read. */
static _Alignas(256) uint64_t a_other;
static void a_commit_other_during_b_retry(void) {
  flag_wait_ge(&b_ready, 1);
  TM_ATOMIC { tm_store(&a_other, tm_load(&a_other) + 1); }
  flag_set(&a_committed, 1);
}
static void b_read_only_retry_extends(void) {
  b_ro_attempts = 0;
  TM_ATOMIC_RO {
    b_r1 = tm_load(&mem.x);
    if (++b_ro_attempts == 1) tm_store(&mem.z, (uint64_t)1); /* the hint was wrong once */
    if (b_ro_attempts == 2) {
      flag_set(&b_ready, 1);
      flag_wait_ge(&a_committed, 1);
    }
    b_r2 = tm_load(&a_other); /* newer than the snapshot: extends (x unchanged) */
  }
}

static void test_read_only(void) {
  if (!tm_test_is_stm()) return;
  tm_stats s = run_pair("read_only", a_commit_x_y_after_b_read, b_read_only_x_then_y);
  CHECK(b_r1 == 10 && b_r2 == 10); /* never a mixed snapshot */
  CHECK(b_ro_attempts == 2);
  CHECK(s.commits == 2 && s.commits_read_only == 1);
  CHECK(s.aborts == 1);
  CHECKF(tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1,
         "a read-only attempt cannot extend its snapshot: it restarts (read_only)");
  CHECK(s.true_conflicts + s.false_conflicts + s.unknown_conflicts == 0);

  /* A store in a read-only block restarts it once; the retry records its reads, so it
   * survives a commit that a read-only attempt could not. */
  mem.x = mem.y = 0;
  s = run_pair("read_only_store", a_commit_other_during_b_retry, b_read_only_retry_extends);
  CHECK(b_ro_attempts == 2 && b_r1 == 0 && b_r2 == 1);
  CHECK(mem.z == 0); /* the store of the first attempt was rolled back */
  CHECK(s.commits == 2 && s.aborts == 1);
  CHECK(tm_test_cause(&s, TM_ABORT_READ_ONLY) == 1);
}

/* ---- explicit aborts ---- */
static void test_explicit(void) {
  mem.x = 5;
  tm_stats_reset();
  volatile int attempt = 0;
  TM_ATOMIC {
    tm_store(&mem.x, tm_load(&mem.x) + 1);
    if (++attempt <= 3) tm_restart();
  }
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("restart", &s);
  CHECK(attempt == 4);
  CHECK(mem.x == 6); /* the restarted attempts' stores were undone */
  CHECK(s.commits == 1 && s.aborts == 3);
  CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == 3);
  CHECK(s.max_consecutive_aborts == 3);
  CHECK(s.retry_histogram[3] == 1);
  CHECK(s.true_conflicts + s.false_conflicts + s.unknown_conflicts == 0);

  tm_stats_reset();
  volatile int after = 0;
  TM_ATOMIC {
    tm_store(&mem.x, (uint64_t)77);
    tm_abort();
    after = 1; /* never reached */
  }
  tm_stats_get(&s);
  tm_test_print_stats("abort", &s);
  CHECK(after == 0);
  CHECK(mem.x == 6);
  CHECK(s.commits == 0 && s.aborts == 1);
  CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == 1);
}

/* ---- becoming irrevocable ---- */
static void test_become_irrevocable(void) {
  mem.x = 1;
  tm_stats_reset();
  volatile int attempt = 0;
  TM_ATOMIC {
    attempt++;
    uint64_t v = tm_load(&mem.x);
    tm_become_irrevocable();
    tm_store(&mem.x, v + 1);
  }
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("become_irrevocable", &s);
  CHECK(mem.x == 2);
  CHECK(s.commits == 1);
  if (!tm_test_is_glock()) CHECK(s.commits_irrevocable == 1);
  /* Getting there may cost one rollback, counted as such. */
  CHECK(s.aborts == tm_test_cause(&s, TM_ABORT_IRREVOCABLE));
  CHECK(s.aborts <= 1 && attempt == (int)s.aborts + 1);
}

/* ---- killed (cm=kill, ETL) ----
 * B begins first (older); A commits once (the clock moves) and then begins, so A is the
 * younger. A stores x and holds it; B's read of x finds the younger owner: B marks A killed
 * and waits for the lock, which A does not release (it waits for B) — so B gives up with
 * read_locked. A then reaches its commit, finds itself killed and aborts (killed); both
 * retry and commit. */
static int b_began, b_retrying;
static _Alignas(256) uint64_t a_private;

static TM_TEST_TX void a_younger_holds_x(void) {
  TM_ATOMIC {
    tm_store(&mem.x, tm_load(&mem.x) + 1);
    flag_set(&a_locked, 1);
    flag_wait_ge(&b_retrying, 1);
  }
}

static void a_killed_side(void) {
  flag_wait_ge(&b_began, 1);
  TM_ATOMIC { tm_store(&a_private, tm_load(&a_private) + 1); } /* the clock moves */
  a_younger_holds_x();
  flag_set(&a_committed, 1);
}

static void b_older_kills(void) {
  volatile int attempt = 0;
  TM_ATOMIC {
    if (++attempt == 1) {
      flag_set(&b_began, 1);
      flag_wait_ge(&a_locked, 1);
    } else {
      flag_set(&b_retrying, 1);
      flag_wait_ge(&a_committed, 1);
    }
    b_seen = tm_load(&mem.x);
  }
}

static void test_killed(void) {
  if (!tm_test_is_etl() || !tm_test_option_is("cm", "kill")) return;
  b_began = b_retrying = 0;
  tm_stats s = run_pair("killed", a_killed_side, b_older_kills);
  CHECK(mem.x == 1 && b_seen == 1);
  CHECK(s.commits == 3);
  CHECK(s.aborts == 2);
  CHECK(tm_test_cause(&s, TM_ABORT_READ_LOCKED) == 1);
  CHECK(tm_test_cause(&s, TM_ABORT_KILLED) == 1);
  CHECK(s.true_conflicts == 2 && s.false_conflicts == 0); /* both over the word x */
}

int main(void) {
  tm_test_watchdog(120);
  tm_thread_init();
  tm_test_print_config("abort_causes");
  test_lock_conflicts();
  test_killed();
  test_validation();
  test_explicit();
  test_become_irrevocable();
  test_read_only();
  return check_exit();
}
