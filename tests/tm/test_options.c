/* The TM options: every documented option exists in the "tm" layer; bad values are
 * rejected with a message naming the option and what is valid (from code, and from the
 * environment, where the default is kept with a warning); an option set through
 * txalloc_option_set before the first transaction takes effect (tm=lock: a transaction
 * never runs while another holds the lock, and nothing aborts).
 * The program runs itself as a child for the parts that need a fresh process:
 *   test_tm_options child-lock   sets tm=lock, then runs the two-thread check
 *   test_tm_options child-env    prints the cm option (the environment gives a bad one) */
#include <limits.h>

#include "tm_test.h"

static const char *const tm_option_names[] = {"tm",       "design", "cm",      "shift",
                                              "ort_log2", "hash",   "nesting", "irrevocable_after"};

static void expect_rejected(const char *name, const char *value, const char *must_mention) {
  char err[2048] = "";
  char before[64];
  snprintf(before, sizeof before, "%s", tm_test_option(name));
  int rc = txalloc_option_set(name, value, err, sizeof err);
  CHECKF(rc == -1, "%s=%s accepted", name, value);
  CHECKF(strstr(err, name) != NULL, "%s=%s: message does not name the option: %s", name, value,
         err);
  if (must_mention)
    CHECKF(strstr(err, must_mention) != NULL, "%s=%s: message does not mention %s: %s", name, value,
           must_mention, err);
  CHECKF(strcmp(tm_test_option(name), before) == 0, "%s changed by a rejected value", name);
}

static void test_table(void) {
  for (size_t i = 0; i < sizeof tm_option_names / sizeof tm_option_names[0]; i++) {
    int index = txalloc_option_find(tm_option_names[i]);
    CHECKF(index >= 0, "option %s missing", tm_option_names[i]);
    if (index < 0) continue;
    const txalloc_option_info *o = txalloc_option_at((size_t)index);
    CHECKF(strcmp(o->layer, "tm") == 0, "%s: layer %s", o->name, o->layer);
  }
  CHECK(tm_test_option_is("tm", "stm"));
  CHECK(tm_test_option_is("design", "etl-wb"));
  CHECK(tm_test_option_is("cm", "suicide"));
  CHECK(tm_test_option_is("shift", "5"));
  CHECK(tm_test_option_is("ort_log2", "20"));
  CHECK(tm_test_option_is("hash", "shift-mask"));
  CHECK(tm_test_option_is("nesting", "closed"));
  CHECK(tm_test_option_is("irrevocable_after", "0"));
  /* The values the tests and benches use are accepted. */
  char err[1024];
  static const char *const good[][2] = {{"tm", "stm"},
                                        {"design", "etl-wt"},
                                        {"design", "ctl-wb"},
                                        {"design", "etl-wb"},
                                        {"cm", "backoff"},
                                        {"cm", "wait"},
                                        {"cm", "suicide"},
                                        {"cm", "kill"},
                                        {"hash", "mix"},
                                        {"hash", "shift-mask"},
                                        {"nesting", "flat"},
                                        {"nesting", "closed"},
                                        {"shift", "3"},
                                        {"shift", "4"},
                                        {"shift", "5"},
                                        {"ort_log2", "10"},
                                        {"ort_log2", "20"},
                                        {"irrevocable_after", "4"},
                                        {"irrevocable_after", "0"}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    CHECKF(txalloc_option_set(good[i][0], good[i][1], err, sizeof err) == 0, "%s=%s: %s",
           good[i][0], good[i][1], err);
}

static void test_bad_values(void) {
  expect_rejected("tm", "htm-magic", "stm");
  expect_rejected("design", "etl", "etl-wb");
  expect_rejected("design", "", "ctl-wb");
  expect_rejected("cm", "polite", "suicide");
  expect_rejected("hash", "crc", "shift-mask");
  expect_rejected("nesting", "open", "closed");
  expect_rejected("shift", "1", NULL);
  expect_rejected("shift", "64", NULL);
  expect_rejected("shift", "five", NULL);
  expect_rejected("ort_log2", "0", NULL);
  expect_rejected("ort_log2", "99", NULL);
  expect_rejected("irrevocable_after", "-1", NULL);
}

/* Runs this program again with `args` (and an environment prefix); returns its exit status
 * and its output (stdout and stderr) in out. */
static int run_self(const char *env, const char *args, char *out, size_t len) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = 0;
  char cmd[PATH_MAX + 256];
  snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env, self, args);
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  size_t got = fread(out, 1, len - 1, f);
  out[got] = 0;
  int status = pclose(f);
  fprintf(stderr, "--- %s %s: status %d\n%s---\n", env, args, status, out);
  return status;
}

/* ---- child-lock ---- */
static _Alignas(64) uint64_t x;
static int a_inside, a_body_done, b_started, b_first_saw_a_done = -1;
static void lock_pair(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    TM_ATOMIC {
      tm_store(&x, (uint64_t)1);
      flag_set(&a_inside, 1);
      flag_wait_ge(&b_started, 1);
      yield_for(300); /* B would run its body now if it could */
      flag_set(&a_body_done, 1);
    }
  } else {
    flag_wait_ge(&a_inside, 1);
    flag_set(&b_started, 1);
    volatile int attempt = 0;
    TM_ATOMIC {
      if (++attempt == 1) b_first_saw_a_done = flag_get(&a_body_done);
      CHECK(tm_load(&x) == 1);
    }
  }
}

static int child_lock(void) {
  test_set_option("tm", "lock");
  tm_test_run_threads(2, lock_pair, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("child-lock", &s);
  CHECKF(b_first_saw_a_done == 1, "under tm=lock a transaction ran inside another");
  CHECK(s.aborts == 0 && s.commits == 2);
  return check_exit();
}

int main(int argc, char **argv) {
  tm_test_watchdog(120);
  if (argc > 1 && strcmp(argv[1], "child-lock") == 0) return child_lock();
  if (argc > 1 && strcmp(argv[1], "child-env") == 0) {
    TM_ATOMIC {}
    printf("cm=%s\n", tm_test_option("cm"));
    return 0;
  }
  char out[16384];
  int status = run_self("TXALLOC_CM=nonsense", "child-env", out, sizeof out);
  CHECK(status == 0);
  CHECKF(strstr(out, "nonsense") && strstr(out, "suicide"), "no warning about TXALLOC_CM");
  CHECKF(strstr(out, "cm=suicide\n") != NULL, "the default is kept");

  status = run_self("", "child-lock", out, sizeof out);
  CHECKF(status == 0, "child-lock failed");

  test_table();
  test_bad_values();
  return check_exit();
}
