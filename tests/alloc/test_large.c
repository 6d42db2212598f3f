/* Medium and large objects from several threads: spans, dedicated mappings and the
 * large-object cache under concurrency, with remote frees and reallocs across the
 * small/medium/large boundaries.
 *
 * Workload: 4 threads (plus a run with 16), started by a barrier, each doing R steps on
 * its own table of 24 slots (seed = thread id): a step picks a slot and either allocates
 * a random size from 8 KiB to 3 MiB (log-uniform), reallocs it to another random size
 * (content prefix kept), or hands the object to a shared exchange slot and frees whatever
 * object was there (a remote free of a large object). Each object carries a pattern over
 * its start, end and every 4 KiB, checked before every free and realloc. At the end every
 * object is freed, live bytes are back at the start value and txalloc_collect() empties
 * the large-object cache. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { SLOTS = 24, EXCHANGE = 8, MAX_THREADS = 16 };

typedef test_obj obj;

static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static obj exchange[EXCHANGE];
static pthread_barrier_t start;

typedef struct worker {
  int id;
  long steps, bad;
} worker;

static size_t log_uniform(test_rng *r) {
  int k = 13 + (int)test_rng_below(r, 9); /* 8 KiB .. 3 MiB */
  size_t base = (size_t)1 << k;
  return base + (size_t)test_rng_below(r, base / 2);
}

static void check_free(worker *w, obj *o) { test_obj_free(o, &w->bad); }

static void *run(void *varg) {
  worker *w = (worker *)varg;
  test_rng rng = {(uint64_t)w->id * 7 + 3};
  obj slot[SLOTS] = {{0}};
  uint64_t seq = 0;
  pthread_barrier_wait(&start);
  for (long s = 0; s < w->steps; s++) {
    obj *o = &slot[test_rng_below(&rng, SLOTS)];
    uint64_t action = test_rng_below(&rng, 10);
    uint64_t tag = ((uint64_t)w->id << 40) | seq++;
    if (!o->p) {
      size_t size = log_uniform(&rng);
      void *p = txalloc_malloc(size);
      if (!p) {
        w->bad++;
        continue;
      }
      if (txalloc_usable_size(p) < size) w->bad++;
      test_fill(p, size, tag);
      *o = (obj){p, size, tag};
    } else if (action < 4) {
      size_t size = action == 0 ? 16 + (size_t)test_rng_below(&rng, 2000) : log_uniform(&rng);
      if (!test_check(o->p, o->size, o->tag)) w->bad++;
      /* Keep the first min(old,new) bytes' pattern: compare the first 256 bytes after. */
      size_t keep = (o->size < size ? o->size : size);
      keep = keep < 256 ? keep : 256;
      unsigned char head[256];
      memcpy(head, o->p, keep);
      void *p = txalloc_realloc(o->p, size);
      if (!p) {
        w->bad++;
        continue;
      }
      if (memcmp(head, p, keep) != 0) w->bad++;
      test_fill(p, size, tag);
      *o = (obj){p, size, tag};
    } else if (action < 7) {
      check_free(w, o);
    } else {
      int e = (int)test_rng_below(&rng, EXCHANGE);
      obj other = test_exchange_swap(&exchange_lock, exchange, e, *o, &w->bad);
      *o = (obj){0};
      check_free(w, &other);
    }
  }
  for (int i = 0; i < SLOTS; i++) check_free(w, &slot[i]);
  return NULL;
}

static void run_threads(int n, long steps) {
  worker w[MAX_THREADS];
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  pthread_barrier_init(&start, NULL, (unsigned)n);
  for (int i = 0; i < n; i++) w[i] = (worker){.id = i, .steps = steps};
  test_run_threads(n, run, w, sizeof w[0]);
  pthread_barrier_destroy(&start);
  worker main_worker = {.id = -1};
  for (int e = 0; e < EXCHANGE; e++) check_free(&main_worker, &exchange[e]);
  long bad = main_worker.bad;
  for (int i = 0; i < n; i++) bad += w[i].bad;
  txalloc_stats_get(&after);
  CHECKF(bad == 0, "%d threads: %ld large objects corrupted, short or not allocated", n, bad);
  CHECKF(after.live_bytes == before.live_bytes, "%d threads: live bytes %llu -> %llu", n,
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  CHECK(after.large_mallocs > before.large_mallocs);
  fprintf(stderr, "%d threads: %llu large mallocs, %llu cache hits, %llu mmaps, %llu munmaps\n", n,
          (unsigned long long)(after.large_mallocs - before.large_mallocs),
          (unsigned long long)(after.large_cache_hits - before.large_cache_hits),
          (unsigned long long)(after.os_maps - before.os_maps),
          (unsigned long long)(after.os_unmaps - before.os_unmaps));
  txalloc_collect();
  txalloc_stats_get(&after);
  CHECK(after.large_cache_bytes == 0);
}

int main(void) {
  run_threads(4, check_scaled(6000, 600));
  run_threads(16, check_scaled(1500, 200));
  return check_exit();
}
