/* txalloc_collect returns committed memory to the OS, and memory stays usable after.
 *
 * Workload: (1) the main thread allocates 48 MiB of small objects (64 B and 1 KiB) and 32
 * large objects of 1 MiB, frees them all and calls txalloc_collect(): committed_bytes must
 * drop by most of what was allocated (at least 90 % of the peak growth), the large-object
 * cache must be empty and spans_decommitted must have grown. (2) A thread allocates 32 MiB
 * of small objects and exits with them live (abandoned blocks); the main thread frees them
 * all remotely and calls txalloc_collect(): the now empty abandoned blocks are returned
 * too. (3) Allocating again after collect works and the patterns hold (decommitted memory
 * is committed again on use). */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { MIB = 1 << 20 };

typedef struct objs {
  void **p;
  size_t n, size;
} objs;

static objs make(size_t total, size_t size) {
  objs o = {calloc(total / size, sizeof(void *)), total / size, size};
  if (!o.p) exit(2);
  for (size_t i = 0; i < o.n; i++) {
    o.p[i] = txalloc_malloc(size);
    if (o.p[i]) memset(o.p[i], (int)(i & 0xff), size < 64 ? size : 64);
  }
  return o;
}

static size_t release(objs *o) {
  size_t missing = 0;
  for (size_t i = 0; i < o->n; i++) {
    if (!o->p[i]) missing++;
    txalloc_free(o->p[i]);
  }
  free(o->p);
  o->p = NULL;
  return missing;
}

static objs abandoned;
static void *allocate_and_exit(void *arg) {
  (void)arg;
  abandoned = make((size_t)32 * MIB, 128);
  return NULL;
}

static unsigned long long mib(uint64_t b) { return (unsigned long long)(b / MIB); }

int main(void) {
  txalloc_stats s0, s1, s2;
  txalloc_collect();
  txalloc_stats_get(&s0);

  /* (1) */
  objs a = make((size_t)24 * MIB, 64), b = make((size_t)24 * MIB, 1024);
  objs large = make((size_t)32 * MIB, MIB);
  txalloc_stats_get(&s1);
  size_t missing = release(&a) + release(&b) + release(&large);
  CHECK(missing == 0);
  txalloc_collect();
  txalloc_stats_get(&s2);
  uint64_t grown = s1.committed_bytes - s0.committed_bytes;
  fprintf(stderr, "committed: %llu MiB before, %llu MiB live, %llu MiB after collect\n",
          mib(s0.committed_bytes), mib(s1.committed_bytes), mib(s2.committed_bytes));
  CHECKF(s1.committed_bytes >= s0.committed_bytes + 80 * (uint64_t)MIB,
         "80 MiB of objects grew committed memory by only %llu MiB", mib(grown));
  CHECKF(s2.committed_bytes <= s0.committed_bytes + grown / 10,
         "collect left %llu MiB committed of %llu MiB grown",
         mib(s2.committed_bytes - s0.committed_bytes), mib(grown));
  CHECKF(s2.large_cache_bytes == 0, "large cache holds %llu bytes after collect",
         (unsigned long long)s2.large_cache_bytes);
  CHECK(s2.spans_decommitted > s1.spans_decommitted);
  CHECK(s2.live_bytes == s0.live_bytes);

  /* (2) */
  txalloc_stats_get(&s0);
  pthread_t t;
  if (pthread_create(&t, NULL, allocate_and_exit, NULL) != 0) return 2;
  pthread_join(t, NULL);
  txalloc_stats_get(&s1);
  CHECK(release(&abandoned) == 0);
  txalloc_collect();
  txalloc_stats_get(&s2);
  grown = s1.committed_bytes - s0.committed_bytes;
  fprintf(stderr,
          "abandoned: %llu MiB before, %llu MiB live, %llu MiB after remote frees + collect\n",
          mib(s0.committed_bytes), mib(s1.committed_bytes), mib(s2.committed_bytes));
  CHECKF(s2.committed_bytes <= s0.committed_bytes + grown / 10,
         "abandoned blocks emptied by remote frees: collect left %llu MiB of %llu MiB",
         mib(s2.committed_bytes - s0.committed_bytes), mib(grown));

  /* (3) */
  enum { N = 20000 };
  static void *p[N];
  for (int i = 0; i < N; i++) {
    size_t s = i % 1000 == 0 ? 2 * MIB : 16 + (size_t)(i % 64) * 16;
    p[i] = txalloc_malloc(s);
    CHECK(p[i] != NULL);
    if (p[i]) test_fill(p[i], s < 512 ? s : 512, (uint64_t)i);
  }
  int bad = 0;
  for (int i = 0; i < N; i++) {
    size_t s = i % 1000 == 0 ? 2 * MIB : 16 + (size_t)(i % 64) * 16;
    if (p[i] && !test_check(p[i], s < 512 ? s : 512, (uint64_t)i)) bad++;
    txalloc_free(p[i]);
  }
  CHECKF(bad == 0, "%d objects corrupted after collect", bad);
  return check_exit();
}
