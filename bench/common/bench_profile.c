/* bench_profile.h: txmem's allocation profile in the bench programs. */
#include "bench_profile.h"

#include <stdint.h>

#include "txalloc/txmem.h"

/* Every program that links this file has its parallel region marked from the start, so the
 * profile's seq and par regions follow bench_run_threads and bench_run_timed. */
__attribute__((constructor)) static void mark_parallel_region(void) {
  bench_set_parallel_region(txmem_parallel_begin, txmem_parallel_end);
}

void bench_json_alloc_profile(bench_json *j) {
  txmem_profile p;
  txmem_profile_get(&p);
  bench_json_object(j, "alloc_profile");
  for (int r = 0; r < TXMEM_REGION_COUNT; r++) {
    const txmem_region_profile *rp = &p.region[r];
    bench_json_object(j, txmem_region_name((txmem_region)r));
    bench_json_uint(j, "mallocs", rp->mallocs);
    bench_json_uint(j, "frees", rp->frees);
    bench_json_uint(j, "bytes", rp->bytes);
    bench_json_object(j, "sizes");
    for (unsigned b = 0; b < TXMEM_PROFILE_BUCKETS; b++) {
      size_t limit = txmem_profile_bucket_limit(b);
      char key[24];
      if (limit == SIZE_MAX)
        snprintf(key, sizeof key, "larger");
      else
        snprintf(key, sizeof key, "%zu", limit);
      bench_json_uint(j, key, rp->sizes[b]);
    }
    bench_json_end(j);
    bench_json_end(j);
  }
  bench_json_end(j);
}
