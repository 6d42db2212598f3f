/* txalloc_collect() running while other threads allocate, free remotely, abandon and adopt:
 * collect takes abandoned blocks out of the store, repatriates them and frees the empty
 * ones, which races with remote frees into those blocks and with adopters.
 *
 * Workload: 6 worker threads (more than cores) for R rounds each: allocate 64 objects of
 * random small and medium sizes (seed = thread id) with patterns, swap a quarter of them
 * with a shared exchange (so objects are freed by other threads, also after their owner
 * abandoned its heap), check and free the rest; every 16 rounds a worker calls
 * txalloc_thread_exit() with objects still parked in the exchange. Two more threads call
 * txalloc_collect() in a loop until the workers finish. Every object's pattern is checked
 * before it is freed; at the end live bytes are back at the start and a final collect
 * leaves no empty block committed beyond a small margin. */
#include <sched.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { WORKERS = 6, COLLECTORS = 2, BATCH = 64, EXCHANGE = 128 };

typedef test_obj obj;

typedef struct worker {
  int id;
  long rounds, bad;
} worker;

static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static obj exchange[EXCHANGE];
static atomic_int workers_running;
static atomic_long collects;

static void check_free(worker *w, obj *o) { test_obj_free(o, &w->bad); }

static void *work(void *arg) {
  worker *w = (worker *)arg;
  test_rng rng = {(uint64_t)w->id * 31 + 7};
  obj mine[BATCH];
  for (long r = 0; r < w->rounds; r++) {
    for (int i = 0; i < BATCH; i++) {
      size_t s = test_rng_below(&rng, 16) == 0 ? 1024 + (size_t)test_rng_below(&rng, 30000)
                                               : 16 + (size_t)test_rng_below(&rng, 600);
      uint64_t tag = ((uint64_t)w->id << 48) | ((uint64_t)r << 8) | (uint64_t)i;
      void *p = txalloc_malloc(s);
      if (!p)
        w->bad++;
      else
        test_fill(p, s < 256 ? s : 256, tag);
      mine[i] = (obj){p, s < 256 ? s : 256, tag};
    }
    for (int i = 0; i < BATCH / 4; i++) {
      int e = (int)test_rng_below(&rng, EXCHANGE);
      pthread_mutex_lock(&exchange_lock);
      obj other = exchange[e];
      exchange[e] = mine[i];
      pthread_mutex_unlock(&exchange_lock);
      mine[i] = other;
    }
    for (int i = 0; i < BATCH; i++) check_free(w, &mine[i]);
    if (r % 16 == 15) txalloc_thread_exit();
  }
  atomic_fetch_sub(&workers_running, 1);
  return NULL;
}

static void *collect_loop(void *arg) {
  (void)arg;
  while (atomic_load(&workers_running) > 0) {
    txalloc_collect();
    collects++;
    sched_yield();
  }
  return NULL;
}

int main(void) {
  long rounds = check_scaled(10000, 1000);
  txalloc_stats s0, s1;
  txalloc_collect();
  txalloc_stats_get(&s0);
  worker w[WORKERS];
  pthread_t t[WORKERS + COLLECTORS];
  atomic_store(&workers_running, WORKERS);
  for (int i = 0; i < WORKERS; i++) {
    w[i] = (worker){.id = i, .rounds = rounds};
    if (pthread_create(&t[i], NULL, work, &w[i]) != 0) return 2;
  }
  for (int i = 0; i < COLLECTORS; i++)
    if (pthread_create(&t[WORKERS + i], NULL, collect_loop, NULL) != 0) return 2;
  for (int i = 0; i < WORKERS + COLLECTORS; i++) pthread_join(t[i], NULL);
  worker main_worker = {.id = -1};
  for (int e = 0; e < EXCHANGE; e++) check_free(&main_worker, &exchange[e]);
  long bad = main_worker.bad;
  for (int i = 0; i < WORKERS; i++) bad += w[i].bad;
  txalloc_collect();
  txalloc_stats_get(&s1);
  fprintf(stderr, "%ld collects during the run; committed %llu KiB -> %llu KiB\n", (long)collects,
          (unsigned long long)(s0.committed_bytes >> 10),
          (unsigned long long)(s1.committed_bytes >> 10));
  CHECKF(bad == 0, "%ld objects corrupted or not allocated", bad);
  CHECKF(collects > 0, "no collect ran during the workload");
  CHECKF(s1.live_bytes == s0.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)s0.live_bytes, (unsigned long long)s1.live_bytes);
  CHECKF(s1.committed_bytes <= s0.committed_bytes + ((uint64_t)8 << 20),
         "committed %llu KiB after the final collect (start %llu KiB)",
         (unsigned long long)(s1.committed_bytes >> 10),
         (unsigned long long)(s0.committed_bytes >> 10));
  return check_exit();
}
