/* Lifecycle callbacks (tm_register_callbacks): the order of begin/commit/abort events per
 * depth, on the transaction's own thread, for plain, nested, aborted and restarted
 * transactions; commit callbacks at depth 1 see the committed values, abort callbacks see
 * the level's effects undone; on_thread_exit once per thread that used the runtime;
 * two registrations both receive every event. Under nesting=flat only the top level is
 * reported (a flat child cannot be rolled back on its own). */
#include "tm_test.h"

#define LOG_MAX 64

typedef struct event {
  char kind; /* 'b' begin, 'c' commit, 'a' abort, 'x' thread exit */
  unsigned depth;
} event;

static __thread event log_events[LOG_MAX];
static __thread int log_count;
static __thread int second_count;
static int exits_seen, exits_ctx_ok;
static int first_ctx = 1, second_ctx = 2;
static uint64_t observed_x_at_commit, observed_x_at_abort;

static _Alignas(64) uint64_t x;

static void record(char kind, unsigned depth) {
  if (log_count < LOG_MAX) log_events[log_count] = (event){kind, depth};
  log_count++;
}
static int bad_ctx; /* counted, not CHECKed: callbacks run on worker threads too */
static void on_begin(void *ctx, unsigned depth) {
  if (ctx != &first_ctx) flag_add(&bad_ctx, 1);
  record('b', depth);
}
static void on_commit(void *ctx, unsigned depth) {
  (void)ctx;
  record('c', depth);
  if (depth == 1)
    __atomic_store_n(&observed_x_at_commit, __atomic_load_n(&x, __ATOMIC_SEQ_CST),
                     __ATOMIC_SEQ_CST);
}
static void on_abort(void *ctx, unsigned depth) {
  (void)ctx;
  record('a', depth);
  if (depth == 1)
    __atomic_store_n(&observed_x_at_abort, __atomic_load_n(&x, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
}
static void on_exit_thread(void *ctx) {
  flag_add(&exits_seen, 1);
  if (ctx == &first_ctx) flag_add(&exits_ctx_ok, 1);
}
static void second_event(void *ctx, unsigned depth) {
  (void)depth;
  if (ctx == &second_ctx) second_count++;
}

/* Compares the thread's log with `expected`, e.g. "b1 b2 c2 c1". */
static void expect_log(const char *what, const char *expected) {
  char got[LOG_MAX * 4] = "";
  size_t len = 0;
  for (int i = 0; i < log_count && i < LOG_MAX; i++)
    len += (size_t)snprintf(got + len, sizeof got - len, "%s%c%u", i ? " " : "", log_events[i].kind,
                            log_events[i].depth);
  CHECKF(strcmp(got, expected) == 0, "%s: events \"%s\", expected \"%s\"", what, got, expected);
  log_count = 0;
}

static void test_sequences(int flat) {
  log_count = 0;
  TM_ATOMIC { tm_store(&x, (uint64_t)1); }
  expect_log("plain", "b1 c1");
  CHECK(observed_x_at_commit == 1);

  TM_ATOMIC {
    TM_ATOMIC { tm_store(&x, (uint64_t)2); }
  }
  /* Flat nesting reports only the top level: a flat child cannot be rolled back alone. */
  expect_log("nested", flat ? "b1 c1" : "b1 b2 c2 c1");

  TM_ATOMIC {
    tm_store(&x, (uint64_t)3);
    tm_abort();
  }
  expect_log("aborted", "b1 a1");
  CHECK(observed_x_at_abort == 2); /* the store is undone before on_abort */
  CHECK(x == 2);

  volatile int runs = 0;
  TM_ATOMIC {
    if (++runs == 1) tm_restart();
  }
  expect_log("restarted", "b1 a1 b1 c1");

  TM_ATOMIC {
    TM_ATOMIC { tm_abort(); }
    TM_ATOMIC {}
  }
  /* Flat: the child's abort abandons the whole transaction. */
  expect_log("child aborted", flat ? "b1 a1" : "b1 b2 a2 b2 c2 c1");
}

static void thread_with_transaction(int index, void *arg) {
  (void)index;
  (void)arg;
  TM_ATOMIC { tm_store(&x, tm_load(&x) + 1); }
  log_count = 0;
}

int main(void) {
  tm_test_watchdog(60);
  tm_test_print_config("callbacks");
  tm_callbacks first = {on_begin, on_commit, on_abort, on_exit_thread, &first_ctx};
  tm_callbacks second = {second_event, second_event, second_event, NULL, &second_ctx};
  CHECK(tm_register_callbacks(&first) == 0);
  CHECK(tm_register_callbacks(&second) == 0);
  int flat = tm_test_option_is("nesting", "flat");

  test_sequences(flat);
  CHECKF(second_count > 0, "the second registration receives events too");

  /* Four threads, each runs one transaction and exits: four exit callbacks. */
  int before = flag_get(&exits_seen);
  tm_test_run_threads(4, thread_with_transaction, NULL);
  CHECKF(flag_get(&exits_seen) - before == 4, "exit callbacks: %d", flag_get(&exits_seen) - before);
  CHECK(flag_get(&exits_ctx_ok) == flag_get(&exits_seen));
  CHECK(flag_get(&bad_ctx) == 0);
  CHECK(x == 2 + 4);

  /* An explicit exit runs the callback once, not again at the thread's end. */
  before = flag_get(&exits_seen);
  tm_thread_exit();
  CHECK(flag_get(&exits_seen) - before == 1);
  return check_exit();
}
