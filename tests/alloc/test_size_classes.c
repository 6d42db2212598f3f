// labels: nothreads
/* The size classes as seen through the API (usable size): 16-byte steps at the bottom, at
 * most 12.5 % internal waste above 128 B (at most 15 B below), a monotonic mapping, and
 * a class of each power of two for aligned allocation, aligned to itself (McRT §3.1;
 * docs/allocator.md; malloc of a power of two is aligned to it only with placement off).
 * Above TXA_RUNS_MIN malloc serves runs of 256-byte units instead: less than two units and
 * a line of waste (placement rounds a run to an odd number of units with a line of slack),
 * in multiples of 64 (the usable size depends on the run's colour, so it is not
 * monotonic).
 *
 * Workload: every request size from 1 B to 128 KiB + 64 KiB (the largest class and the
 * first large objects), one malloc/usable_size/free each; then for every distinct class
 * 3 blocks' worth of objects allocated at once to check they are distinct and aligned to
 * the class's natural alignment (the largest power of two dividing the class size, capped
 * at 4 KiB here) — no object straddles its neighbour. */
#include "alloc/layout.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { LIMIT = 128 * 1024 };

static size_t natural_alignment(size_t size) { return size & (~size + 1); }

int main(void) {
  size_t prev_usable = 0, classes = 0;
  static size_t class_size[256];
  for (size_t n = 1; n <= LIMIT + 64 * 1024; n++) {
    void *p = txalloc_malloc(n);
    if (!p) {
      CHECKF(0, "malloc(%zu) = NULL", n);
      continue;
    }
    size_t u = txalloc_usable_size(p);
    txalloc_free(p);
    if (n > TXA_RUNS_MIN && n <= LIMIT) {
      CHECKF(u >= n && u - n < 2 * 256 + 64 && u % 64 == 0, "malloc(%zu): run, usable %zu", n, u);
      prev_usable = u;
      continue;
    }
    if (u < n || u < prev_usable) {
      CHECKF(0, "malloc(%zu): usable %zu (previous size: %zu)", n, u, prev_usable);
      continue;
    }
    if (n > LIMIT) continue; /* large objects: only >= and monotonic */
    CHECKF(u % 16 == 0, "malloc(%zu): usable %zu not a multiple of 16", n, u);
    if (n <= 128)
      CHECKF(u - n <= 15, "malloc(%zu): usable %zu wastes more than 15 B", n, u);
    else
      CHECKF((u - n) * 8 < u, "malloc(%zu): usable %zu wastes >= 12.5 %%", n, u);
    if (u != prev_usable && classes < 256) class_size[classes++] = u;
    if ((n & (n - 1)) == 0) {
      void *q = txalloc_aligned_alloc(n, n);
      CHECKF(q && test_is_aligned(q, n) && txalloc_usable_size(q) == (n < 16 ? 16 : n),
             "aligned_alloc(%zu, %zu) = %p: not aligned, or not its own class", n, n, q);
      txalloc_free(q);
    }
    prev_usable = u;
  }
  fprintf(stderr, "%zu classes up to %d bytes\n", classes, LIMIT);
  CHECKF(classes >= 40 && classes <= 120, "%zu classes", classes);

  /* Several blocks' worth of each class: distinct, aligned, intact. */
  for (size_t c = 0; c < classes; c++) {
    size_t size = class_size[c];
    size_t n = size <= 1024 ? 3 * 16384 / size + 1 : 3 * (1u << 20) / size + 1;
    if (n > 2000) n = 2000;
    void **p = calloc(n, sizeof *p);
    if (!p) return 2;
    size_t align = natural_alignment(size);
    if (align > 4096) align = 4096;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
      p[i] = txalloc_malloc(size);
      if (!p[i] || !test_is_aligned(p[i], align)) bad++;
      if (p[i]) test_fill(p[i], size, (uint64_t)i);
    }
    for (size_t i = 0; i < n; i++) {
      if (p[i] && !test_check(p[i], size, (uint64_t)i)) bad++;
      txalloc_free(p[i]);
    }
    free(p);
    CHECKF(bad == 0, "class %zu: %d of %zu objects misaligned, overlapping or missing", size, bad,
           n);
  }
  return check_exit();
}
