/* Nesting semantics and tm_depth.
 * Closed nesting (default): a child's tm_abort undoes only the child (the parent goes on
 * after the child's block, with its own stores intact, the same word included); a parent's
 * abort discards the committed child's work too; tm_restart of a child re-runs only the
 * child; a child sees its parent's stores and the parent sees a committed child's.
 * Flat nesting (nesting=flat): a child is part of its parent: tm_abort or tm_restart in
 * the child acts on the whole (outermost) transaction.
 * Every design; write-through must undo a child from its undo log without touching the
 * parent's values, write-back must drop the child's part of the write set. */
#include "tm_test.h"

static struct {
  _Alignas(64) uint64_t x;
  _Alignas(64) uint64_t y;
  _Alignas(64) uint64_t z;
  _Alignas(64) uint8_t bytes[8];
} m;

static void reset(void) {
  m.x = 100;
  m.y = 200;
  m.z = 300;
  memset(m.bytes, 0, sizeof m.bytes);
}

static void test_depth(void) {
  CHECK(tm_depth() == 0 && !tm_in_transaction());
  volatile unsigned d1 = 0, d2 = 0, d3 = 0, after_child = 0;
  TM_ATOMIC {
    d1 = tm_depth();
    TM_ATOMIC {
      d2 = tm_depth();
      TM_ATOMIC { d3 = tm_depth(); }
    }
    after_child = tm_depth();
  }
  CHECK(d1 == 1 && d2 == 2 && d3 == 3 && after_child == 1);
  CHECK(tm_depth() == 0 && !tm_in_transaction());
}

static void test_child_sees_parent_and_parent_sees_child(void) {
  reset();
  volatile uint64_t seen_by_child = 0, seen_by_parent = 0;
  TM_ATOMIC {
    tm_store(&m.x, (uint64_t)1);
    TM_ATOMIC {
      seen_by_child = tm_load(&m.x);
      tm_store(&m.y, (uint64_t)2);
    }
    seen_by_parent = tm_load(&m.y);
  }
  CHECK(seen_by_child == 1 && seen_by_parent == 2);
  CHECK(m.x == 1 && m.y == 2);
}

/* Child aborts. Closed: parent continues with its own stores. Flat: the whole block is
 * abandoned. */
static void test_child_abort(int flat) {
  reset();
  volatile int parent_continued = 0, child_after_abort = 0;
  volatile uint64_t x_after = 0, y_after = 0, b_after = 0;
  TM_ATOMIC {
    tm_store(&m.x, (uint64_t)1);
    tm_store(&m.bytes[0], (uint8_t)0x11);
    TM_ATOMIC {
      tm_store(&m.x, (uint64_t)2); /* the parent's word, overwritten by the child */
      tm_store(&m.y, (uint64_t)3);
      tm_store(&m.bytes[0], (uint8_t)0x22);
      tm_store(&m.bytes[1], (uint8_t)0x33);
      tm_abort();
      child_after_abort = 1;
    }
    parent_continued = 1;
    x_after = tm_load(&m.x);
    y_after = tm_load(&m.y);
    b_after = tm_load(&m.bytes[0]) | (uint64_t)tm_load(&m.bytes[1]) << 8;
    tm_store(&m.z, (uint64_t)4);
  }
  CHECK(child_after_abort == 0);
  if (!flat) {
    CHECK(parent_continued == 1);
    CHECKF(x_after == 1 && y_after == 200 && b_after == 0x11,
           "after the child's abort the parent sees x=%llu y=%llu bytes=%#llx",
           (unsigned long long)x_after, (unsigned long long)y_after, (unsigned long long)b_after);
    CHECK(m.x == 1 && m.y == 200 && m.z == 4 && m.bytes[0] == 0x11 && m.bytes[1] == 0);
  } else {
    CHECK(parent_continued == 0);
    CHECK(m.x == 100 && m.y == 200 && m.z == 300 && m.bytes[0] == 0 && m.bytes[1] == 0);
  }
}

/* Parent aborts after a child committed: nothing remains. */
static void test_parent_abort_discards_child(void) {
  reset();
  TM_ATOMIC {
    tm_store(&m.x, (uint64_t)5);
    TM_ATOMIC {
      tm_store(&m.y, (uint64_t)6);
      tm_store(&m.x, (uint64_t)7);
      tm_store(&m.bytes[3], (uint8_t)9);
    }
    tm_abort();
  }
  CHECK(m.x == 100 && m.y == 200 && m.bytes[3] == 0);
}

/* Grandchild commits into child, child aborts: the grandchild's work goes with it. */
static void test_three_levels(int flat) {
  reset();
  volatile int top_continued = 0;
  TM_ATOMIC {
    tm_store(&m.x, (uint64_t)1);
    TM_ATOMIC {
      TM_ATOMIC { tm_store(&m.y, (uint64_t)2); }
      tm_store(&m.z, (uint64_t)3);
      tm_abort();
    }
    top_continued = 1;
  }
  if (!flat) {
    CHECK(top_continued == 1);
    CHECK(m.x == 1 && m.y == 200 && m.z == 300);
  } else {
    CHECK(top_continued == 0);
    CHECK(m.x == 100 && m.y == 200 && m.z == 300);
  }
}

/* tm_restart in a child. Closed: only the child re-runs. Flat: the whole transaction. */
static void test_child_restart(int flat) {
  reset();
  volatile int parent_runs = 0, child_runs = 0;
  TM_ATOMIC {
    parent_runs++;
    tm_store(&m.x, tm_load(&m.x) + 1);
    TM_ATOMIC {
      child_runs++;
      tm_store(&m.y, tm_load(&m.y) + 1);
      if (child_runs < 3) tm_restart();
    }
  }
  CHECK(child_runs == 3);
  CHECK(parent_runs == (flat ? 3 : 1));
  CHECK(m.x == 101 && m.y == 201);
}

/* Stats: a child's tm_abort counts as an explicit abort; commits count top levels. */
static void test_stats(int flat) {
  tm_stats_reset();
  TM_ATOMIC {
    TM_ATOMIC { tm_abort(); }
  }
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("child abort", &s);
  CHECK(tm_test_cause(&s, TM_ABORT_EXPLICIT) == 1);
  CHECK(s.commits == (flat ? 0u : 1u));
}

/* ---- Conflicts inside a child (two threads) ----
 * B's parent reads p_word, its child reads c_word; on the child's first run, A commits a
 * new value of one of them (and of `trigger`), then the child reads `trigger`, newer than
 * B's snapshot: the extension fails. Closed nesting rolls back only as far as the failed
 * read: the child alone when A changed the child's word, the whole transaction when A
 * changed the parent's. Flat nesting always re-runs the whole transaction. */
static struct {
  _Alignas(64) uint64_t p_word;
  _Alignas(64) uint64_t c_word;
  _Alignas(64) uint64_t trigger;
  _Alignas(64) uint64_t out;
  _Alignas(64) uint64_t p_out; /* written by the parent, overwritten by the child */
} cm_;
static volatile uint64_t child_saw;
static int b_in_child, a_done;
static volatile int parent_runs, child_runs;
static volatile uint64_t *conflict_word;

static TM_TEST_TX void b_nested(void) {
  TM_ATOMIC {
    parent_runs++;
    /* Read in the child after the child's restart point: volatile, as tm.h asks of locals
     * live across a block's entry (gcc's -Wclobbered cannot tell it is never modified). */
    volatile uint64_t p = tm_load(&cm_.p_word);
    tm_store(&cm_.p_out, p + 100);
    TM_ATOMIC {
      int run = ++child_runs;
      child_saw = tm_load(&cm_.p_out); /* the parent's value, never the failed run's */
      tm_store(&cm_.p_out, (uint64_t)999);
      uint64_t c = tm_load(&cm_.c_word);
      if (run == 1) {
        flag_set(&b_in_child, 1);
        flag_wait_ge(&a_done, 1);
      }
      uint64_t t = tm_load(&cm_.trigger);
      tm_store(&cm_.out, p + c + t);
    }
  }
}

static TM_TEST_TX void a_commit_conflict(void) {
  TM_ATOMIC {
    tm_store(conflict_word, tm_load(conflict_word) + 10);
    tm_store(&cm_.trigger, tm_load(&cm_.trigger) + 1);
  }
}

static void nested_conflict_pair(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    flag_wait_ge(&b_in_child, 1);
    a_commit_conflict();
    flag_set(&a_done, 1);
  } else {
    b_nested();
  }
}

static void test_child_conflict(int flat, int in_parent) {
  memset(&cm_, 0, sizeof cm_);
  b_in_child = a_done = 0;
  parent_runs = child_runs = 0;
  conflict_word = in_parent ? &cm_.p_word : &cm_.c_word;
  tm_stats_reset();
  tm_test_run_threads(2, nested_conflict_pair, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats(in_parent ? "conflict on the parent's read" : "conflict on the child's read",
                      &s);
  CHECK(cm_.out == 10 + 1);
  CHECK(cm_.p_out == 999);
  CHECKF(child_saw == (in_parent ? 110u : 100u), "the child's retry saw %llu",
         (unsigned long long)child_saw);
  CHECK(child_runs == 2);
  CHECKF(parent_runs == (flat || in_parent ? 2 : 1), "parent ran %d times", parent_runs);
  CHECK(s.aborts == 1 && tm_test_cause(&s, TM_ABORT_VALIDATE_READ) == 1);
  CHECK(s.commits == 2);
}

int main(void) {
  tm_test_watchdog(60);
  tm_test_print_config("nesting");
  tm_thread_init();
  int flat = tm_test_option_is("nesting", "flat");
  test_depth();
  test_child_sees_parent_and_parent_sees_child();
  test_child_abort(flat);
  test_parent_abort_discards_child();
  test_three_levels(flat);
  test_child_restart(flat);
  test_stats(flat);
  if (tm_test_is_stm()) {
    test_child_conflict(flat, 0);
    test_child_conflict(flat, 1);
  }
  return check_exit();
}
