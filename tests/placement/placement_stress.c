/* placement_stress.c: the tracer under races, for python/tests/test_placement_trace.py.
 * WAVES waves of THREADS threads (so exited threads' buffers are handed to new ones); each
 * thread makes PAIRS allocations of STRESS_SIZE bytes and frees each one, half of them in
 * a neighbour's slot array (cross-thread frees, addresses reused by other threads), and
 * leaves KEEP objects of KEEP_SIZE bytes live to the end. A forked child allocates and
 * exits without exec: it must add nothing to any trace. Every count is fixed, so the
 * trace's are known exactly. No stdio. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAVES 3
#define THREADS 4
#define PAIRS 5000
#define KEEP 10
#define STRESS_SIZE 24
#define KEEP_SIZE 777
#define SLOTS 64

static _Atomic(void *) slots[THREADS][SLOTS];

static void *worker(void *arg) {
  int me = (int)(long)arg, next = (me + 1) % THREADS;
  for (int i = 0; i < PAIRS; i++) {
    void *p = malloc(STRESS_SIZE);
    if (!p) abort();
    if (i % 2) {
      free(p);
      continue;
    }
    /* hand p to the neighbour's slot; free whatever was there */
    void *old = atomic_exchange(&slots[next][i % SLOTS], p);
    free(old);
  }
  for (int k = 0; k < KEEP; k++)
    if (!malloc(KEEP_SIZE)) abort();
  return NULL;
}

int main(void) {
  for (int w = 0; w < WAVES; w++) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
      if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) abort();
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  }
  for (int i = 0; i < THREADS; i++)
    for (int s = 0; s < SLOTS; s++) free(atomic_exchange(&slots[i][s], NULL));
  pid_t child = fork();
  if (child == 0) {
    for (int i = 0; i < 100; i++) free(malloc(KEEP_SIZE));
    _exit(0);
  }
  int status;
  if (child < 0 || waitpid(child, &status, 0) != child || status != 0) abort();
  return 0;
}
