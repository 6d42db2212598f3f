/* The two block entries of tm.h (docs/stm.md "Begin and commit"): the fast entry
 * (tm_start_, x86-64) and the portable one (sigsetjmp), which test_entry_portable.c always
 * uses. A level records how it was entered, so a rollback returns to the right kind of
 * restart point whichever kind its parent or child used:
 *   - restarts and tm_abort of a block of each kind, nested in a block of the other kind;
 *   - the caller's callee-saved registers and stack pointer are those of the first entry
 *     after a restart from a deep call chain (the function's unmodified locals and
 *     arguments keep their values; the frame is intact);
 *   - a cancelled top-level block ends the transaction (depth 0, the next block is fresh);
 *   - `continue` ends a block with its commit;
 *   - the counters see every restart and cancel.
 * Every design and the glock backend. */
#include "test_entry.h"

static entry_state st;

static void reset(int outer_restarts, int inner_restarts, int inner_cancels) {
  memset(&st, 0, sizeof st);
  st.outer_restarts = outer_restarts;
  st.inner_restarts = inner_restarts;
  st.inner_cancels = inner_cancels;
}

/* A block entered the fast way (when tm.h has it): the inner block of the tests. */
static TM_TEST_TX void fast_child(entry_state *s) {
  TM_ATOMIC {
    s->inner_runs++;
    tm_store(&s->words[1], tm_load(&s->words[1]) + 1);
    if (s->inner_runs < s->inner_restarts + 1) tm_restart();
    if (s->inner_cancels) {
      tm_abort();
      s->inner_after_abort = 1;
    }
  }
}

static TM_TEST_TX void fast_block(entry_child_fn child) {
  TM_ATOMIC {
    st.outer_runs++;
    tm_store(&st.words[0], tm_load(&st.words[0]) + 1);
    if (child) child(&st);
    if (st.outer_runs < st.outer_restarts + 1) tm_restart();
  }
}

static int flat;

static void test_portable_in_fast(void) {
  /* The portable child restarts twice (only the child under closed nesting). */
  reset(0, 0, 0);
  TM_ATOMIC {
    st.inner_runs++;
    tm_store(&st.words[1], tm_load(&st.words[1]) + 1);
    entry_portable_block(NULL, &st); /* outer_runs counts the portable block's runs */
  }
  CHECK(st.inner_runs == 1 && st.outer_runs == 1);
  CHECK(st.words[0] == 1 && st.words[1] == 1);

  reset(2, 0, 0); /* the portable block (here the child) restarts twice */
  TM_ATOMIC {
    st.inner_runs++;
    tm_store(&st.words[1], tm_load(&st.words[1]) + 1);
    entry_portable_block(NULL, &st);
  }
  CHECK(st.outer_runs == 3);
  CHECKF(st.inner_runs == (flat ? 3 : 1), "fast parent ran %d times", st.inner_runs);
  CHECK(st.words[0] == 1 && st.words[1] == 1);
}

static void test_fast_in_portable(void) {
  reset(0, 2, 0); /* the fast child restarts twice */
  entry_portable_block(fast_child, &st);
  CHECK(st.inner_runs == 3);
  CHECKF(st.outer_runs == (flat ? 3 : 1), "portable parent ran %d times", st.outer_runs);
  CHECK(st.words[0] == 1 && st.words[1] == 1);

  reset(1, 0, 1); /* the fast child cancels itself; the portable parent restarts once */
  entry_portable_block(fast_child, &st);
  CHECK(st.inner_after_abort == 0);
  if (flat) { /* the cancel ends the whole transaction at the first run */
    CHECK(st.outer_runs == 1 && st.inner_runs == 1);
    CHECK(st.words[0] == 0 && st.words[1] == 0);
  } else {
    CHECK(st.outer_runs == 2 && st.inner_runs == 2);
    CHECK(st.words[0] == 1 && st.words[1] == 0);
  }
}

static void test_fast_in_fast(void) {
  reset(2, 1, 0); /* the outer block restarts twice, the inner one once (its first run) */
  fast_block(fast_child);
  CHECKF(st.outer_runs == 3, "outer ran %d times", st.outer_runs);
  /* closed: the child's restart re-runs the child only; flat: the whole block */
  CHECKF(st.inner_runs == (flat ? 3 : 4), "inner ran %d times", st.inner_runs);
  CHECK(st.words[0] == 1 && st.words[1] == 1);
}

/* Restart from deep inside a call chain: the block's function still has its arguments and
 * unmodified locals (callee-saved registers and frame restored). */
static TM_TEST_TX unsigned deep(unsigned n, volatile int *runs) {
  volatile char pad[256]; /* each level takes stack */
  pad[0] = (char)n;
  if (n == 0) {
    if (*runs < 3) tm_restart();
    return pad[0];
  }
  return deep(n - 1, runs) + pad[0];
}

static TM_TEST_TX uint64_t registers_kept(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                                          uint64_t e, uint64_t f) {
  uint64_t k1 = a * 3 + f, k2 = b ^ e, k3 = c + d * 7; /* live across the block */
  volatile int runs = 0;
  volatile unsigned got = 0;
  TM_ATOMIC {
    runs++;
    tm_store(&st.words[2], tm_load(&st.words[2]) + 1);
    got = deep(64, &runs);
  }
  CHECK(runs == 3);
  CHECK(got == 64 * 65 / 2);
  return k1 + k2 + k3 + a + b + c + d + e + f;
}

static void test_registers_and_stack(void) {
  reset(0, 0, 0);
  uint64_t a = 11, b = 222, c = 3333, d = 44444, e = 555555, f = 6666666;
  uint64_t expect = (a * 3 + f) + (b ^ e) + (c + d * 7) + a + b + c + d + e + f;
  CHECK(registers_kept(a, b, c, d, e, f) == expect);
  CHECK(st.words[2] == 1);
}

static TM_TEST_TX int cancel_top(void) {
  volatile int after = 0;
  TM_ATOMIC {
    tm_store(&st.words[3], (uint64_t)7);
    tm_abort();
    after = 1;
  }
  return after;
}

/* `continue` in a block ends it and commits (tm.h): the store before it stays, the code
 * after it does not run, the block does not run again, after restarts too. */
static TM_TEST_TX int continue_block(int restarts) {
  volatile int runs = 0, after = 0;
  TM_ATOMIC {
    runs++;
    tm_store(&st.words[3], tm_load(&st.words[3]) + 1);
    if (runs <= restarts) tm_restart();
    if (runs > 0) continue;
    after = 1;
  }
  return runs * 10 + after;
}

static void test_continue_commits(void) {
  reset(0, 0, 0);
  CHECK(continue_block(0) == 10);
  CHECK(st.words[3] == 1 && tm_depth() == 0);
  CHECK(continue_block(2) == 30);
  CHECK(st.words[3] == 2 && tm_depth() == 0);
}

static void test_cancel_top_and_stats(void) {
  reset(0, 0, 0);
  tm_stats_reset();
  CHECK(cancel_top() == 0);
  CHECK(tm_depth() == 0 && st.words[3] == 0);
  fast_block(NULL); /* a fresh block after the cancel: one run, commits */
  CHECK(st.outer_runs == 1 && st.words[0] == 1);
  reset(2, 0, 0);
  fast_block(NULL);
  reset(2, 0, 0);
  entry_portable_block(NULL, &st);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("entry", &s);
  /* 1 cancel + 2 restarts of the fast block + 2 of the portable one */
  CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == 5);
  CHECK(s.commits == 3);
  CHECK(s.retry_histogram[0] == 1 && s.retry_histogram[2] == 2);
  CHECK(s.max_consecutive_aborts == 2);
}

int main(void) {
  tm_test_watchdog(60);
  tm_test_print_config("entry");
#ifdef TM_FAST_ENTRY_
  fprintf(stderr, "entry: fast entry in test_entry.c\n");
#else
  fprintf(stderr, "entry: portable entry in both files\n");
#endif
  flat = tm_test_option_is("nesting", "flat");
  test_portable_in_fast();
  test_fast_in_portable();
  test_fast_in_fast();
  test_registers_and_stack();
  test_continue_commits();
  test_cancel_top_and_stats();
  CHECK(tm_depth() == 0);
  return check_exit();
}
