/* htm-emul's conflicts, forced by two threads, A and B, with flags: A's transaction takes a
 * line and waits (inside the transaction) until B has accessed it; B's access dooms A
 * (requester wins) and B commits at once; A notices at its next access, aborts with cause
 * conflict and status conflict|retry, and its retry commits. Each scenario makes exactly one
 * abort happen, or none where the accesses do not conflict.
 *   read / write        A reads x, B's transaction writes x
 *   write / read        A writes x, B's transaction reads x: B sees x as before A's write
 *   write / write       A writes x, B's transaction writes x: A's retry writes last
 *   line granularity    A reads x, B writes the other word of x's line
 *   plain store         A reads x (or writes it), B stores x outside any transaction
 *   no conflict         A reads x, B writes y (another line); A reads y' (a third line)
 *   read / read         A reads x, B reads x: readers share a line */
#include "tm_test.h"

static struct {
  _Alignas(64) uint64_t x;
  uint64_t x_other; /* same line as x */
  _Alignas(64) uint64_t y;
  _Alignas(64) uint64_t z;
} mem;

enum { A_READS, A_WRITES };
enum { B_TX_READ, B_TX_WRITE, B_TX_WRITE_OTHER_WORD, B_TX_WRITE_Y, B_PLAIN_STORE };

static int a_mode, b_mode;
static int a_holds, b_done;
static volatile int a_runs;
static volatile uint64_t a_saw, b_saw;
static unsigned a_status;

static TM_TEST_TX void a_transaction(void) {
  a_runs = 0;
  TM_ATOMIC {
    int run = ++a_runs;
    if (a_mode == A_READS)
      a_saw = tm_load(&mem.x);
    else
      tm_store(&mem.x, (uint64_t)100);
    if (run == 1) {
      flag_set(&a_holds, 1);
      flag_wait_ge(&b_done, 1);
    }
    (void)tm_load(&mem.z); /* the next access: a doomed attempt aborts here */
  }
  a_status = tm_last_abort_status();
}

static TM_TEST_TX void b_transaction(void) {
  TM_ATOMIC {
    switch (b_mode) {
    case B_TX_READ: b_saw = tm_load(&mem.x); break;
    case B_TX_WRITE: tm_store(&mem.x, (uint64_t)200); break;
    case B_TX_WRITE_OTHER_WORD: tm_store(&mem.x_other, (uint64_t)300); break;
    default: tm_store(&mem.y, (uint64_t)400); break;
    }
  }
}

static void side(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    a_transaction();
    return;
  }
  flag_wait_ge(&a_holds, 1);
  if (b_mode == B_PLAIN_STORE)
    tm_store(&mem.x, (uint64_t)500);
  else
    b_transaction();
  flag_set(&b_done, 1);
}

/* Runs the scenario and checks the number of aborts (all A's, for conflict). */
static tm_stats run(const char *name, int a, int b, int conflicts) {
  mem.x = 1;
  mem.x_other = mem.y = mem.z = 0;
  a_mode = a;
  b_mode = b;
  a_holds = b_done = 0;
  a_status = 0;
  tm_stats_reset();
  tm_test_run_threads(2, side, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats(name, &s);
  CHECKF(s.aborts == (uint64_t)conflicts && tm_test_cause(&s, TM_ABORT_CONFLICT) == s.aborts,
         "%s: %llu aborts, expected %d conflict", name, (unsigned long long)s.aborts, conflicts);
  CHECKF(a_runs == 1 + conflicts, "%s: A ran %d times", name, a_runs);
  if (conflicts)
    CHECKF(a_status == (TM_XABORT_CONFLICT | TM_XABORT_RETRY), "%s: status %#x", name, a_status);
  CHECK(s.commits_irrevocable == 0);
  return s;
}

int main(void) {
  tm_test_watchdog(120);
  tm_test_print_config("htm_conflict");
  run("read / write", A_READS, B_TX_WRITE, 1);
  CHECK(a_saw == 200 && mem.x == 200);
  run("write / read", A_WRITES, B_TX_READ, 1);
  CHECKF(b_saw == 1, "B read %llu: A's buffered write leaked", (unsigned long long)b_saw);
  CHECK(mem.x == 100);
  run("write / write", A_WRITES, B_TX_WRITE, 1);
  CHECK(mem.x == 100);
  run("line granularity", A_READS, B_TX_WRITE_OTHER_WORD, 1);
  CHECK(a_saw == 1 && mem.x_other == 300);
  run("plain store, A reads", A_READS, B_PLAIN_STORE, 1);
  CHECK(a_saw == 500 && mem.x == 500);
  run("plain store, A writes", A_WRITES, B_PLAIN_STORE, 1);
  CHECK(mem.x == 100);
  run("no conflict", A_READS, B_TX_WRITE_Y, 0);
  CHECK(a_saw == 1 && mem.y == 400);
  run("read / read", A_READS, B_TX_READ, 0);
  CHECK(a_saw == 1 && b_saw == 1);
  return check_exit();
}
