/* Remote frees under both variants (TXALLOC_THRIFTY_RETURN=freer|owner, set by ctest;
 * TXALLOC_THRIFTY_HEAP_MB=4, TXALLOC_THRIFTY_POOL_BYTES=4096).
 *
 * 1. The fragmentation figures on a hand-built sequence: a helper thread's pool of 4096
 *    bytes serves three 128-byte blocks (from its end, so the free front is 3712 bytes);
 *    the main thread frees them one by one. Under freer-returns they land in main's pool
 *    and the helper's pool keeps its front alone; under owner-returns they go back to the
 *    helper, where they coalesce with the front: the shape, the held bytes and the retired
 *    pool's figures are known exactly at each step.
 * 2. Producers and consumers (more threads than cores, started by a barrier, many rounds):
 *    producers allocate patterned objects and hand them to consumers through slots, and
 *    exit while consumers still free what they produced, so pushes race with the close of
 *    the producers' stacks. At the end no object is broken or lost, the pressure is back
 *    to zero and every pool, pending returns included, is back in the heap; under
 *    owner-returns no allocation failed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "thrifty_test_object.h"
#include "txalloc/thrifty.h"

static bool owner_variant;

static thrifty_stats stats(void) {
  thrifty_stats s;
  thrifty_stats_get(&s);
  return s;
}

/* ---- 1. the hand-built sequence ---- */

enum { BLOCK = 128, POOL = 4096, FRONT = POOL - 3 * BLOCK };

static pthread_barrier_t step;
static char *blocks[3];
static thrifty_pool_shape shapes[4];

/* Allocates three blocks, then reads its pool's shape after each free by main, then exits
 * without allocating again: its pending returns are drained by the exit. */
static void *helper(void *arg) {
  (void)arg;
  for (int i = 0; i < 3; i++) blocks[i] = thrifty_malloc(BLOCK - 16);
  thrifty_pool_shape_get(&shapes[0]);
  pthread_barrier_wait(&step); /* blocks[] and shapes[0] are written */
  for (int i = 1; i <= 2; i++) {
    pthread_barrier_wait(&step); /* main freed a block */
    thrifty_pool_shape_get(&shapes[i]);
    pthread_barrier_wait(&step);
  }
  pthread_barrier_wait(&step); /* main freed the last block, which stays pending */
  return NULL;
}

static void check_shape(const thrifty_pool_shape *s, uint64_t free_bytes, uint64_t extents,
                        uint64_t largest, const char *when) {
  CHECKF(s->free_bytes == free_bytes && s->extents == extents && s->largest == largest,
         "%s: free %llu extents %llu largest %llu, expected %llu %llu %llu", when,
         (unsigned long long)s->free_bytes, (unsigned long long)s->extents,
         (unsigned long long)s->largest, (unsigned long long)free_bytes,
         (unsigned long long)extents, (unsigned long long)largest);
}

static void test_hand_built_sequence(void) {
  thrifty_free(thrifty_malloc(1)); /* the heap exists */
  thrifty_thread_exit();           /* and main holds no pool */
  thrifty_stats_reset_peak();
  thrifty_stats s0 = stats();
  CHECK(s0.held_bytes == s0.allocated_bytes && s0.held_peak == s0.held_bytes);

  pthread_barrier_init(&step, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, helper, NULL);
  pthread_barrier_wait(&step);
  thrifty_free(blocks[1]); /* the middle block: touches neither free neighbour */
  pthread_barrier_wait(&step);
  pthread_barrier_wait(&step);
  thrifty_free(blocks[2]); /* the lowest: touches the front (and, when returned, blocks[1]) */
  pthread_barrier_wait(&step);
  pthread_barrier_wait(&step);
  thrifty_stats mid = stats();
  thrifty_free(blocks[0]); /* the highest: pending on the helper's stack until its exit */
  pthread_barrier_wait(&step);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&step);
  thrifty_stats s = stats();

  CHECK(blocks[1] == blocks[0] - BLOCK && blocks[2] == blocks[1] - BLOCK);
  check_shape(&shapes[0], FRONT, 1, FRONT, "after three allocations");
  /* The pool's one fill is all that left the heap while the helper lived (main's frees go
   * to a list of its own without an exchange). */
  CHECKF(mid.held_bytes == s0.held_bytes + POOL && mid.held_peak == s0.held_bytes + POOL,
         "held %llu, peak %llu", (unsigned long long)mid.held_bytes,
         (unsigned long long)mid.held_peak);
  CHECK(s.mallocs - s0.mallocs == 3 && s.pool_fills - s0.pool_fills == 1 &&
        s.refills == s0.refills);
  CHECK(s.remote_frees - s0.remote_frees == 3);
  CHECK(s.retired_pools - s0.retired_pools == 1);
  uint64_t rfree = s.retired_free_bytes - s0.retired_free_bytes;
  uint64_t rext = s.retired_extents - s0.retired_extents;
  uint64_t rlarge = s.retired_largest_bytes - s0.retired_largest_bytes;
  if (owner_variant) {
    check_shape(&shapes[1], FRONT + BLOCK, 2, FRONT, "owner: middle returned");
    check_shape(&shapes[2], FRONT + 2 * BLOCK, 1, FRONT + 2 * BLOCK, "owner: lowest returned");
    CHECK(s.owner_returns - s0.owner_returns == 3);
    /* The exit drained the last return: the whole pool retired in one piece. */
    CHECKF(rfree == POOL && rext == 1 && rlarge == POOL, "retired %llu %llu %llu",
           (unsigned long long)rfree, (unsigned long long)rext, (unsigned long long)rlarge);
    CHECK(s.pool_bytes == 0 && s.heap_free_bytes == s.heap_bytes);
  } else {
    check_shape(&shapes[1], FRONT, 1, FRONT, "freer: middle kept by main");
    check_shape(&shapes[2], FRONT, 1, FRONT, "freer: lowest kept by main");
    CHECK(s.owner_returns == s0.owner_returns);
    CHECKF(rfree == FRONT && rext == 1 && rlarge == FRONT, "retired %llu %llu %llu",
           (unsigned long long)rfree, (unsigned long long)rext, (unsigned long long)rlarge);
    /* Main holds the three blocks, coalesced into one extent of its pool. */
    thrifty_pool_shape mine;
    thrifty_pool_shape_get(&mine);
    check_shape(&mine, 3 * BLOCK, 1, 3 * BLOCK, "freer: main's pool");
    CHECK(s.pool_bytes == 3 * BLOCK);
  }
  CHECK(s.allocated_bytes == s0.allocated_bytes);
  thrifty_thread_exit();
}

/* ---- 2. producers and consumers ---- */

enum { PAIRS = 4, SLOTS = 32, ROUNDS = 4 };

static _Atomic(object *) slots[PAIRS][SLOTS];
static _Atomic int producers_left[PAIRS];
static pthread_barrier_t start;
static _Atomic long broken, failed, produced, consumed;
static long ops;

static void check_and_free(object *o) {
  if (!object_check_and_free(o)) atomic_fetch_add(&broken, 1);
  atomic_fetch_add(&consumed, 1);
}

static void *producer(void *arg) {
  int pair = (int)(intptr_t)arg;
  unsigned seed = (unsigned)pair * 2654435761u + 7;
  pthread_barrier_wait(&start);
  for (long i = 0; i < ops; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t size = sizeof(object) + (seed >> 8) % 500;
    object *o = thrifty_malloc(size);
    if (!o) {
      atomic_fetch_add(&failed, 1);
      continue;
    }
    object_fill(o, size, seed);
    atomic_fetch_add(&produced, 1);
    int k = (int)((seed >> 4) % SLOTS);
    object *expected = NULL;
    while (!atomic_compare_exchange_weak(&slots[pair][k], &expected, o)) { /* slot full */
      expected = NULL;
      k = (k + 1) % SLOTS;
    }
  }
  atomic_fetch_sub(&producers_left[pair], 1);
  return NULL; /* exits while its objects are still being freed */
}

static void *consumer(void *arg) {
  int pair = (int)(intptr_t)arg;
  pthread_barrier_wait(&start);
  for (;;) {
    bool done = atomic_load(&producers_left[pair]) == 0;
    bool found = false;
    for (int k = 0; k < SLOTS; k++) {
      object *o = atomic_exchange(&slots[pair][k], NULL);
      if (o) {
        check_and_free(o);
        found = true;
      }
    }
    if (done && !found) return NULL;
  }
}

static void test_producers_consumers(void) {
  ops = check_scaled(20000, 2000);
  thrifty_stats s0 = stats();
  for (int round = 0; round < ROUNDS; round++) {
    pthread_barrier_init(&start, NULL, 2 * PAIRS);
    pthread_t t[2 * PAIRS];
    for (int i = 0; i < PAIRS; i++) {
      atomic_store(&producers_left[i], 1);
      pthread_create(&t[2 * i], NULL, producer, (void *)(intptr_t)i);
      pthread_create(&t[2 * i + 1], NULL, consumer, (void *)(intptr_t)i);
    }
    for (int i = 0; i < 2 * PAIRS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
  }
  thrifty_stats s = stats();
  CHECKF(atomic_load(&broken) == 0, "%ld objects overlapped", atomic_load(&broken));
  /* Owner-returns bounds the memory out of the heap by the pools and the objects in the
   * slots. Freer-returns lets the consumers' pools, which never allocate and so never
   * refill, gather every object until their exit: the 4 MiB heap runs out (the paper's
   * caveat), and the allocations that failed are only counted. */
  if (owner_variant)
    CHECKF(atomic_load(&failed) == 0, "%ld allocations failed", atomic_load(&failed));
  CHECK(atomic_load(&produced) + atomic_load(&failed) == PAIRS * ROUNDS * ops);
  CHECKF(atomic_load(&produced) == atomic_load(&consumed), "produced %ld, consumed %ld",
         atomic_load(&produced), atomic_load(&consumed));
  CHECK(s.frees - s0.frees == (uint64_t)atomic_load(&consumed));
  CHECK(s.allocated_bytes == s0.allocated_bytes && s.allocated_objects == s0.allocated_objects);
  /* Every thread exited: every pool and every pending return is back in the heap. */
  CHECKF(s.pool_bytes == 0 && s.heap_free_bytes == s.heap_bytes, "pools %llu, heap free %llu",
         (unsigned long long)s.pool_bytes, (unsigned long long)s.heap_free_bytes);
  CHECK(s.remote_frees - s0.remote_frees == (uint64_t)atomic_load(&consumed));
  if (owner_variant)
    CHECK(s.owner_returns > s0.owner_returns);
  else
    CHECK(s.owner_returns == s0.owner_returns);
  fprintf(stderr,
          "%s: %ld objects, %ld failed, refills %llu, owner returns %llu, retired pools %llu\n",
          owner_variant ? "owner" : "freer", atomic_load(&consumed), atomic_load(&failed),
          (unsigned long long)(s.refills - s0.refills),
          (unsigned long long)(s.owner_returns - s0.owner_returns),
          (unsigned long long)(s.retired_pools - s0.retired_pools));
}

int main(void) {
  const char *v = getenv("TXALLOC_THRIFTY_RETURN");
  owner_variant = v && strcmp(v, "owner") == 0;
  test_hand_built_sequence();
  test_producers_consumers();
  return check_exit();
}
