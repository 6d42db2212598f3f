/* Races of the bounded allocator (TXALLOC_THRIFTY_HEAP_MB=4, first pools of 1 KiB): more
 * threads than cores, started together by a barrier, allocate objects of random sizes,
 * fill each with a pattern of its own, and hand half of them to the next thread through a
 * slot, which checks the pattern and frees them (remote frees into its own pool); refills
 * meet each other at the heap lock all along. Each round's threads exit (their pools go
 * back) and new ones start. Overlapping objects show as a broken pattern; lost memory as a
 * pressure or a heap sum that is not back where it started. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "check.h"
#include "thrifty_test_object.h"
#include "txalloc/thrifty.h"

enum { THREADS = 8, SLOTS = 64 };

static _Atomic(object *) slots[THREADS][SLOTS];
static pthread_barrier_t bar;
static _Atomic long broken, failed;
static long ops;

static void check_and_free(object *o) {
  if (!object_check_and_free(o)) atomic_fetch_add(&broken, 1);
}

static void *worker(void *arg) {
  int self = (int)(intptr_t)arg;
  unsigned seed = (unsigned)self * 2654435761u + 1;
  object *mine[SLOTS] = {0};
  pthread_barrier_wait(&bar);
  for (long i = 0; i < ops; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t size = sizeof(object) + (seed >> 8) % 700;
    int k = (int)((seed >> 4) % SLOTS);
    object *o = thrifty_malloc(size);
    if (!o) {
      atomic_fetch_add(&failed, 1);
      continue;
    }
    object_fill(o, size, seed);
    if (i & 1) { /* to the next thread: it frees what it finds there */
      object *old = atomic_exchange(&slots[(self + 1) % THREADS][k], o);
      if (old) check_and_free(old);
    } else {
      if (mine[k]) check_and_free(mine[k]);
      mine[k] = o;
    }
    object *in = atomic_exchange(&slots[self][k], NULL);
    if (in) check_and_free(in);
  }
  for (int k = 0; k < SLOTS; k++)
    if (mine[k]) check_and_free(mine[k]);
  pthread_barrier_wait(&bar); /* every hand-over is done: empty our slots */
  for (int k = 0; k < SLOTS; k++) {
    object *in = atomic_exchange(&slots[self][k], NULL);
    if (in) check_and_free(in);
  }
  return NULL;
}

int main(void) {
  ops = check_scaled(20000, 2000);
  thrifty_free(thrifty_malloc(1)); /* the heap exists; main's pool holds its first fill */
  thrifty_thread_exit();
  thrifty_stats s0;
  thrifty_stats_get(&s0);
  for (int round = 0; round < 3; round++) {
    pthread_barrier_init(&bar, NULL, THREADS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
  }
  thrifty_stats s;
  thrifty_stats_get(&s);
  CHECKF(atomic_load(&broken) == 0, "%ld objects overlapped", atomic_load(&broken));
  CHECKF(atomic_load(&failed) == 0, "%ld allocations failed", atomic_load(&failed));
  CHECK(s.allocated_bytes == s0.allocated_bytes && s.allocated_objects == s0.allocated_objects);
  /* Every thread exited: every pool is back in the heap. */
  CHECKF(s.pool_bytes == 0 && s.heap_free_bytes == s.heap_bytes, "pools %llu, heap free %llu",
         (unsigned long long)s.pool_bytes, (unsigned long long)s.heap_free_bytes);
  CHECK(s.refills > s0.refills && s.remote_frees > s0.remote_frees);
  fprintf(stderr, "refills %llu, remote frees %llu\n", (unsigned long long)(s.refills - s0.refills),
          (unsigned long long)(s.remote_frees - s0.remote_frees));
  return check_exit();
}
