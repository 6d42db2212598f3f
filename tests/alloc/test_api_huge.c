/* Requests no machine can serve: every entry point returns NULL with errno ENOMEM (or
 * posix_memalign returns ENOMEM), never crashes, never returns a small object because a
 * size computation wrapped around.
 *
 * Workload: sizes SIZE_MAX - k for k in 0..4200 (every rounding step of the size classes,
 * the page and the huge-page rounding near the top), SIZE_MAX / 2 + 1, PTRDIFF_MAX,
 * 2^47 (beyond the x86-64 user address space) and 2^47 + 2^46, through malloc, calloc(1, n),
 * realloc(p, n), realloc(NULL, n), every aligned entry point (alignment 16 and 1 MiB),
 * valloc and pvalloc. Afterwards normal allocation still works and the stats counted no
 * object for the failures. */
#include <errno.h>
#include <stdint.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static int failures_ok(size_t n, void *(*fn)(size_t), const char *name) {
  errno = 0;
  void *p = fn(n);
  if (p != NULL || errno != ENOMEM) {
    fprintf(stderr, "%s(%zu) = %p errno %d, want NULL/ENOMEM\n", name, n, p, errno);
    txalloc_free(p);
    return 0;
  }
  return 1;
}

static void *do_calloc(size_t n) { return txalloc_calloc(1, n); }
static void *do_calloc_rev(size_t n) { return txalloc_calloc(n, 1); }
static void *do_realloc_null(size_t n) { return txalloc_realloc(NULL, n); }
static void *do_aligned16(size_t n) { return txalloc_aligned_alloc(16, n); }
static void *do_aligned1m(size_t n) { return txalloc_aligned_alloc((size_t)1 << 20, n); }
static void *do_memalign4k(size_t n) { return txalloc_memalign(4096, n); }
static void *do_posix(size_t n) {
  void *out = (void *)0x99;
  int rc = txalloc_posix_memalign(&out, 64, n);
  if (rc == 0) return out;
  if (out != (void *)0x99) return (void *)0x1; /* *out must be left alone on failure */
  errno = rc;
  return NULL;
}
static void *do_posix1m(size_t n) {
  void *out = (void *)0x99;
  int rc = txalloc_posix_memalign(&out, (size_t)1 << 20, n);
  if (rc == 0) return out;
  if (out != (void *)0x99) return (void *)0x1;
  errno = rc;
  return NULL;
}

int main(void) {
  struct {
    void *(*fn)(size_t);
    const char *name;
  } entries[] = {
      {txalloc_malloc, "malloc"},
      {do_calloc, "calloc(1, n)"},
      {do_calloc_rev, "calloc(n, 1)"},
      {do_realloc_null, "realloc(NULL, n)"},
      {do_aligned16, "aligned_alloc(16, n)"},
      {do_aligned1m, "aligned_alloc(1 MiB, n)"},
      {do_memalign4k, "memalign(4096, n)"},
      {do_posix, "posix_memalign(64, n)"},
      {do_posix1m, "posix_memalign(1 MiB, n)"},
      {txalloc_valloc, "valloc"},
      {txalloc_pvalloc, "pvalloc"},
  };
  size_t singles[] = {SIZE_MAX / 2 + 1,
                      (size_t)PTRDIFF_MAX,
                      (size_t)PTRDIFF_MAX + 1,
                      (size_t)1 << 47,
                      ((size_t)1 << 47) + ((size_t)1 << 46),
                      (size_t)1 << 50,
                      (size_t)1 << 63};
  txalloc_stats before, after;
  txalloc_stats_get(&before);

  for (size_t e = 0; e < sizeof entries / sizeof entries[0]; e++) {
    int bad = 0;
    for (size_t k = 0; k <= 4200 && bad < 5; k++) {
      if (!failures_ok(SIZE_MAX - k, entries[e].fn, entries[e].name)) bad++;
    }
    for (size_t i = 0; i < sizeof singles / sizeof singles[0]; i++)
      if (!failures_ok(singles[i], entries[e].fn, entries[e].name)) bad++;
    CHECKF(bad == 0, "%s: %d huge requests did not fail with ENOMEM", entries[e].name, bad);
  }

  /* realloc of a live object to a huge size: NULL, ENOMEM, the object intact. */
  unsigned char *p = txalloc_malloc(200);
  CHECK(p != NULL);
  test_fill(p, 200, 77);
  for (size_t k = 0; k <= 4200; k += 1 + k / 64) {
    errno = 0;
    void *q = txalloc_realloc(p, SIZE_MAX - k);
    CHECKF(q == NULL && errno == ENOMEM, "realloc(p, SIZE_MAX - %zu) = %p errno %d", k, q, errno);
  }
  for (size_t i = 0; i < sizeof singles / sizeof singles[0]; i++) {
    errno = 0;
    void *q = txalloc_realloc(p, singles[i]);
    CHECKF(q == NULL && errno == ENOMEM, "realloc(p, %zu) = %p errno %d", singles[i], q, errno);
  }
  CHECK(test_check(p, 200, 77));

  /* The allocator still works, and the failures created no objects. */
  void *small = txalloc_malloc(32), *large = txalloc_malloc((size_t)4 << 20);
  CHECK(small != NULL && large != NULL);
  txalloc_free(small);
  txalloc_free(large);
  txalloc_free(p);
  txalloc_stats_get(&after);
  CHECKF(after.mallocs - before.mallocs == 3, "mallocs grew by %llu, want 3",
         (unsigned long long)(after.mallocs - before.mallocs));
  CHECKF(after.frees - before.frees == 3, "frees grew by %llu, want 3",
         (unsigned long long)(after.frees - before.frees));
  return check_exit();
}
