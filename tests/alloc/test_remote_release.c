/* Release of blocks that other threads' frees emptied while their owners are alive
 * (heap.c, "Release of blocks that other threads' frees emptied").
 *
 * Idle owners: OWNERS threads allocate objects of 16..512 B (plus some medium ones) with a
 * pattern each, publish them, and wait on a barrier without touching the allocator. FREERS
 * threads (more threads than cores in all) then free every object, interleaved so that
 * several freers complete blocks of the same heap at once and race for its ring lock. Once
 * they are done, every block of the idle owners except the current block of each bin must
 * be back in the store: blocks_in_use at most one block per (owner, class), and the count of
 * released blocks in the stats. Then the owners allocate again (the released blocks and the
 * bins that lost them must still work) and free locally.
 *
 * Busy owners: the same, but the owners keep allocating and freeing locally (slow paths,
 * repatriation, ring walks) in the same classes while the freers empty their older blocks,
 * for many rounds. Every object's pattern is checked before it is freed: a block released
 * while it still held a live object would be reused and overwrite it. At the end the live
 * bytes are back at their starting value. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { OWNERS = 3, FREERS = 5 };

typedef struct owner_arg {
  int id;
  long count, busy_ops;
  test_obj *objs;
  long bad;
} owner_arg;

typedef struct freer_arg {
  int id;
  owner_arg *owners;
  long bad;
} freer_arg;

static pthread_barrier_t published, freed, done;
static atomic_int freers_running;

static size_t object_size(test_rng *r) {
  return test_rng_below(r, 50) == 0 ? 2048 + test_rng_below(r, 8192) : 16 + test_rng_below(r, 497);
}

static void *owner_main(void *p) {
  owner_arg *a = p;
  test_rng r = {(uint64_t)a->id * 7919 + 1};
  for (long i = 0; i < a->count; i++) {
    size_t n = object_size(&r);
    a->objs[i] = (test_obj){txalloc_malloc(n), n, ((uint64_t)a->id << 40) | (uint64_t)i};
    if (!a->objs[i].p) {
      a->bad++;
      continue;
    }
    test_fill(a->objs[i].p, n, a->objs[i].tag);
  }
  pthread_barrier_wait(&published);
  /* Busy: allocate and free locally while the freers work, in the same classes. */
  test_obj window[64] = {{0}};
  long op = 0;
  while (op < a->busy_ops || (a->busy_ops && atomic_load(&freers_running) > 0)) {
    test_obj *o = &window[test_rng_below(&r, 64)];
    test_obj_free(o, &a->bad);
    size_t n = object_size(&r);
    *o = (test_obj){txalloc_malloc(n), n, ((uint64_t)(a->id + 64) << 40) | (uint64_t)op};
    if (o->p)
      test_fill(o->p, n, o->tag);
    else
      a->bad++;
    op++;
  }
  for (int i = 0; i < 64; i++) test_obj_free(&window[i], &a->bad);
  pthread_barrier_wait(&freed);
  pthread_barrier_wait(&done); /* main has looked at the stats */
  /* The bins keep working after their blocks were taken away. */
  for (long i = 0; i < a->count / 4; i++) {
    size_t n = object_size(&r);
    test_obj o = {txalloc_malloc(n), n, (uint64_t)i};
    if (!o.p) {
      a->bad++;
      continue;
    }
    test_fill(o.p, n, o.tag);
    test_obj_free(&o, &a->bad);
  }
  return NULL;
}

static void *freer_main(void *p) {
  freer_arg *f = p;
  pthread_barrier_wait(&published);
  /* Freer k takes objects k, k + FREERS, ... of every owner, so all freers work on each
   * block of each owner at the same time. */
  for (int o = 0; o < OWNERS; o++) {
    owner_arg *a = &f->owners[(o + f->id) % OWNERS];
    for (long i = f->id; i < a->count; i += FREERS) test_obj_free(&a->objs[i], &f->bad);
  }
  atomic_fetch_sub(&freers_running, 1);
  pthread_barrier_wait(&freed);
  return NULL;
}

static void run(long count, long busy_ops) {
  pthread_t t[OWNERS + FREERS];
  owner_arg owners[OWNERS];
  freer_arg freers[FREERS];
  txalloc_stats before, mid, after;
  txalloc_stats_get(&before);
  pthread_barrier_init(&published, NULL, OWNERS + FREERS + 1);
  pthread_barrier_init(&freed, NULL, OWNERS + FREERS + 1);
  pthread_barrier_init(&done, NULL, OWNERS + 1);
  atomic_store(&freers_running, FREERS);
  for (int i = 0; i < OWNERS; i++) {
    owners[i] = (owner_arg){i, count, busy_ops, calloc((size_t)count, sizeof(test_obj)), 0};
    if (!owners[i].objs || pthread_create(&t[i], NULL, owner_main, &owners[i]) != 0) exit(2);
  }
  for (int i = 0; i < FREERS; i++) {
    freers[i] = (freer_arg){i, owners, 0};
    if (pthread_create(&t[OWNERS + i], NULL, freer_main, &freers[i]) != 0) exit(2);
  }
  pthread_barrier_wait(&published);
  pthread_barrier_wait(&freed);
  txalloc_stats_get(&mid);
  uint64_t released = mid.blocks_released_remote - before.blocks_released_remote;
  CHECKF(released > 0, "busy %ld: no block released for its owner", busy_ops);
  if (busy_ops == 0) {
    /* Left in the owners' bins: at most the current block of each class. The freers'
     * heaps own nothing (they never allocate). */
    uint64_t bound = before.blocks_in_use + (uint64_t)OWNERS * txalloc_class_count();
    CHECKF(mid.blocks_in_use <= bound,
           "idle owners keep %llu blocks (at most %llu expected; %llu released)",
           (unsigned long long)mid.blocks_in_use, (unsigned long long)bound,
           (unsigned long long)released);
  }
  pthread_barrier_wait(&done);
  for (int i = 0; i < OWNERS + FREERS; i++) pthread_join(t[i], NULL);
  long bad = 0;
  for (int i = 0; i < OWNERS; i++) {
    bad += owners[i].bad;
    free(owners[i].objs);
  }
  for (int i = 0; i < FREERS; i++) bad += freers[i].bad;
  CHECKF(bad == 0, "busy %ld: %ld corrupted objects or failed allocations", busy_ops, bad);
  txalloc_stats_get(&after);
  CHECKF(after.live_bytes == before.live_bytes, "busy %ld: live bytes %llu -> %llu", busy_ops,
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  pthread_barrier_destroy(&published);
  pthread_barrier_destroy(&freed);
  pthread_barrier_destroy(&done);
}

int main(void) {
  run(check_scaled(200000, 20000), 0);
  long rounds = check_scaled(6, 2);
  for (long i = 0; i < rounds; i++) run(check_scaled(50000, 8000), check_scaled(200000, 20000));
  return check_exit();
}
