/* The large-object cache under contention: splitting, merging, growing and moving spans
 * while other threads free next to them and one thread empties the cache.
 *
 * Workload: 8 threads (more than the cores of the test machines), released together by a
 * barrier, each doing R steps on 4 slots of its own (seed = thread id). A step picks a
 * slot; an empty slot gets malloc (sizes 160 KiB .. 6 MiB, log-uniform, so that requests
 * both fit cached spans and need them grown), calloc (must read zero wherever sampled) or
 * aligned_alloc (alignment 2, 4 or 8 MiB); a full slot is reallocated to a new random
 * size (in place, into the cached span after it, grown or moved by mremap: the prefix must
 * survive and the alignment of an aligned object too while realloc did not copy), freed,
 * or handed to a shared exchange slot whose previous object is freed (remote frees). Every
 * object carries a pattern (start, end, every 4 KiB) checked before it is freed or
 * reallocated. Thread 0 calls txalloc_collect() every 50 steps, flushing the cache while
 * the others take from it and put into it. Afterwards: no pattern broken, live bytes back
 * at their start value, and txalloc_collect() leaves the cache empty. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { THREADS = 8, SLOTS = 4, EXCHANGE = 6 };

typedef struct slot {
  test_obj o;
  size_t align; /* 0: malloc'd or calloc'd */
} slot;

static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static test_obj exchange[EXCHANGE];
static pthread_barrier_t start;

typedef struct worker {
  int id;
  long steps, bad, copies_lost_alignment;
} worker;

static size_t random_size(test_rng *r) {
  int k = 17 + (int)test_rng_below(r, 6); /* 160 KiB .. 6 MiB */
  size_t base = (size_t)1 << k;
  return base + base / 4 + (size_t)test_rng_below(r, base / 4 + 1);
}

static int zero_sampled(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096 + 64)
    if (p[i]) return 0;
  return p[n - 1] == 0;
}

static void allocate(worker *w, test_rng *r, slot *s, uint64_t tag) {
  size_t size = random_size(r);
  uint64_t how = test_rng_below(r, 4);
  size_t align = 0;
  void *p;
  if (how == 0) {
    p = txalloc_calloc(1, size);
    if (p && !zero_sampled(p, size)) w->bad++;
  } else if (how == 1) {
    align = (size_t)1 << (21 + test_rng_below(r, 3));
    p = txalloc_aligned_alloc(align, size);
    if (p && !test_is_aligned(p, align)) w->bad++;
  } else {
    p = txalloc_malloc(size);
  }
  if (!p) {
    w->bad++;
    return;
  }
  if (txalloc_usable_size(p) < size) w->bad++;
  test_fill(p, size, tag);
  *s = (slot){{p, size, tag}, align};
}

static void reallocate(worker *w, test_rng *r, slot *s, uint64_t tag) {
  size_t size = random_size(r);
  if (!test_check(s->o.p, s->o.size, s->o.tag)) w->bad++;
  size_t keep = s->o.size < size ? s->o.size : size;
  /* The prefix test_fill wrote at 0..255 and every 4 KiB below keep - 256 must survive. */
  unsigned char *q = txalloc_realloc(s->o.p, size);
  if (!q) {
    w->bad++;
    return;
  }
  for (size_t i = 0; i < 256 && i < keep; i++)
    if (q[i] != test_pattern_byte(s->o.tag, i)) {
      w->bad++;
      break;
    }
  for (size_t i = 4096; i + 256 < keep && i + 256 < s->o.size; i += 4096)
    if (q[i] != test_pattern_byte(s->o.tag, i)) {
      w->bad++;
      break;
    }
  /* realloc may copy into a plain malloc'd object (16-aligned): only then may the
   * alignment go; count those to make sure it is rare, never an error. */
  if (s->align && !test_is_aligned(q, s->align)) {
    w->copies_lost_alignment++;
    s->align = 0;
  }
  test_fill(q, size, tag);
  s->o = (test_obj){q, size, tag};
}

static void *run(void *arg) {
  worker *w = (worker *)arg;
  test_rng rng = {(uint64_t)w->id * 131 + 7};
  slot slots[SLOTS] = {{{0}, 0}};
  uint64_t seq = 0;
  pthread_barrier_wait(&start);
  for (long step = 0; step < w->steps; step++) {
    slot *s = &slots[test_rng_below(&rng, SLOTS)];
    uint64_t tag = ((uint64_t)(w->id + 1) << 40) | seq++;
    uint64_t action = test_rng_below(&rng, 10);
    if (!s->o.p) {
      allocate(w, &rng, s, tag);
    } else if (action < 4) {
      reallocate(w, &rng, s, tag);
    } else if (action < 7) {
      test_obj_free(&s->o, &w->bad);
    } else {
      test_obj other = test_exchange_swap(&exchange_lock, exchange,
                                          (int)test_rng_below(&rng, EXCHANGE), s->o, &w->bad);
      s->o = (test_obj){0};
      test_obj_free(&other, &w->bad);
    }
    if (w->id == 0 && step % 50 == 49) txalloc_collect();
  }
  for (int i = 0; i < SLOTS; i++) test_obj_free(&slots[i].o, &w->bad);
  return NULL;
}

int main(void) {
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  worker w[THREADS];
  long steps = check_scaled(2500, 250);
  for (int i = 0; i < THREADS; i++) w[i] = (worker){.id = i, .steps = steps};
  pthread_barrier_init(&start, NULL, THREADS);
  test_run_threads(THREADS, run, w, sizeof w[0]);
  pthread_barrier_destroy(&start);
  long bad = 0, lost_alignment = 0;
  for (int e = 0; e < EXCHANGE; e++) test_obj_free(&exchange[e], &bad);
  for (int i = 0; i < THREADS; i++) {
    bad += w[i].bad;
    lost_alignment += w[i].copies_lost_alignment;
  }
  txalloc_stats_get(&after);
  CHECKF(bad == 0, "%ld large objects corrupted, not zeroed, misaligned or not allocated", bad);
  CHECKF(after.live_bytes == before.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  fprintf(stderr,
          "%d threads x %ld steps: %llu large mallocs, %llu cache hits, %llu mmaps, %llu munmaps, "
          "%ld aligned objects copied by realloc\n",
          THREADS, steps, (unsigned long long)(after.large_mallocs - before.large_mallocs),
          (unsigned long long)(after.large_cache_hits - before.large_cache_hits),
          (unsigned long long)(after.os_maps - before.os_maps),
          (unsigned long long)(after.os_unmaps - before.os_unmaps), lost_alignment);
  CHECK(after.large_cache_hits > before.large_cache_hits);
  txalloc_collect();
  txalloc_stats_get(&after);
  CHECK(after.large_cache_bytes == 0);
  return check_exit();
}
