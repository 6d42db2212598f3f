/* Cross-thread frees: every object is allocated by one thread and freed by another, so
 * that owners repatriate their public free lists while other threads push onto them.
 *
 * Workload: N threads (2, then 16 = more threads than cores) in a ring, started together
 * by a barrier. Thread i allocates objects of random small sizes (16..512 B, seed 1000+i),
 * writes a pattern tagged with (thread, sequence) over each, and passes it through a
 * single-producer/single-consumer ring buffer to thread i+1; it takes objects from thread
 * i-1's buffer, checks their pattern (detects two live objects sharing memory and writes
 * into freed memory) and frees them: a remote free. One object in 8 is freed locally
 * instead (mixing private and public frees on the same blocks). When a buffer is full the
 * object is freed locally. After its quota a thread keeps draining its input until every
 * producer has finished. At the end the stats must count exactly the mallocs and frees the
 * test made, and live bytes must be back where they started.
 * With foreign reuse (the default; src/alloc/foreign.c) a thread's mallocs also take back
 * objects of the previous thread's blocks that it freed, so objects travel round the ring
 * past their owners: the stats must show such reuses. With foreign_reuse=0 or secure=1
 * (ctest alloc_remote_free_public, alloc_remote_free_secure) every cross-thread free goes
 * to a public list, and the stats' remote frees must equal the test's own count. */
#include <sched.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/options.h"
#include "txalloc/txalloc.h"

enum { RING = 512, MAX_THREADS = 16 };

typedef struct item {
  void *p;
  size_t size;
  uint64_t tag;
} item;

/* Single-producer single-consumer queue; head and tail on their own cache lines. */
typedef struct spsc {
  _Alignas(64) atomic_size_t head; /* next slot to take (consumer) */
  _Alignas(64) atomic_size_t tail; /* next slot to fill (producer) */
  item slot[RING];
} spsc;

typedef struct worker {
  int id, n;
  long quota;
  spsc *in, *out;
  /* results, read by main after join */
  long mallocs, frees, remote_frees, bad;
} worker;

static pthread_barrier_t start;
static atomic_int producers_done;

static int spsc_push(spsc *q, item it) {
  size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
  if (t - atomic_load_explicit(&q->head, memory_order_acquire) == RING) return 0;
  q->slot[t % RING] = it;
  atomic_store_explicit(&q->tail, t + 1, memory_order_release);
  return 1;
}

static int spsc_pop(spsc *q, item *it) {
  size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
  if (h == atomic_load_explicit(&q->tail, memory_order_acquire)) return 0;
  *it = q->slot[h % RING];
  atomic_store_explicit(&q->head, h + 1, memory_order_release);
  return 1;
}

static void consume(worker *w, item it) {
  if (!test_check(it.p, it.size, it.tag)) w->bad++;
  txalloc_free(it.p);
  w->frees++;
  w->remote_frees++;
}

static void *run(void *arg) {
  worker *w = (worker *)arg;
  test_rng rng = {1000u + (uint64_t)w->id};
  pthread_barrier_wait(&start);
  for (long s = 0; s < w->quota; s++) {
    size_t size = 16 + (size_t)test_rng_below(&rng, 497);
    void *p = txalloc_malloc(size);
    if (!p) {
      w->bad++;
      continue;
    }
    w->mallocs++;
    uint64_t tag = ((uint64_t)w->id << 40) | (uint64_t)s;
    test_fill(p, size, tag);
    item it;
    if (test_rng_below(&rng, 8) == 0) {
      if (!test_check(p, size, tag)) w->bad++;
      txalloc_free(p);
      w->frees++;
    } else {
      /* Wait for room, consuming meanwhile: every thread drains its input while it waits,
       * so the ring always makes progress. */
      while (!spsc_push(w->out, (item){p, size, tag})) {
        if (spsc_pop(w->in, &it))
          consume(w, it);
        else
          sched_yield();
      }
    }
    for (int k = 0; k < 2 && spsc_pop(w->in, &it); k++) consume(w, it);
  }
  atomic_fetch_add(&producers_done, 1);
  for (;;) {
    item it;
    if (spsc_pop(w->in, &it)) {
      consume(w, it);
      continue;
    }
    if (atomic_load(&producers_done) == w->n) {
      while (spsc_pop(w->in, &it)) consume(w, it);
      break;
    }
    sched_yield();
  }
  return NULL;
}

static long option(const char *name) {
  int i = txalloc_option_find(name);
  CHECKF(i >= 0, "no option %s", name);
  return i >= 0 ? txalloc_option_value((size_t)i) : 0;
}
static bool foreign_reuse_on(void) { return option("foreign_reuse") && !option("secure"); }

static void ring_of(int n, long quota) {
  static spsc queues[MAX_THREADS];
  worker w[MAX_THREADS];
  memset(queues, 0, sizeof queues);
  atomic_store(&producers_done, 0);
  pthread_barrier_init(&start, NULL, (unsigned)n);
  for (int i = 0; i < n; i++)
    w[i] = (worker){.id = i, .n = n, .quota = quota, .in = &queues[i], .out = &queues[(i + 1) % n]};

  txalloc_stats before, after;
  txalloc_stats_get(&before);
  test_run_threads(n, run, w, sizeof w[0]);
  txalloc_stats_get(&after);
  pthread_barrier_destroy(&start);

  long mallocs = 0, frees = 0, remote = 0, bad = 0;
  for (int i = 0; i < n; i++) {
    mallocs += w[i].mallocs;
    frees += w[i].frees;
    remote += w[i].remote_frees;
    bad += w[i].bad;
  }
  CHECKF(bad == 0, "%d threads: %ld objects corrupted or not allocated", n, bad);
  CHECKF(mallocs == frees, "%d threads: %ld mallocs, %ld frees", n, mallocs, frees);
  CHECKF(remote > mallocs * 3 / 4, "%d threads: only %ld of %ld frees were remote", n, remote,
         frees);
  CHECKF(after.mallocs - before.mallocs == (uint64_t)mallocs,
         "%d threads: stats mallocs +%llu, test %ld", n,
         (unsigned long long)(after.mallocs - before.mallocs), mallocs);
  CHECKF(after.frees - before.frees == (uint64_t)frees, "%d threads: stats frees +%llu, test %ld",
         n, (unsigned long long)(after.frees - before.frees), frees);
  uint64_t reuses = after.foreign_reuses - before.foreign_reuses;
  if (foreign_reuse_on()) {
    CHECKF(reuses > 0, "%d threads: no malloc took back a foreign object", n);
  } else {
    CHECKF(reuses == 0, "%d threads: %llu foreign reuses with foreign reuse off", n,
           (unsigned long long)reuses);
    CHECKF(after.remote_frees - before.remote_frees == (uint64_t)remote,
           "%d threads: stats remote_frees +%llu, test %ld", n,
           (unsigned long long)(after.remote_frees - before.remote_frees), remote);
  }
  CHECKF(after.live_bytes == before.live_bytes, "%d threads: live bytes %llu -> %llu", n,
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  fprintf(stderr,
          "%d threads: %ld objects, %ld remote frees, %llu repatriations, %llu foreign "
          "reuses\n",
          n, mallocs, remote,
          (unsigned long long)(after.public_repatriations - before.public_repatriations),
          (unsigned long long)reuses);
}

int main(void) {
  ring_of(2, check_scaled(400000, 40000));
  ring_of(16, check_scaled(100000, 10000));
  return check_exit();
}
