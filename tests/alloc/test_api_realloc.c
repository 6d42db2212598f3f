// labels: nothreads
/* txalloc_realloc and txalloc_reallocarray, glibc semantics.
 *
 * Workload: (1) a chain of reallocs growing one object from 1 B to 16 MiB in steps of
 * x1.1..x2 (crossing every small class, the medium spans and the large mappings) and back
 * down to 1 B, the content's prefix checked after each step; (2) 64 objects realloc'd to
 * random sizes (seed 42) in an interleaved order, 20000 steps, each keeping
 * min(old, new) bytes of its pattern; (3) glibc rules: realloc(NULL, n) is malloc(n),
 * realloc(p, 0) frees p and returns NULL, realloc to the same or a smaller size keeps the
 * content; a failing realloc (huge size) returns NULL with ENOMEM and leaves the old
 * object intact and owned by the caller; (4) reallocarray overflow returns NULL with
 * ENOMEM and keeps the old object. */
#include <errno.h>
#include <stdint.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

/* A pattern in the first n bytes that depends only on the offset, so that a moved object
 * can be checked against its prefix whatever size it had when written. */
static void fill_prefix(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7u + seed + (i >> 8));
}
static size_t prefix_ok(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(i * 7u + seed + (i >> 8))) return 0;
  return 1;
}

int main(void) {
  /* (1) Growth and shrink chain. */
  {
    size_t size = 1;
    unsigned char *p = txalloc_malloc(size);
    CHECK(p != NULL);
    fill_prefix(p, size, 3);
    test_rng rng = {42};
    while (p && size < ((size_t)16 << 20)) {
      size_t next = size + 1 + (size_t)test_rng_below(&rng, size + 1);
      unsigned char *q = txalloc_realloc(p, next);
      CHECKF(q != NULL, "realloc(%zu -> %zu) = NULL", size, next);
      if (!q) break;
      CHECK(test_is_aligned(q, 16));
      CHECKF(txalloc_usable_size(q) >= next, "realloc to %zu: usable %zu", next,
             txalloc_usable_size(q));
      CHECKF(prefix_ok(q, size, 3), "content lost growing %zu -> %zu", size, next);
      fill_prefix(q, next, 3);
      p = q;
      size = next;
    }
    while (p && size > 1) {
      size_t next = size / 2 + (size_t)test_rng_below(&rng, size / 4 + 1);
      if (next >= size) next = size - 1;
      unsigned char *q = txalloc_realloc(p, next);
      CHECKF(q != NULL, "realloc(%zu -> %zu) = NULL", size, next);
      if (!q) break;
      CHECK(txalloc_usable_size(q) >= next);
      CHECKF(prefix_ok(q, next, 3), "content lost shrinking %zu -> %zu", size, next);
      p = q;
      size = next;
    }
    txalloc_free(p);
  }

  /* (2) Many objects, random sizes, interleaved. */
  {
    enum { N = 64 };
    unsigned char *obj[N] = {0};
    size_t size[N] = {0};
    test_rng rng = {42};
    long steps = check_scaled(20000, 2000);
    for (long s = 0; s < steps; s++) {
      int i = (int)test_rng_below(&rng, N);
      size_t next = test_rng_below(&rng, 10) == 0 ? 0 : test_rng_size(&rng, 300000);
      if (next == 0) {
        /* realloc(p, 0) frees (glibc); realloc(NULL, 0) is malloc(0). */
        unsigned char *q = txalloc_realloc(obj[i], 0);
        if (obj[i]) {
          CHECK(q == NULL);
        } else {
          CHECK(q != NULL);
          txalloc_free(q);
        }
        obj[i] = NULL;
        size[i] = 0;
        continue;
      }
      unsigned char *q = txalloc_realloc(obj[i], next);
      CHECKF(q != NULL, "realloc(%p, %zu) = NULL", (void *)obj[i], next);
      if (!q) continue;
      size_t keep = size[i] < next ? size[i] : next;
      CHECKF(prefix_ok(q, keep, (unsigned)i), "object %d lost content (%zu -> %zu)", i, size[i],
             next);
      fill_prefix(q, next, (unsigned)i);
      obj[i] = q;
      size[i] = next;
    }
    for (int i = 0; i < N; i++) {
      CHECK(prefix_ok(obj[i], size[i], (unsigned)i));
      txalloc_free(obj[i]);
    }
  }

  /* (3) glibc rules. */
  {
    unsigned char *p = txalloc_realloc(NULL, 100);
    CHECK(p != NULL && txalloc_usable_size(p) >= 100);
    fill_prefix(p, 100, 9);
    /* Same size and shrinking keep the content. */
    unsigned char *q = txalloc_realloc(p, 100);
    CHECK(q != NULL && prefix_ok(q, 100, 9));
    q = txalloc_realloc(q, 40);
    CHECK(q != NULL && prefix_ok(q, 40, 9));
    /* A failing realloc leaves the object alone. */
    size_t huge[] = {SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2 + 1, (size_t)1 << 62};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
      errno = 0;
      unsigned char *r = txalloc_realloc(q, huge[i]);
      CHECKF(r == NULL && errno == ENOMEM, "realloc(p, %zu) = %p errno %d", huge[i], (void *)r,
             errno);
      CHECK(prefix_ok(q, 40, 9));
      CHECK(txalloc_usable_size(q) >= 40);
    }
    /* realloc(p, 0): p is freed, NULL returned (glibc). */
    CHECK(txalloc_realloc(q, 0) == NULL);
    /* realloc(NULL, 0) is malloc(0): unique and freeable. */
    void *z = txalloc_realloc(NULL, 0);
    CHECK(z != NULL);
    txalloc_free(z);
  }

  /* (4) reallocarray. */
  {
    unsigned char *p = txalloc_reallocarray(NULL, 10, 10);
    CHECK(p != NULL && txalloc_usable_size(p) >= 100);
    fill_prefix(p, 100, 5);
    unsigned char *q = txalloc_reallocarray(p, 1000, 10);
    CHECK(q != NULL && txalloc_usable_size(q) >= 10000 && prefix_ok(q, 100, 5));
    fill_prefix(q, 10000, 5);
    struct {
      size_t count, size;
    } overflow[] = {{SIZE_MAX, 2}, {(size_t)1 << 33, (size_t)1 << 33}, {3, SIZE_MAX / 2}};
    for (size_t i = 0; i < sizeof overflow / sizeof overflow[0]; i++) {
      errno = 0;
      unsigned char *r = txalloc_reallocarray(q, overflow[i].count, overflow[i].size);
      CHECKF(r == NULL && errno == ENOMEM, "reallocarray(%zu, %zu) = %p errno %d",
             overflow[i].count, overflow[i].size, (void *)r, errno);
      CHECK(prefix_ok(q, 10000, 5)); /* the old object is still the caller's */
    }
    errno = 0;
    CHECK(txalloc_reallocarray(NULL, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    txalloc_free(q);
  }
  return check_exit();
}
