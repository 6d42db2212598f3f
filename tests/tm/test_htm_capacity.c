/* htm-emul's capacity boundary, single thread, exactly (docs/htm.md, "Capacity"). The
 * expectations come from the geometry options in force (ctest runs the defaults and a
 * second geometry):
 *   - the write set lives in the simulated L1: `ways` written lines in one L1 set commit,
 *     one more aborts with cause capacity; lines spread over every set commit up to
 *     sets x ways, one more aborts;
 *   - the read set is bounded by the larger structure, not by L1: more reads than L1 ways in
 *     one L1 set commit; read_ways lines in one read set commit, one more aborts; lines spread
 *     over every read set commit up to read_sets x read_ways, one more aborts;
 *   - written lines do not use read ways: a full read set and a full L1 set of writes commit
 *     together;
 *   - a capacity abort inside a nested block aborts the whole transaction (RTM flattens),
 *     with the status bits capacity and nested;
 * and after each capacity abort the block completes on the fallback, irrevocably, at once. */
#include "tm_test.h"

static size_t line, l1_sets, l1_ways, read_sets, read_ways;
static uint64_t *area; /* aligned to one round of the read structure's sets */

static size_t opt(const char *name) { return (size_t)strtoul(tm_test_option(name), NULL, 10); }

/* The block: n lines at `stride` bytes from the area's start, written (a store of each) or
 * read (a load of each); with `extra_writes`, that many lines of one L1 set besides, from
 * the area's second half. */
static size_t n_lines, stride, extra_writes;
static int writing;
static volatile int runs;
static volatile uint64_t sum;

static uint64_t *line_at(size_t i, size_t step) {
  return (uint64_t *)(void *)((char *)area + i * step);
}

static TM_TEST_TX void block(void) {
  runs = 0;
  TM_ATOMIC {
    runs++;
    uint64_t s = 0;
    for (size_t i = 0; i < n_lines; i++) {
      uint64_t *p = line_at(i, stride);
      if (writing)
        tm_store(p, (uint64_t)i + 1);
      else
        s += tm_load(p);
    }
    for (size_t i = 0; i < extra_writes; i++)
      tm_store((uint64_t *)(void *)((char *)area + 2 * read_sets * read_ways * line +
                                    i * l1_sets * line),
               (uint64_t)7);
    sum = s;
  }
}

/* Runs the block over n lines at `step`; it must commit without an abort (fits) or after
 * exactly one capacity abort, on the fallback. */
static void expect(const char *what, size_t n, size_t step, int write, int fits) {
  n_lines = n;
  stride = step;
  writing = write;
  for (size_t i = 0; i < n; i++) *line_at(i, step) = 0;
  tm_stats s = tm_test_measure(NULL, block);
  fprintf(stderr, "%s: %zu lines, stride %zu: %s\n", what, n, step,
          s.aborts ? "capacity abort" : "commits");
  if (fits) {
    CHECKF(s.aborts == 0 && runs == 1, "%s: %zu lines aborted %llu times", what, n,
           (unsigned long long)s.aborts);
    CHECK(s.commits_irrevocable == 0);
  } else {
    CHECKF(s.aborts == 1 && tm_test_cause(&s, TM_ABORT_CAPACITY) == 1,
           "%s: %zu lines: %llu aborts, %llu for capacity", what, n, (unsigned long long)s.aborts,
           (unsigned long long)tm_test_cause(&s, TM_ABORT_CAPACITY));
    CHECK(tm_last_abort_status() == TM_XABORT_CAPACITY);
    CHECK(runs == 2 && s.commits_irrevocable == 1);
  }
  CHECK(s.commits == 1);
  if (write)
    for (size_t i = 0; i < n; i++) CHECK(*line_at(i, step) == (uint64_t)i + 1);
}

static void test_write_set(void) {
  size_t set_stride = l1_sets * line; /* the next line of the same L1 set */
  expect("writes in one L1 set", l1_ways, set_stride, 1, 1);
  expect("writes in one L1 set", l1_ways + 1, set_stride, 1, 0);
  expect("writes over every L1 set", l1_sets * l1_ways, line, 1, 1);
  expect("writes over every L1 set", l1_sets * l1_ways + 1, line, 1, 0);
  /* Two stores to each line are still one line each. */
  expect("writes over every L1 set, two per line", l1_sets * l1_ways * 2, line / 2, 1, 1);
}

static void test_read_set(void) {
  expect("reads in one L1 set", l1_ways + 1, l1_sets * line, 0, 1);
  expect("reads in one read set", read_ways, read_sets * line, 0, 1);
  expect("reads in one read set", read_ways + 1, read_sets * line, 0, 0);
  expect("reads over every read set", read_sets * read_ways, line, 0, 1);
  expect("reads over every read set", read_sets * read_ways + 1, line, 0, 0);
  extra_writes = l1_ways;
  expect("a full read set and a full L1 set of writes", read_sets * read_ways, line, 0, 1);
  extra_writes = 0;
}

/* ---- a capacity abort in a child restarts the top level ---- */
static volatile int top_runs, child_runs;
static unsigned child_status;

static TM_TEST_TX void nested_overflow(void) {
  top_runs = child_runs = 0;
  TM_ATOMIC {
    top_runs++;
    for (size_t i = 0; i < l1_ways; i++) tm_store(line_at(i, l1_sets * line), (uint64_t)1);
    TM_ATOMIC {
      child_runs++;
      tm_store(line_at(l1_ways, l1_sets * line), (uint64_t)2);
    }
  }
}

static void test_nested(void) {
  tm_stats s = tm_test_measure("nested", nested_overflow);
  child_status = tm_last_abort_status();
  CHECK(top_runs == 2 && child_runs == 2);
  CHECK(s.aborts == 1 && tm_test_cause(&s, TM_ABORT_CAPACITY) == 1 && s.commits_irrevocable == 1);
  CHECKF(child_status == (TM_XABORT_CAPACITY | TM_XABORT_NESTED), "status %#x", child_status);
  CHECK(*line_at(l1_ways, l1_sets * line) == 2);
}

int main(void) {
  tm_test_watchdog(120);
  tm_test_print_config("htm_capacity");
  line = opt("htm_line");
  l1_sets = opt("htm_l1_sets");
  l1_ways = opt("htm_l1_ways");
  read_sets = opt("htm_read_sets");
  read_ways = opt("htm_read_ways");
  fprintf(stderr, "line %zu, L1 %zu x %zu, read set %zu x %zu\n", line, l1_sets, l1_ways, read_sets,
          read_ways);
  /* Room for the widest pattern (read_ways + 1 rounds of the read sets, or twice the read
   * set's lines) and the extra writes after it. */
  size_t round = read_sets * line;
  size_t bytes = 4 * (read_ways + 2) * round;
  area = aligned_alloc(round, bytes);
  CHECK(area != NULL);
  memset(area, 0, bytes);
  test_write_set();
  test_read_set();
  test_nested();
  free(area);
  return check_exit();
}
