/* Helpers shared by the transactional-runtime tests (tests/tm/test_*.c).
 *
 * Each test program runs under ONE runtime configuration: the TM options are read at the
 * first transaction, so a configuration (design, contention manager, shift, ...) is chosen
 * by the TXALLOC_* variables that tests/tm/CMakeLists.txt gives each ctest entry. A
 * program asks tm_test_design() / tm_test_cm() what it runs under and checks what that
 * configuration promises.
 *
 * Forced interleavings use flags: plain ints written and read with __atomic builtins
 * (never through tm_load), so a transaction may spin on a flag set by another thread while
 * it holds its own locks. Every wait is bounded by the watchdog (tm_test_watchdog): a
 * runtime that deadlocks or loops forever fails the test instead of hanging ctest. */
#ifndef TXALLOC_TESTS_TM_TEST_H
#define TXALLOC_TESTS_TM_TEST_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "set_option.h"
#include "txalloc/options.h"
#include "txalloc/tm.h"

/* ---- Flags for forced interleavings ---- */
static inline void flag_set(int *flag, int value) {
  __atomic_store_n(flag, value, __ATOMIC_SEQ_CST);
}
static inline int flag_get(const int *flag) { return __atomic_load_n(flag, __ATOMIC_SEQ_CST); }
static inline int flag_add(int *flag, int delta) {
  return __atomic_add_fetch(flag, delta, __ATOMIC_SEQ_CST);
}
/* Spins (yielding: 2 cores run many threads) until *flag >= value. */
static inline void flag_wait_ge(const int *flag, int value) {
  while (flag_get(flag) < value) sched_yield();
}
/* Lets other threads run for a while (used where a test checks that something does NOT
 * happen: a correct runtime passes whatever the schedule; a broken one is caught when the
 * other threads got to run). */
static inline void yield_for(int rounds) {
  for (int i = 0; i < rounds; i++) sched_yield();
}

/* Marks a function that holds one atomic block. A restart jumps back into the block's
 * frame: keeping each block in its own (not inlined) function means the caller's loop
 * variables are never live across that jump (setjmp rules; gcc's -Wclobbered). */
#define TM_TEST_TX __attribute__((noinline))

/* ---- Watchdog: a hang is a failure ---- */
static inline void tm_test_alarm_(int sig) {
  (void)sig;
  static const char msg[] = "watchdog: the test did not finish in time (deadlock or a "
                            "transaction looping forever?)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(3);
}
static inline void tm_test_watchdog(unsigned seconds) {
  signal(SIGALRM, tm_test_alarm_);
  alarm(seconds);
}

/* ---- Options ---- */
/* The option's current value as text, or "" when the option does not exist. */
static inline const char *tm_test_option(const char *name) {
  static __thread char buf[8][64];
  static __thread int next;
  char *out = buf[next++ & 7];
  int index = txalloc_option_find(name);
  out[0] = 0;
  if (index >= 0) txalloc_option_format((size_t)index, out, 64);
  return out;
}
static inline int tm_test_option_is(const char *name, const char *value) {
  return strcmp(tm_test_option(name), value) == 0;
}
static inline int tm_test_is_glock(void) { return tm_test_option_is("tm", "glock"); }
static inline int tm_test_is_htm_emul(void) { return tm_test_option_is("tm", "htm-emul"); }
/* The emulated hardware TM, alone or under lock elision (tle). */
static inline int tm_test_is_htm(void) {
  return tm_test_is_htm_emul() || tm_test_option_is("tm", "tle");
}
/* The word-based STM: the designs, contention managers, snapshots, read-only attempts and
 * abort causes that scenarios written for it force exist only there. */
static inline int tm_test_is_stm(void) { return tm_test_option_is("tm", "stm"); }
/* Encounter-time locking: a store takes the stripe's lock at once. */
static inline int tm_test_is_etl(void) {
  return tm_test_is_stm() && strncmp(tm_test_option("design"), "etl", 3) == 0;
}
static inline void tm_test_print_config(const char *test) {
  fprintf(stderr, "%s: tm=%s design=%s cm=%s shift=%s ort_log2=%s hash=%s nesting=%s\n", test,
          tm_test_option("tm"), tm_test_option("design"), tm_test_option("cm"),
          tm_test_option("shift"), tm_test_option("ort_log2"), tm_test_option("hash"),
          tm_test_option("nesting"));
}

/* ---- Threads ---- */
typedef void (*tm_test_thread_fn)(int index, void *arg);
struct tm_test_thread_ {
  tm_test_thread_fn fn;
  void *arg;
  int index;
  pthread_barrier_t *start;
};
static inline void *tm_test_thread_main_(void *p) {
  struct tm_test_thread_ *t = p;
  pthread_barrier_wait(t->start);
  t->fn(t->index, t->arg);
  return NULL;
}
/* Runs fn(i, arg) for i in [0, n) on n threads released together; returns after all. */
static inline void tm_test_run_threads(int n, tm_test_thread_fn fn, void *arg) {
  pthread_t tid[64];
  struct tm_test_thread_ t[64];
  pthread_barrier_t start;
  if (n > 64) n = 64;
  pthread_barrier_init(&start, NULL, (unsigned)n);
  for (int i = 0; i < n; i++) {
    t[i] = (struct tm_test_thread_){fn, arg, i, &start};
    if (pthread_create(&tid[i], NULL, tm_test_thread_main_, &t[i]) != 0) {
      perror("pthread_create");
      exit(2);
    }
  }
  for (int i = 0; i < n; i++) pthread_join(tid[i], NULL);
  pthread_barrier_destroy(&start);
}

/* ---- Statistics ---- */
static inline uint64_t tm_test_cause(const tm_stats *s, tm_abort_cause cause) {
  return s->aborts_by_cause[cause];
}
static inline void tm_test_print_stats(const char *what, const tm_stats *s) {
  fprintf(stderr, "%s: commits=%llu (ro %llu, irrevocable %llu) aborts=%llu [", what,
          (unsigned long long)s->commits, (unsigned long long)s->commits_read_only,
          (unsigned long long)s->commits_irrevocable, (unsigned long long)s->aborts);
  for (int c = 0; c < TM_ABORT_CAUSE_COUNT; c++)
    if (s->aborts_by_cause[c])
      fprintf(stderr, " %s=%llu", tm_abort_cause_name((tm_abort_cause)c),
              (unsigned long long)s->aborts_by_cause[c]);
  fprintf(stderr, " ] true=%llu false=%llu unknown=%llu\n", (unsigned long long)s->true_conflicts,
          (unsigned long long)s->false_conflicts, (unsigned long long)s->unknown_conflicts);
}
/* The statistics of fn() alone (reset before it), printed under `what` unless NULL. */
static inline tm_stats tm_test_measure(const char *what, void (*fn)(void)) {
  tm_stats_reset();
  fn();
  tm_stats s;
  tm_stats_get(&s);
  if (what) tm_test_print_stats(what, &s);
  return s;
}

#endif
