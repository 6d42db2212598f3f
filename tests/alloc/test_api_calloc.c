// labels: nothreads
/* txalloc_calloc: zeroed memory, also when it reuses dirty objects and cached large
 * spans, and overflow detection.
 *
 * Workload: for sizes from 1 B to 8 MiB, allocate with malloc, dirty every byte (0xA5),
 * free, then calloc the same total as count x size (several factorizations) a few times,
 * so the allocator reuses the dirty memory; every byte of the usable size must be zero.
 * Then overflow: count * size wrapping around SIZE_MAX returns NULL with errno ENOMEM for
 * every pair tried (and never a small object). calloc(0, n) and calloc(n, 0) return
 * unique freeable pointers. */
#include <errno.h>
#include <stdint.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static int all_zero(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

int main(void) {
  size_t totals[] = {1,    15,   16,    17,    48,    100,    256,    1000,    4096,
                     5000, 9000, 16384, 20000, 65536, 100000, 300000, 1 << 20, (size_t)8 << 20};
  enum { DIRTY = 64 };
  static void *dirty[DIRTY];
  for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++) {
    size_t total = totals[t];
    int ndirty = total > 100000 ? 4 : (int)check_scaled(DIRTY, 8);
    int rounds = (int)check_scaled(3, 1);
    for (int round = 0; round < rounds; round++) {
      for (int i = 0; i < ndirty; i++) {
        dirty[i] = txalloc_malloc(total);
        CHECK(dirty[i] != NULL);
        if (dirty[i]) memset(dirty[i], 0xA5, txalloc_usable_size(dirty[i]));
      }
      for (int i = 0; i < ndirty; i++) txalloc_free(dirty[i]);
      /* The same bytes as count x size, count chosen among the divisors tried. */
      size_t counts[] = {1, total % 2 == 0 ? 2 : 1, total % 16 == 0 ? 16 : 1, total};
      for (int i = 0; i < ndirty; i++) {
        size_t count = counts[i % 4];
        dirty[i] = txalloc_calloc(count, total / count);
        CHECKF(dirty[i] != NULL, "calloc(%zu, %zu) = NULL", count, total / count);
        if (!dirty[i]) continue;
        CHECK(test_is_aligned(dirty[i], 16));
        size_t u = txalloc_usable_size(dirty[i]);
        CHECK(u >= total);
        /* Every usable byte reads zero, not only the requested ones: a caller may use
         * malloc_usable_size bytes (glibc clears its whole chunk too). */
        CHECKF(all_zero(dirty[i], u), "calloc(%zu, %zu) = %p not zeroed (usable %zu)", count,
               total / count, dirty[i], u);
        memset(dirty[i], 0xA5, u); /* dirty again for the next round */
      }
      for (int i = 0; i < ndirty; i++) txalloc_free(dirty[i]);
    }
  }

  /* Overflow of count * size: NULL + ENOMEM. */
  struct {
    size_t count, size;
  } overflow[] = {
      {SIZE_MAX, 2},
      {2, SIZE_MAX},
      {SIZE_MAX, SIZE_MAX},
      {(size_t)1 << 32, (size_t)1 << 32},
      {((size_t)1 << 32) + 1, ((size_t)1 << 32) - 1 + 2},
      {SIZE_MAX / 16 + 1, 16},
      {3, SIZE_MAX / 3 + 1},
  };
  for (size_t i = 0; i < sizeof overflow / sizeof overflow[0]; i++) {
    errno = 0;
    void *p = txalloc_calloc(overflow[i].count, overflow[i].size);
    CHECKF(p == NULL && errno == ENOMEM, "calloc(%zu, %zu) = %p errno %d", overflow[i].count,
           overflow[i].size, p, errno);
    txalloc_free(p);
  }
  /* No overflow but too big to serve: also NULL + ENOMEM. */
  errno = 0;
  void *p = txalloc_calloc(SIZE_MAX / 64, 32);
  CHECK(p == NULL && errno == ENOMEM);

  /* Zero counts: unique, freeable. */
  void *a = txalloc_calloc(0, 100), *b = txalloc_calloc(100, 0), *c = txalloc_calloc(0, 0);
  CHECK(a && b && c && a != b && b != c && a != c);
  txalloc_free(a);
  txalloc_free(b);
  txalloc_free(c);
  return check_exit();
}
