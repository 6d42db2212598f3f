/* Thread start and exit races: many threads make their first allocation at the same
 * instant (heap creation racing), free each other's objects, and exit at the same instant
 * (heap hand-back racing with remote frees and with the next threads' first allocations).
 *
 * Workload: R rounds of 16 threads (more threads than cores). In each round all 16 wait
 * on a barrier, then each immediately allocates 64 objects (16..2048 B, seed = round*16+i)
 * with patterns and publishes them; a second barrier; each thread then frees the objects
 * of its neighbour i+1 (remote frees into a heap whose owner is running), allocates a few
 * more that it leaves live for the next round, calls txalloc_thread_exit() once and
 * allocates again (re-initialising its heap), and all exit together at a third barrier.
 * The next round's threads free the previous round's leftovers (blocks abandoned a moment
 * ago) while making their own first allocations. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { T = 16, FIRST = 64, LEFT = 8 };

typedef struct obj {
  void *p;
  size_t size;
  uint64_t tag;
} obj;

static obj first[T][FIRST];
static obj leftover[2][T][LEFT];
static pthread_barrier_t b1, b2, b3;
static atomic_long bad;

typedef struct arg {
  int round, i;
} arg;

static void alloc_obj(obj *o, size_t size, uint64_t tag) {
  void *p = txalloc_malloc(size);
  if (!p)
    bad++;
  else
    test_fill(p, size, tag);
  *o = (obj){p, size, tag};
}

static void free_obj(obj *o) {
  if (!o->p) return;
  if (!test_check(o->p, o->size, o->tag)) bad++;
  txalloc_free(o->p);
  o->p = NULL;
}

static void *run(void *varg) {
  arg a = *(arg *)varg;
  test_rng rng = {(uint64_t)a.round * T + (uint64_t)a.i};
  uint64_t base = ((uint64_t)a.round << 32) | ((uint64_t)a.i << 20);
  pthread_barrier_wait(&b1);
  for (int k = 0; k < FIRST; k++)
    alloc_obj(&first[a.i][k], 16 + (size_t)test_rng_below(&rng, 2033), base + (uint64_t)k);
  /* The previous round's leftovers of this index: their thread exited just now. */
  for (int k = 0; k < LEFT; k++) free_obj(&leftover[(a.round + 1) % 2][a.i][k]);
  pthread_barrier_wait(&b2);
  for (int k = 0; k < FIRST; k++) free_obj(&first[(a.i + 1) % T][k]);
  for (int k = 0; k < LEFT / 2; k++)
    alloc_obj(&leftover[a.round % 2][a.i][k], 16 + (size_t)test_rng_below(&rng, 500),
              base + 1000 + (uint64_t)k);
  txalloc_thread_exit();
  for (int k = LEFT / 2; k < LEFT; k++)
    alloc_obj(&leftover[a.round % 2][a.i][k], 16 + (size_t)test_rng_below(&rng, 500),
              base + 1000 + (uint64_t)k);
  pthread_barrier_wait(&b3);
  return NULL;
}

int main(void) {
  long rounds = check_scaled(400, 40);
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  pthread_barrier_init(&b1, NULL, T);
  pthread_barrier_init(&b2, NULL, T);
  pthread_barrier_init(&b3, NULL, T);
  static arg args[T];
  for (long r = 0; r < rounds; r++) {
    for (int i = 0; i < T; i++) args[i] = (arg){(int)r, i};
    test_run_threads(T, run, args, sizeof args[0]);
  }
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < T; i++)
      for (int k = 0; k < LEFT; k++) free_obj(&leftover[g][i][k]);
  txalloc_stats_get(&after);
  CHECKF(bad == 0, "%ld objects corrupted or not allocated", (long)bad);
  CHECKF(after.live_bytes == before.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  CHECKF(after.mallocs - before.mallocs == after.frees - before.frees, "mallocs +%llu, frees +%llu",
         (unsigned long long)(after.mallocs - before.mallocs),
         (unsigned long long)(after.frees - before.frees));
  return check_exit();
}
