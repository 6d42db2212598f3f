/* The empty small blocks a heap keeps for itself (empty_cache.c).
 *
 * In one thread: allocate enough 48-byte objects to fill 12 blocks, free them all
 * (locally), allocate as many again. The second round must be served from the same
 * blocks, without the global store (blocks_from_store unchanged, every object in a block
 * of the first round), and freeing an object twice after its block emptied must still be
 * reported. Then more blocks than the heap keeps (TXA_HEAP_EMPTY_BLOCKS): the surplus
 * goes to the store. collect
 * hands the kept blocks to the store; thread exit does too.
 *
 * Race: 12 threads (more than cores), started together, each repeat rounds of filling
 * and emptying blocks of several classes while passing a share of their objects to the
 * next thread to free (remote frees, releases for idle owners), every object's pattern
 * checked before its free; at the end the live bytes are back where they started and no
 * block is left in use beyond the main thread's. */
#include "alloc/layout.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { SIZE = 48, BLOCKS = 12, PER_BLOCK_MAX = 16384 / SIZE, THREADS = 12 };

static int hook_calls;
static void count_errors(txalloc_error_kind kind, const void *ptr, const char *message, void *arg) {
  (void)kind, (void)ptr, (void)message, (void)arg;
  hook_calls++;
}

static uintptr_t block_of(const void *p) { return (uintptr_t)p & ~(uintptr_t)16383; }

static int in_blocks(uintptr_t b, const uintptr_t *blocks, int n) {
  for (int i = 0; i < n; i++)
    if (blocks[i] == b) return 1;
  return 0;
}

static void *single_thread(void *arg) {
  (void)arg;
  enum { N = BLOCKS * PER_BLOCK_MAX };
  static void *objs[N];
  static uintptr_t blocks[N];
  int nblocks = 0;
  for (int i = 0; i < N; i++) {
    objs[i] = txalloc_malloc(SIZE);
    uintptr_t b = block_of(objs[i]);
    if (!in_blocks(b, blocks, nblocks)) blocks[nblocks++] = b;
  }
  txalloc_stats before;
  txalloc_stats_get(&before);
  for (int i = 0; i < N; i++) txalloc_free(objs[i]);
  void *stale = objs[0];
  int outside = 0;
  for (int i = 0; i < N; i++) {
    objs[i] = txalloc_malloc(SIZE);
    if (!in_blocks(block_of(objs[i]), blocks, nblocks)) outside++;
  }
  txalloc_stats after;
  txalloc_stats_get(&after);
  CHECKF(nblocks >= BLOCKS, "%d blocks filled", nblocks);
  CHECKF(outside == 0, "%d objects of the second round outside the first round's blocks", outside);
  CHECKF(after.blocks_from_store == before.blocks_from_store,
         "the second round took %llu blocks from the store",
         (unsigned long long)(after.blocks_from_store - before.blocks_from_store));
  /* A double free into a block that emptied and was initialised again: objs[0] of the
   * first round is live again only if the second round handed it out again. */
  for (int i = 0; i < N; i++) txalloc_free(objs[i]);
  hook_calls = 0;
  txalloc_error_fn previous = txalloc_set_error_hook(count_errors, NULL);
  txalloc_free(stale); /* its block is empty now (kept by the heap): invalid */
  txalloc_set_error_hook(previous, NULL);
  CHECKF(hook_calls == 1, "double free into a kept empty block: %d reports", hook_calls);

  /* More empty blocks than the heap keeps: the surplus reaches the store. */
  enum { MANY = (TXA_HEAP_EMPTY_BLOCKS + 100) * PER_BLOCK_MAX };
  void **many = malloc(sizeof(void *) * MANY);
  if (!many) exit(2);
  int spanned = 0; /* blocks the objects lie in (they were allocated in block order) */
  for (int i = 0; i < MANY; i++) {
    many[i] = txalloc_malloc(SIZE);
    if (i == 0 || block_of(many[i]) != block_of(many[i - 1])) spanned++;
  }
  txalloc_stats_get(&before);
  for (int i = 0; i < MANY; i++) txalloc_free(many[i]);
  txalloc_stats_get(&after);
  /* All but the bin's current block are emptied. */
  uint64_t to_store = after.blocks_to_store - before.blocks_to_store;
  CHECKF(to_store == (uint64_t)(spanned - 1 - TXA_HEAP_EMPTY_BLOCKS),
         "%d blocks emptied, %llu to the store", spanned - 1, (unsigned long long)to_store);
  /* collect hands the kept ones to the store as well. */
  txalloc_collect();
  txalloc_stats_get(&after);
  CHECKF(after.blocks_to_store - before.blocks_to_store >= (uint64_t)spanned - 1,
         "after collect %llu of %d blocks in the store",
         (unsigned long long)(after.blocks_to_store - before.blocks_to_store), spanned - 1);
  free(many);
  /* Kept blocks again, then thread exit must hand them over. */
  for (int i = 0; i < N; i++) objs[i] = txalloc_malloc(SIZE);
  for (int i = 0; i < N; i++) txalloc_free(objs[i]);
  return NULL;
}

typedef struct worker {
  int id;
  long rounds, bad;
  test_obj *handoff; /* this thread's outbox, freed by the next thread */
  pthread_mutex_t *lock;
} worker;

static pthread_barrier_t start;

static void *race_worker(void *arg) {
  worker *w = arg;
  test_rng r = {(uint64_t)w->id * 131 + 7};
  enum { LIVE = 2000 };
  test_obj *live = calloc(LIVE, sizeof *live);
  if (!live) exit(2);
  pthread_barrier_wait(&start);
  for (long round = 0; round < w->rounds; round++) {
    for (int i = 0; i < LIVE; i++) {
      size_t n = 16 + test_rng_below(&r, 3) * 48; /* three classes */
      live[i] = (test_obj){txalloc_malloc(n), n, ((uint64_t)w->id << 40) | (uint64_t)i};
      if (!live[i].p) {
        w->bad++;
        continue;
      }
      test_fill(live[i].p, n, live[i].tag);
    }
    for (int i = 0; i < LIVE; i++) {
      if (test_rng_below(&r, 8) == 0) {
        /* to the next thread, which frees it: swap with what waits there */
        test_obj other = test_exchange_swap(w->lock, w->handoff, i % 64, live[i], &w->bad);
        test_obj_free(&other, &w->bad);
        live[i] = (test_obj){0};
      } else {
        test_obj_free(&live[i], &w->bad);
      }
    }
  }
  free(live);
  return NULL;
}

int main(void) {
  txalloc_stats base;
  txalloc_stats_get(&base);
  pthread_t t;
  if (pthread_create(&t, NULL, single_thread, NULL) != 0) return 2;
  pthread_join(t, NULL);
  txalloc_stats exited;
  txalloc_stats_get(&exited);
  CHECKF(exited.blocks_in_use <= base.blocks_in_use,
         "after thread exit %llu blocks in use, %llu before",
         (unsigned long long)exited.blocks_in_use, (unsigned long long)base.blocks_in_use);
  CHECKF(exited.live_bytes == base.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)base.live_bytes, (unsigned long long)exited.live_bytes);

  static test_obj handoff[64];
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  worker w[THREADS];
  pthread_barrier_init(&start, NULL, THREADS);
  for (int i = 0; i < THREADS; i++) w[i] = (worker){i, check_scaled(60, 6), 0, handoff, &lock};
  test_run_threads(THREADS, race_worker, w, sizeof w[0]);
  long bad = 0;
  for (int i = 0; i < THREADS; i++) bad += w[i].bad;
  for (int i = 0; i < 64; i++) test_obj_free(&handoff[i], &bad);
  CHECKF(bad == 0, "%ld corrupted objects or failed allocations", bad);
  txalloc_stats end;
  txalloc_stats_get(&end);
  CHECKF(end.live_bytes == base.live_bytes, "race: live bytes %llu -> %llu",
         (unsigned long long)base.live_bytes, (unsigned long long)end.live_bytes);
  pthread_barrier_destroy(&start);
  return check_exit();
}
