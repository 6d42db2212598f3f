/* The tests' helper: CHECK records a failure and goes on; check_exit() ends the test with
 * a summary line and the exit status ctest reads. Each test is one program. */
#ifndef TXALLOC_TESTS_CHECK_H
#define TXALLOC_TESTS_CHECK_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    check_count++;                                                                                 \
    if (!(cond)) {                                                                                 \
      check_failures++;                                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

/* CHECK with a printf-style explanation of the values involved. */
#define CHECKF(cond, ...)                                                                          \
  do {                                                                                             \
    check_count++;                                                                                 \
    if (!(cond)) {                                                                                 \
      check_failures++;                                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);                     \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
    }                                                                                              \
  } while (0)

/* Work multiplier for iteration counts: TXALLOC_TEST_SCALE (default 1.0). The sanitizer
 * runs of `make test` set it below 1 because instrumented code is 5-20x slower; a test
 * must stay meaningful (the race still provoked) at 0.1. */
static inline double check_scale(void) {
  const char *s = getenv("TXALLOC_TEST_SCALE");
  double v = s ? atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

/* n scaled, at least `floor`. */
static inline long check_scaled(long n, long floor) {
  long v = (long)((double)n * check_scale());
  return v < floor ? floor : v;
}

/* Waits for child `pid`: true when it exited with status 0; otherwise prints, after
 * `label`, how it ended (its exit status, or the signal that killed it: SIGALRM is a test's
 * watchdog, i.e. a deadlock). */
static inline bool check_wait_child(pid_t pid, const char *label) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (WIFSIGNALED(status))
    fprintf(stderr, "%s: child killed by signal %d%s\n", label, WTERMSIG(status),
            WTERMSIG(status) == SIGALRM ? " (deadlock?)" : "");
  else
    fprintf(stderr, "%s: child exited %d\n", label, WEXITSTATUS(status));
  return false;
}

static inline int check_exit(void) {
  fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
  return check_failures ? 1 : 0;
}

#endif
