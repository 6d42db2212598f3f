// labels: nothreads
/* txalloc_malloc, txalloc_free and txalloc_usable_size on their own.
 *
 * Workload: every size from 0 to 4 KiB, then sizes around every power of two up to 16 MiB
 * (2^k - 1, 2^k, 2^k + 1, 2^k + 2^(k-3)); for each, one object is allocated, checked (16-byte
 * alignment, usable size >= requested, usable size stable, owner_of says ours), filled with
 * its pattern over its whole usable size, and kept live until every size has been
 * allocated, so that overlapping objects would corrupt each other's pattern. Then
 * malloc(0) (unique and freeable), free(NULL) and usable_size(NULL), and a
 * malloc/free/malloc cycle of each size (reuse must not corrupt). */
#include <errno.h>
#include <stdint.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

typedef struct live {
  void *p;
  size_t size, usable;
} live;

static size_t sizes[8192];
static size_t nsizes;

static void add_size(size_t s) {
  if (nsizes < sizeof sizes / sizeof sizes[0]) sizes[nsizes++] = s;
}

int main(void) {
  for (size_t s = 0; s <= 4096; s++) add_size(s);
  for (int k = 13; k <= 24; k++) {
    size_t p = (size_t)1 << k;
    add_size(p - 1);
    add_size(p);
    add_size(p + 1);
    add_size(p + (p >> 3));
  }

  static live objs[8192];
  for (size_t i = 0; i < nsizes; i++) {
    size_t s = sizes[i];
    void *p = txalloc_malloc(s);
    CHECKF(p != NULL, "malloc(%zu) returned NULL", s);
    if (!p) continue;
    CHECKF(test_is_aligned(p, 16), "malloc(%zu) = %p not 16-aligned", s, p);
    size_t u = txalloc_usable_size(p);
    CHECKF(u >= s, "usable_size(malloc(%zu)) = %zu", s, u);
    CHECKF(txalloc_usable_size(p) == u, "usable size changed for %p", p);
    txalloc_owner o = txalloc_owner_of(p);
    CHECKF(o == TXALLOC_SMALL || o == TXALLOC_LARGE, "owner_of(malloc(%zu)) = %d", s, (int)o);
    test_fill(p, u, (uint64_t)i + 1);
    objs[i] = (live){p, s, u};
  }
  /* All live together: no object may have been overwritten by another. */
  for (size_t i = 0; i < nsizes; i++) {
    if (!objs[i].p) continue;
    CHECKF(test_check(objs[i].p, objs[i].usable, (uint64_t)i + 1),
           "object of size %zu at %p corrupted", objs[i].size, objs[i].p);
  }
  for (size_t i = 0; i < nsizes; i++) txalloc_free(objs[i].p);

  /* malloc(0): a unique, freeable, 16-aligned pointer each time. */
  enum { ZEROS = 64 };
  void *z[ZEROS];
  for (int i = 0; i < ZEROS; i++) {
    z[i] = txalloc_malloc(0);
    CHECK(z[i] != NULL);
    CHECK(test_is_aligned(z[i], 16));
    for (int j = 0; j < i; j++) CHECKF(z[i] != z[j], "malloc(0) returned %p twice", z[i]);
  }
  for (int i = 0; i < ZEROS; i++) txalloc_free(z[i]);

  /* free(NULL) does nothing and leaves errno alone; usable_size(NULL) is 0. */
  errno = 1234;
  txalloc_free(NULL);
  CHECK(errno == 1234);
  CHECK(txalloc_usable_size(NULL) == 0);

  /* Reuse: a freed slot handed out again holds a fresh object whose pattern survives. */
  for (size_t i = 0; i < nsizes; i += 7) {
    void *a = txalloc_malloc(sizes[i]);
    CHECK(a != NULL);
    if (!a) continue;
    test_fill(a, sizes[i], 7);
    txalloc_free(a);
    void *b = txalloc_malloc(sizes[i]);
    void *c = txalloc_malloc(sizes[i]);
    CHECK(b != NULL && c != NULL && b != c);
    if (b && c) {
      test_fill(b, sizes[i], 11);
      test_fill(c, sizes[i], 13);
      CHECKF(test_check(b, sizes[i], 11) && test_check(c, sizes[i], 13),
             "objects of size %zu overlap (%p, %p)", sizes[i], b, c);
    }
    txalloc_free(b);
    txalloc_free(c);
  }
  return check_exit();
}
