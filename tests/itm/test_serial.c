/* Relaxed transactions that call unsafe code run in serial mode: irrevocable and alone.
 *   - a block whose every path calls an unsafe function has no instrumented code: it runs
 *     uninstrumented (plain loads and stores) from its start;
 *   - a block that calls one on some path switches when it gets there
 *     (_ITM_changeTransactionMode): it restarts alone, and its locals start over;
 *   - a function called through a pointer with no transactional clone does the same
 *     (_ITM_getTMCloneOrIrrevocable), one with a clone runs transactionally;
 *   - alone means alone: threads running atomic blocks that read a and b together never see
 *     them differ while serial blocks write a, yield the processor and then write b with
 *     plain stores (more threads than cores, so the yields let the readers run). */
#include <pthread.h>
#include <sched.h>

#include "check.h"
#include "itm_test.h"

static long a, b, violations;
static int seen_mode;

/* Unsafe: an unannotated call (sched_yield), which a relaxed block may make only alone. */
static void unsafe_step(void) {
  seen_mode = _ITM_inTransaction();
  sched_yield();
}

static void test_always_serial(void) {
  __transaction_relaxed {
    a++;
    unsafe_step();
    b++;
  }
  CHECK(seen_mode == in_irrevocable_transaction);
  CHECK(a == 1 && b == 1);
}

static void test_switch(void) {
  int before = 0;
  for (int i = 0; i < 4; i++) {
    seen_mode = -1;
    __transaction_relaxed {
      before++; /* restored when the switch restarts the block */
      a++;
      if (i % 2) unsafe_step();
      b++;
    }
    CHECK(seen_mode == (i % 2 ? in_irrevocable_transaction : -1));
  }
  CHECK(before == 4);
  CHECK(a == 5 && b == 5);
}

/* Indirect calls: a transaction_safe function has a clone in the table, step_unsafe none. */
__attribute__((transaction_safe)) static void step_safe(void) { a++; }
static void step_unsafe(void) {
  seen_mode = _ITM_inTransaction();
  a++;
}
static void (*volatile step_ptr)(void);

static void test_indirect(void) {
  a = b = 0;
  step_ptr = (void (*)(void))step_safe;
  seen_mode = -1;
  __transaction_relaxed {
    b++;
    step_ptr();
  }
  CHECK(a == 1 && b == 1 && seen_mode == -1);
  step_ptr = step_unsafe;
  __transaction_relaxed {
    b++;
    step_ptr();
  }
  CHECK(a == 2 && b == 2 && seen_mode == in_irrevocable_transaction);
}

/* ---- Exclusion ---- */
enum { READERS = 5, SERIAL_BLOCKS = 200 };
static volatile int stop;

/* Read-only blocks check a == b (a doomed reader could not commit a wrong view: the
 * read-only ones could), update blocks keep the two moving. */
static void *reader(void *arg) {
  (void)arg;
  long bad = 0;
  for (unsigned i = 0; !stop; i++) {
    long x, y;
    if (i % 4) {
      __transaction_atomic {
        x = a;
        y = b;
      }
    } else {
      __transaction_atomic {
        x = a;
        y = b;
        a = x + 1;
        b = y + 1;
      }
    }
    if (x != y) bad++;
  }
  __transaction_atomic { violations += bad; }
  return NULL;
}

static void *serial_writer(void *arg) {
  (void)arg;
  for (int i = 0; i < SERIAL_BLOCKS; i++) {
    __transaction_relaxed {
      a++;
      unsafe_step();
      b++;
    }
  }
  return NULL;
}

static void test_exclusion(void) {
  a = b = violations = 0;
  pthread_t readers[READERS], writer;
  for (int i = 0; i < READERS; i++) pthread_create(&readers[i], NULL, reader, NULL);
  pthread_create(&writer, NULL, serial_writer, NULL);
  pthread_join(writer, NULL);
  stop = 1;
  for (int i = 0; i < READERS; i++) pthread_join(readers[i], NULL);
  CHECKF(violations == 0, "%ld atomic blocks saw a serial block half done", violations);
  CHECK(a == b && a >= SERIAL_BLOCKS);
}

int main(void) {
  test_always_serial();
  test_switch();
  test_indirect();
  test_exclusion();
  return check_exit();
}
