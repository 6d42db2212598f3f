/* Block-store torture: many threads push blocks to and pop blocks from the global
 * non-blocking LIFO as fast as they can, with more threads than cores so that threads are
 * preempted between reading the top and their CAS — the ABA window. An ABA bug hands one
 * block to two threads (or loses blocks / corrupts the stack), which shows up as two
 * live objects sharing memory (pattern mismatch), a crash, or stats that do not add up.
 *
 * Workload: 16 threads started by a barrier, each for R rounds (seed = thread id):
 *   - allocate enough objects of one size class (rotating through 5 small classes, 48..1024 B)
 *     to fill several blocks, writing a pattern tagged (thread, round, k) into each;
 *   - check and free all of them in a shuffled order, so every block becomes empty and
 *     returns to the store (pushes), and the next round's allocations pop them again;
 *   - every 8th round, free only half, call txalloc_thread_exit() (abandoning part-used
 *     blocks: more pushes), then free the other half (frees into abandoned blocks, now
 *     possibly adopted by another thread) and continue with a fresh heap.
 * Then 2 threads do the same (two threads racing on the same top). At the end the stats
 * must show the store in heavy use and live bytes back at the start value. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { OBJECTS = 192 };
static const size_t class_sizes[] = {48, 64, 160, 512, 1024};

typedef test_obj obj;

typedef struct worker {
  int id;
  long rounds;
  long bad;
} worker;

static pthread_barrier_t start;

static void check_free(worker *w, obj *o) { test_obj_free(o, &w->bad); }

static void *run(void *varg) {
  worker *w = (worker *)varg;
  test_rng rng = {(uint64_t)w->id + 1};
  obj objs[OBJECTS];
  pthread_barrier_wait(&start);
  for (long r = 0; r < w->rounds; r++) {
    size_t size = class_sizes[(size_t)(r + w->id) % (sizeof class_sizes / sizeof class_sizes[0])];
    /* Enough objects for at least 3 blocks of 16 KiB, at most OBJECTS. */
    int n = (int)((3 * 16384) / size + 1);
    if (n > OBJECTS) n = OBJECTS;
    for (int k = 0; k < n; k++) {
      uint64_t tag = ((uint64_t)w->id << 48) | ((uint64_t)r << 12) | (uint64_t)k;
      void *p = txalloc_malloc(size);
      if (!p) {
        w->bad++;
        objs[k] = (obj){NULL, 0, 0};
        continue;
      }
      /* The first 64 bytes are enough to see two owners of one object. */
      size_t checked = size < 64 ? size : 64;
      test_fill(p, checked, tag);
      objs[k] = (obj){p, checked, tag};
    }
    /* Shuffle, then free. */
    for (int k = n - 1; k > 0; k--) {
      int j = (int)test_rng_below(&rng, (uint64_t)k + 1);
      obj t = objs[k];
      objs[k] = objs[j];
      objs[j] = t;
    }
    if (r % 8 == 7) {
      for (int k = 0; k < n / 2; k++)
        if (objs[k].p) check_free(w, &objs[k]);
      txalloc_thread_exit();
      for (int k = n / 2; k < n; k++)
        if (objs[k].p) check_free(w, &objs[k]);
    } else {
      for (int k = 0; k < n; k++)
        if (objs[k].p) check_free(w, &objs[k]);
    }
  }
  return NULL;
}

static void torture(int nthreads, long rounds) {
  worker w[16];
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  pthread_barrier_init(&start, NULL, (unsigned)nthreads);
  for (int i = 0; i < nthreads; i++) w[i] = (worker){.id = i, .rounds = rounds};
  test_run_threads(nthreads, run, w, sizeof w[0]);
  pthread_barrier_destroy(&start);
  txalloc_stats_get(&after);
  long bad = 0;
  for (int i = 0; i < nthreads; i++) bad += w[i].bad;
  uint64_t pops = after.blocks_from_store - before.blocks_from_store;
  uint64_t pushes = after.blocks_to_store - before.blocks_to_store;
  fprintf(stderr, "%d threads x %ld rounds: %llu pops, %llu pushes, %llu abandoned, %llu adopted\n",
          nthreads, rounds, (unsigned long long)pops, (unsigned long long)pushes,
          (unsigned long long)(after.blocks_abandoned - before.blocks_abandoned),
          (unsigned long long)(after.blocks_adopted - before.blocks_adopted));
  CHECKF(bad == 0, "%d threads: %ld objects shared memory, were corrupted or not allocated",
         nthreads, bad);
  /* Every thread pushes at least one block per abandoning round; a store that is not used
   * means this test tortured nothing. */
  CHECKF(pushes >= (uint64_t)nthreads * (uint64_t)(rounds / 8), "%d threads: only %llu pushes",
         nthreads, (unsigned long long)pushes);
  CHECKF(pops >= (uint64_t)nthreads * (uint64_t)(rounds / 8), "%d threads: only %llu pops",
         nthreads, (unsigned long long)pops);
  CHECKF(after.live_bytes == before.live_bytes, "%d threads: live bytes %llu -> %llu", nthreads,
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
}

int main(void) {
  torture(16, check_scaled(3000, 300));
  torture(2, check_scaled(12000, 1200));
  return check_exit();
}
