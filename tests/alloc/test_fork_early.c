/* fork() racing the creation of the first thread heaps and the allocator's slow paths:
 * the child must not find any allocator lock held by a thread that does not exist in it.
 * The fork handlers are therefore registered before any thread may use the allocator
 * (init.c): registered at the first heap creation, a fork racing that creation would
 * deadlock the child on the region lock.
 *
 * Workload: R rounds, each in a fresh process forked from a main process that never calls
 * the allocator, so the process's very first heaps are being created: 8 new threads (more
 * than cores) start and immediately allocate (a small object — a new heap —, a 1 MiB large
 * object, 300 objects of growing size — fresh blocks, region carving), free them and exit,
 * while the process's main thread forks 3 times without waiting for them. Each child (an
 * alarm of 20 s turns a deadlock into SIGALRM) allocates small, medium and large objects,
 * frees them and exits 0. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { T = 8, FORKS_PER_ROUND = 3 };

#ifdef __SANITIZE_THREAD__
/* A child forked while starter threads had finished but were not joined yet inherits them
 * as "leaked" threads; that is this test's design, not a bug. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "report_thread_leaks=0"; }
#endif

static atomic_long bad;

static void *starter(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  void *p[300];
  void *first = txalloc_malloc(16 + id % 64);
  void *big = txalloc_malloc((size_t)1 << 20);
  if (!first || !big) bad++;
  for (int i = 0; i < 300; i++) {
    p[i] = txalloc_malloc(16 + (size_t)i * 40);
    if (!p[i])
      bad++;
    else
      test_fill(p[i], 16, (uint64_t)i);
  }
  for (int i = 0; i < 300; i++) {
    if (p[i] && !test_check(p[i], 16, (uint64_t)i)) bad++;
    if (i % 2) txalloc_free(p[i]);
  }
  txalloc_free(first);
  txalloc_free(big);
  for (int i = 0; i < 300; i += 2) txalloc_free(p[i]);
  return NULL;
}

static int child(void) {
  alarm(20);
  for (int i = 0; i < 200; i++) {
    size_t s = i % 50 == 0 ? ((size_t)2 << 20) : i % 10 == 0 ? 20000 : 24 + (size_t)i;
    void *p = txalloc_malloc(s);
    if (!p) return 1;
    memset(p, i, s < 4096 ? s : 4096);
    txalloc_free(p);
  }
  return 0;
}

/* One round in a fresh process that has never called the allocator: its first heaps are
 * being created by the starting threads while it forks. Returns the failures. */
static int driver(long r) {
  alarm(60);
  int failed = 0;
  pthread_t t[T];
  for (int i = 0; i < T; i++)
    if (pthread_create(&t[i], NULL, starter, (void *)(uintptr_t)(r * T + i)) != 0) return 100;
  for (int f = 0; f < FORKS_PER_ROUND; f++) {
    pid_t pid = fork();
    if (pid == 0) _exit(child());
    if (pid < 0) {
      failed++;
      continue;
    }
    char label[48];
    snprintf(label, sizeof label, "round %ld fork %d", r, f);
    if (!check_wait_child(pid, label)) failed++;
  }
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
  return failed + (bad ? 50 : 0);
}

int main(void) {
  /* The main process never calls the allocator, so every driver starts uninitialised. */
  long rounds = check_scaled(300, 60);
  long failed = 0;
  for (long r = 0; r < rounds; r++) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) _exit(driver(r));
    char label[48];
    snprintf(label, sizeof label, "round %ld: driver", r);
    if (!check_wait_child(pid, label)) failed++;
  }
  CHECKF(failed == 0,
         "%ld of %ld rounds failed (exit: failed children, +50 bad objects; SIGALRM: deadlock)",
         failed, rounds);
  return check_exit();
}
