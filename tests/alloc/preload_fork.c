/* fork() from a multithreaded process whose malloc is libtxalloc.so (LD_PRELOAD): the
 * child must be able to use malloc and libc (stdio, strdup, qsort), start a thread and
 * exit 0; the parent's threads keep allocating through it all.
 *
 * Workload: 4 threads malloc/free random sizes (1 B .. 512 KiB, seed = thread id) and
 * pass objects to each other through a mutex-protected exchange (remote frees) while the
 * main thread forks 100 times. Each child (alarm of 30 s against deadlocks) frees the
 * exchange's objects, allocates and checks 2000 objects, formats text with snprintf and
 * strdup, sorts an array with qsort, runs a thread that allocates, and exits 0. Every
 * fifth child instead execs /bin/sh -c 'exit 0' (the preloaded library initialises again
 * in the new image). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

enum { WORKERS = 4, EXCHANGE = 32, FORKS = 100 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *exchange[EXCHANGE];
static atomic_int stop;

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *worker(void *arg) {
  uint64_t rng = (uint64_t)(intptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
  unsigned char *mine[16] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    int k = (int)(next(&rng) % 16);
    if (mine[k]) {
      int e = (int)(next(&rng) % EXCHANGE);
      pthread_mutex_lock(&lock);
      unsigned char *other = exchange[e];
      exchange[e] = mine[k];
      pthread_mutex_unlock(&lock);
      free(other);
      mine[k] = NULL;
    } else {
      size_t size = next(&rng) % 64 == 0 ? (size_t)(next(&rng) % (512 << 10)) + 1
                                         : (size_t)(next(&rng) % 2000) + 1;
      mine[k] = malloc(size);
      if (mine[k]) mine[k][0] = mine[k][size - 1] = 0x5a;
    }
  }
  for (int k = 0; k < 16; k++) free(mine[k]);
  return NULL;
}

static void *child_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) free(malloc((size_t)i * 3 + 1));
  return NULL;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int child(int round) {
  alarm(30);
  if (round % 5 == 4) {
    execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
    return 3;
  }
  for (int e = 0; e < EXCHANGE; e++) {
    if (exchange[e] && exchange[e][0] != 0x5a) return 4;
    free(exchange[e]);
  }
  enum { N = 2000 };
  static char *s[N];
  for (int i = 0; i < N; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "child %d object %d", round, (i * 7919) % N);
    s[i] = strdup(buf);
    if (!s[i]) return 5;
  }
  qsort(s, N, sizeof s[0], cmp);
  for (int i = 1; i < N; i++)
    if (strcmp(s[i - 1], s[i]) > 0) return 6;
  for (int i = 0; i < N; i++) free(s[i]);
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, NULL) != 0) return 7;
  pthread_join(t, NULL);
  printf("%s", ""); /* stdio works */
  return 0;
}

int main(void) {
  pthread_t w[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    if (pthread_create(&w[i], NULL, worker, (void *)(intptr_t)(i + 1)) != 0) return 2;
  int failed = 0;
  for (int f = 0; f < FORKS; f++) {
    pthread_mutex_lock(&lock);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(child(f));
    pthread_mutex_unlock(&lock);
    if (pid < 0) {
      failed++;
      continue;
    }
    char label[32];
    snprintf(label, sizeof label, "fork %d", f);
    if (!check_wait_child(pid, label)) failed++;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < WORKERS; i++) pthread_join(w[i], NULL);
  for (int e = 0; e < EXCHANGE; e++) free(exchange[e]);
  CHECKF(failed == 0, "%d of %d children failed", failed, FORKS);
  return check_exit();
}
