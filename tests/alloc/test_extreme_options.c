/* The allocator under extreme option values, which drive its rare paths all the time:
 * region_mb=4 (a new region every few granules), bin_search=1 and bin_grow_percent=100
 * (a bin adds a block at nearly every refill), decommit_delay_ms=0 (every purge tick
 * decommits, blocks come back from the clean stack constantly), large_cache_mb=1.
 *
 * Workload: 6 threads (more than cores), R steps each (seed = thread id) on 48 slots: a
 * step allocates (sizes 1 B .. 1 MiB, mostly small), reallocs, frees, or swaps the object
 * with a shared exchange (remote frees); every 500 steps a thread calls
 * txalloc_thread_exit(), every 2000 txalloc_collect(). Every object carries a pattern
 * checked before free and realloc. At the end live bytes are back at the start and the
 * option values read back as set. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/options.h"
#include "txalloc/txalloc.h"

enum { WORKERS = 6, SLOTS = 48, EXCHANGE = 32 };

typedef test_obj obj;

typedef struct worker {
  int id;
  long steps, bad;
} worker;

static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static obj exchange[EXCHANGE];

static size_t pick_size(test_rng *r) {
  uint64_t k = test_rng_below(r, 100);
  if (k < 85) return 1 + (size_t)test_rng_below(r, 512);
  if (k < 98) return 512 + (size_t)test_rng_below(r, 64 << 10);
  return (size_t)test_rng_below(r, 1 << 20) + 1;
}

static void check_free(worker *w, obj *o) { test_obj_free(o, &w->bad); }

static void *run(void *arg) {
  worker *w = (worker *)arg;
  test_rng rng = {(uint64_t)w->id + 1234};
  obj slot[SLOTS] = {{0}};
  for (long s = 0; s < w->steps; s++) {
    obj *o = &slot[test_rng_below(&rng, SLOTS)];
    uint64_t tag = ((uint64_t)w->id << 40) | (uint64_t)s;
    uint64_t action = test_rng_below(&rng, 8);
    if (!o->p) {
      size_t size = pick_size(&rng);
      void *p = txalloc_malloc(size);
      if (!p) {
        w->bad++;
        continue;
      }
      test_fill(p, size, tag);
      *o = (obj){p, size, tag};
    } else if (action < 2) {
      if (!test_check(o->p, o->size, o->tag)) w->bad++;
      size_t size = pick_size(&rng);
      void *p = txalloc_realloc(o->p, size);
      if (!p) {
        w->bad++;
        continue;
      }
      test_fill(p, size, tag);
      *o = (obj){p, size, tag};
    } else if (action < 5) {
      check_free(w, o);
    } else {
      int e = (int)test_rng_below(&rng, EXCHANGE);
      *o = test_exchange_swap(&exchange_lock, exchange, e, *o, &w->bad);
    }
    if (s % 500 == 499) txalloc_thread_exit();
    if (s % 2000 == 1999) txalloc_collect();
  }
  for (int i = 0; i < SLOTS; i++) check_free(w, &slot[i]);
  return NULL;
}

int main(void) {
  setenv("TXALLOC_REGION_MB", "4", 1);
  setenv("TXALLOC_BIN_SEARCH", "1", 1);
  setenv("TXALLOC_BIN_GROW_PERCENT", "100", 1);
  setenv("TXALLOC_DECOMMIT_DELAY_MS", "0", 1);
  setenv("TXALLOC_LARGE_CACHE_MB", "1", 1);
  txalloc_stats s0, s1;
  txalloc_stats_get(&s0);
  const char *names[] = {"region_mb", "bin_search", "bin_grow_percent", "decommit_delay_ms",
                         "large_cache_mb"};
  long values[] = {4, 1, 100, 0, 1};
  for (int i = 0; i < 5; i++) {
    int idx = txalloc_option_find(names[i]);
    CHECKF(idx >= 0 && txalloc_option_value((size_t)idx) == values[i], "option %s = %ld", names[i],
           idx >= 0 ? txalloc_option_value((size_t)idx) : -1L);
  }
  worker w[WORKERS];
  for (int i = 0; i < WORKERS; i++) w[i] = (worker){.id = i, .steps = check_scaled(40000, 4000)};
  test_run_threads(WORKERS, run, w, sizeof w[0]);
  worker main_worker = {.id = -1};
  for (int e = 0; e < EXCHANGE; e++) check_free(&main_worker, &exchange[e]);
  long bad = main_worker.bad;
  for (int i = 0; i < WORKERS; i++) bad += w[i].bad;
  txalloc_stats_get(&s1);
  fprintf(stderr, "reserved %llu MiB, %llu spans decommitted, %llu blocks from the store\n",
          (unsigned long long)(s1.reserved_bytes >> 20),
          (unsigned long long)(s1.spans_decommitted - s0.spans_decommitted),
          (unsigned long long)(s1.blocks_from_store - s0.blocks_from_store));
  CHECKF(bad == 0, "%ld objects corrupted, short or not allocated", bad);
  CHECKF(s1.live_bytes == s0.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)s0.live_bytes, (unsigned long long)s1.live_bytes);
  CHECK(s1.spans_decommitted > s0.spans_decommitted);
  return check_exit();
}
