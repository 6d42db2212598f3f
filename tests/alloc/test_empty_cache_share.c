/* What a heap's cache of empty blocks (empty_cache.c) gives to the rest of the process.
 * decommit_delay_ms is 20, so purge ticks come every 10 ms.
 *
 * (1) Taken before new memory: a thread fills OWNED blocks with 48-byte objects, frees
 *     them all (its cache keeps them) and idles. Then the main thread allocates as many:
 *     its objects must lie in the idle thread's blocks, and committed memory must not grow
 *     by more than a few blocks.
 * (2) Aged while the owner idles: the thread fills and empties OWNED blocks again and
 *     idles; the main thread keeps refilling from its own cache. Within 5 s the idle
 *     thread's blocks must be decommitted (spans_decommitted grows by nearly OWNED).
 * (3) collect from another thread: the same with txalloc_collect() called by the main
 *     thread instead: decommitted at once.
 * (4) Race: 12 threads (more than cores), started together, each alternating rounds of
 *     different sizes so that some grow while others hold emptied blocks (steals, ticks and
 *     the threshold all happen concurrently); every object's pattern is checked before its
 *     free, and live bytes end where they started. */
#include <sched.h>
#include <time.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { SIZE = 48, PER_BLOCK_MAX = 16384 / SIZE, OWNED = 100, N = OWNED * PER_BLOCK_MAX };
enum { THREADS = 12 };

static uintptr_t block_of(const void *p) { return (uintptr_t)p & ~(uintptr_t)16383; }

static pthread_barrier_t phase; /* main and the idle owner */
static void *objs[N];
static uintptr_t owner_blocks[N];
static int owner_nblocks;

/* Fills and empties OWNED blocks, then idles until main lets it go; `rounds` times. */
static void *idle_owner(void *arg) {
  int rounds = *(int *)arg;
  for (int r = 0; r < rounds; r++) {
    owner_nblocks = 0;
    for (int i = 0; i < N; i++) {
      objs[i] = txalloc_malloc(SIZE);
      if (i == 0 || block_of(objs[i]) != block_of(objs[i - 1]))
        owner_blocks[owner_nblocks++] = block_of(objs[i]);
    }
    for (int i = 0; i < N; i++) txalloc_free(objs[i]);
    pthread_barrier_wait(&phase); /* emptied */
    pthread_barrier_wait(&phase); /* main is done with this round */
  }
  return NULL;
}

static int owned(uintptr_t b) {
  for (int i = 0; i < owner_nblocks; i++)
    if (owner_blocks[i] == b) return 1;
  return 0;
}

/* Allocates and frees two blocks' worth of 256-byte objects: after the first call, the
 * main heap's own cache serves its refills. */
static void churn_own_blocks(void) {
  enum { M = 2 * 16384 / 256 };
  void *p[M];
  for (int i = 0; i < M; i++) p[i] = txalloc_malloc(256);
  for (int i = 0; i < M; i++) txalloc_free(p[i]);
}

static void test_taken_before_new_memory(void) {
  static void *mine[N];
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  int in_owner = 0;
  for (int i = 0; i < N; i++) {
    mine[i] = txalloc_malloc(SIZE);
    in_owner += owned(block_of(mine[i]));
  }
  txalloc_stats_get(&after);
  CHECKF(in_owner >= N - 2 * PER_BLOCK_MAX, "%d of %d objects in the idle thread's blocks",
         in_owner, N);
  CHECKF(after.committed_bytes <= before.committed_bytes + 4 * 16384,
         "committed grew by %llu KiB with %d blocks cached by another thread",
         (unsigned long long)((after.committed_bytes - before.committed_bytes) >> 10), OWNED);
  for (int i = 0; i < N; i++) txalloc_free(mine[i]);
}

static void test_aged_while_idle(void) {
  txalloc_stats before, now;
  txalloc_stats_get(&before);
  uint64_t decommitted = 0;
  for (int ms = 0; ms < 5000 && decommitted < OWNED - 2; ms++) {
    churn_own_blocks();
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
    txalloc_stats_get(&now);
    decommitted = now.spans_decommitted - before.spans_decommitted;
  }
  CHECKF(decommitted >= OWNED - 2,
         "after 5 s, %llu of the idle thread's %d empty blocks decommitted",
         (unsigned long long)decommitted, OWNED);
}

static void test_collect_from_another_thread(void) {
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  txalloc_collect();
  txalloc_stats_get(&after);
  CHECKF(after.spans_decommitted - before.spans_decommitted >= OWNED - 2,
         "collect decommitted %llu blocks; the idle thread had emptied %d",
         (unsigned long long)(after.spans_decommitted - before.spans_decommitted), OWNED);
}

typedef struct worker {
  int id;
  long rounds, bad;
} worker;

static pthread_barrier_t start;

static void *race_worker(void *arg) {
  worker *w = arg;
  test_rng r = {(uint64_t)w->id * 977 + 3};
  enum { MOST = 6000 };
  test_obj *live = calloc(MOST, sizeof *live);
  if (!live) exit(2);
  pthread_barrier_wait(&start);
  for (long round = 0; round < w->rounds; round++) {
    /* Some rounds hold ten times as much as others: their threads need blocks while others
     * have just emptied theirs. */
    int n = (int)(test_rng_below(&r, 4) == 0 ? MOST : MOST / 10);
    for (int i = 0; i < n; i++) {
      size_t size = 16 + test_rng_below(&r, 4) * 64;
      live[i] = (test_obj){txalloc_malloc(size), size, ((uint64_t)w->id << 40) | (uint64_t)i};
      if (!live[i].p) {
        w->bad++;
        continue;
      }
      test_fill(live[i].p, size, live[i].tag);
    }
    for (int i = 0; i < n; i++) test_obj_free(&live[i], &w->bad);
    if (round % 16 == 15) sched_yield();
  }
  free(live);
  return NULL;
}

int main(void) {
  setenv("TXALLOC_DECOMMIT_DELAY_MS", "20", 1);
  churn_own_blocks();
  churn_own_blocks();
  txalloc_stats base;
  txalloc_stats_get(&base);

  pthread_barrier_init(&phase, NULL, 2);
  int rounds = 3;
  pthread_t t;
  if (pthread_create(&t, NULL, idle_owner, &rounds) != 0) return 2;
  pthread_barrier_wait(&phase);
  test_taken_before_new_memory();
  pthread_barrier_wait(&phase);
  pthread_barrier_wait(&phase);
  test_aged_while_idle();
  pthread_barrier_wait(&phase);
  pthread_barrier_wait(&phase);
  test_collect_from_another_thread();
  pthread_barrier_wait(&phase);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&phase);

  worker w[THREADS];
  pthread_barrier_init(&start, NULL, THREADS);
  for (int i = 0; i < THREADS; i++) w[i] = (worker){i, check_scaled(40, 4), 0};
  test_run_threads(THREADS, race_worker, w, sizeof w[0]);
  pthread_barrier_destroy(&start);
  long bad = 0;
  for (int i = 0; i < THREADS; i++) bad += w[i].bad;
  CHECKF(bad == 0, "race: %ld corrupted objects or failed allocations", bad);
  txalloc_stats end;
  txalloc_stats_get(&end);
  CHECKF(end.live_bytes == base.live_bytes, "race: live bytes %llu -> %llu",
         (unsigned long long)base.live_bytes, (unsigned long long)end.live_bytes);
  return check_exit();
}
