// labels: nothreads
/* Memory goes back to the OS without txalloc_collect(): the decommit threshold, and a
 * disabled large-object cache. Options are set through the environment before the
 * allocator's first call: decommit_threshold_mb=4, decommit_delay_ms=1 day (so only the
 * threshold can trigger), large_cache_mb=0.
 *
 * Workload: (1) 64 MiB of 256-byte objects (4096 blocks) allocated, then freed in a
 * shuffled order (seed 5) so that blocks empty one by one and go to the store: the dirty
 * total passes 4 MiB many times, so blocks must be decommitted on the way (stats
 * spans_decommitted grows) and committed memory must end within the threshold (+2 MiB)
 * of where it started. (2) The same objects allocated
 * again: decommitted blocks are reused (from the store, not fresh memory: reserved bytes do not
 * grow) and their contents hold patterns. (3) 100 malloc/free pairs of 1 MiB: with the cache
 * disabled each free unmaps (os_unmaps +100, no cache hits, cache empty). */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { MIB = 1 << 20, SIZE = 256, N = 64 * MIB / SIZE };

static unsigned long long mib(uint64_t b) { return (unsigned long long)(b / MIB); }

int main(void) {
  setenv("TXALLOC_DECOMMIT_THRESHOLD_MB", "4", 1);
  setenv("TXALLOC_DECOMMIT_DELAY_MS", "86400000", 1);
  setenv("TXALLOC_LARGE_CACHE_MB", "0", 1);
  static void *p[N];
  static uint32_t order[N];
  txalloc_stats s0, s1, s2, s3;
  txalloc_stats_get(&s0);

  /* (1) */
  for (uint32_t i = 0; i < N; i++) {
    p[i] = txalloc_malloc(SIZE);
    CHECK(p[i] != NULL);
    order[i] = i;
  }
  txalloc_stats_get(&s1);
  test_rng rng = {5};
  for (uint32_t i = N - 1; i > 0; i--) {
    uint32_t j = (uint32_t)test_rng_below(&rng, (uint64_t)i + 1);
    uint32_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (uint32_t i = 0; i < N; i++) txalloc_free(p[order[i]]);
  txalloc_stats_get(&s2);
  fprintf(stderr, "committed: %llu MiB at start, %llu MiB with 64 MiB live, %llu MiB after frees\n",
          mib(s0.committed_bytes), mib(s1.committed_bytes), mib(s2.committed_bytes));
  CHECKF(s2.spans_decommitted - s1.spans_decommitted >= 1000,
         "only %llu blocks decommitted past a 4 MiB threshold",
         (unsigned long long)(s2.spans_decommitted - s1.spans_decommitted));
  /* Decommit returns whole blocks (the store's links live outside them): what stays is the
   * threshold's worth of empty committed blocks, plus a little metadata. */
  uint64_t bound = s0.committed_bytes + 4 * (uint64_t)MIB + 2 * (uint64_t)MIB;
  CHECKF(s2.committed_bytes <= bound,
         "committed %llu MiB after freeing everything (start %llu MiB, bound %llu MiB)",
         mib(s2.committed_bytes), mib(s0.committed_bytes), mib(bound));

  /* (2) */
  for (uint32_t i = 0; i < N; i++) {
    p[i] = txalloc_malloc(SIZE);
    if (p[i]) test_fill(p[i], 64, i);
  }
  int bad = 0;
  for (uint32_t i = 0; i < N; i++) {
    if (!p[i] || !test_check(p[i], 64, i)) bad++;
    txalloc_free(p[i]);
  }
  txalloc_stats_get(&s3);
  CHECKF(bad == 0, "%d objects bad after reusing decommitted blocks", bad);
  CHECKF(s3.reserved_bytes == s2.reserved_bytes,
         "reserved grew %llu -> %llu MiB: blocks not reused", mib(s2.reserved_bytes),
         mib(s3.reserved_bytes));
  CHECK(s3.blocks_from_store - s2.blocks_from_store >= 1000);

  /* (3) */
  txalloc_stats_get(&s1);
  for (int i = 0; i < 100; i++) {
    char *big = txalloc_malloc(MIB);
    CHECK(big != NULL);
    if (big) big[MIB - 1] = 1;
    txalloc_free(big);
  }
  txalloc_stats_get(&s2);
  CHECKF(s2.os_unmaps - s1.os_unmaps >= 100, "large_cache_mb=0: %llu munmaps for 100 frees",
         (unsigned long long)(s2.os_unmaps - s1.os_unmaps));
  CHECK(s2.large_cache_hits == s1.large_cache_hits);
  CHECK(s2.large_cache_bytes == 0);
  return check_exit();
}
