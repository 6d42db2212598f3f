// labels: nothreads
/* realloc of large objects: in place within the mapping, growth of the mapping (mremap),
 * shrinking that gives the tail back, and the region map following every change.
 *
 * Workload: one object grown by realloc from 200 KiB to 32 MiB (one byte per 64 KiB written, to
 * keep the resident set small) in steps of x1.3..x2 while a second large object is allocated right
 * after each step (so in-place growth sometimes has to move); after each step: content kept (prefix
 * pattern), usable size >= size, owner_of(first and last byte) == LARGE, and the previous address,
 * if the object moved, is no longer a live object. Then shrinking back to 200 KiB in steps, same
 * checks, and to a medium (64 KiB) and a small (100 B) size: the object leaves the large kind.
 * Finally every large object is freed, txalloc_collect() empties the cache, and the last addresses
 * read as not ours. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static void fill_prefix(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i += 65536) p[i] = (unsigned char)(i / 65536 * 7 + 1);
  if (n) p[n - 1] = 0x5c;
}
static int prefix_ok(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i += 65536)
    if (p[i] != (unsigned char)(i / 65536 * 7 + 1)) return 0;
  return 1;
}

int main(void) {
  enum { MAX_NEIGHBOURS = 64 };
  void *neighbours[MAX_NEIGHBOURS];
  int nn = 0;
  test_rng rng = {77};
  size_t size = 200 << 10;
  unsigned char *p = txalloc_malloc(size);
  CHECK(p != NULL);
  fill_prefix(p, size);
  int moved = 0, steps = 0;
  while (p && size < ((size_t)32 << 20)) {
    size_t next = size + size * (3 + test_rng_below(&rng, 8)) / 10;
    unsigned char *q = txalloc_realloc(p, next);
    CHECKF(q != NULL, "realloc %zu -> %zu failed", size, next);
    if (!q) break;
    steps++;
    CHECKF(prefix_ok(q, size - 1), "content lost growing %zu -> %zu", size, next);
    CHECK(txalloc_usable_size(q) >= next);
    CHECK(txalloc_owner_of(q) == TXALLOC_LARGE);
    CHECKF(txalloc_owner_of(q + next - 1) == TXALLOC_LARGE, "last byte of %zu-byte object: %d",
           next, (int)txalloc_owner_of(q + next - 1));
    if (q != p) moved++;
    p = q;
    size = next;
    fill_prefix(p, size);
    if (nn < MAX_NEIGHBOURS && test_rng_below(&rng, 2) == 0) {
      neighbours[nn] = txalloc_malloc((size_t)300 << 10);
      CHECK(neighbours[nn] != NULL);
      nn++;
    }
  }
  fprintf(stderr, "grew to %zu bytes in %d steps, moved %d times\n", size, steps, moved);
  while (p && size > ((size_t)200 << 10)) {
    size_t next = size * (5 + test_rng_below(&rng, 4)) / 10;
    unsigned char *q = txalloc_realloc(p, next);
    CHECKF(q != NULL, "realloc %zu -> %zu failed", size, next);
    if (!q) break;
    CHECKF(prefix_ok(q, next - 1), "content lost shrinking %zu -> %zu", size, next);
    CHECK(txalloc_usable_size(q) >= next);
    CHECK(txalloc_owner_of(q + next - 1) == TXALLOC_LARGE);
    p = q;
    size = next;
    fill_prefix(p, size);
  }
  /* Down to medium and small sizes. */
  unsigned char *m = txalloc_realloc(p, 64 << 10);
  CHECK(m != NULL && prefix_ok(m, (64 << 10) - 1));
  unsigned char *s = m ? txalloc_realloc(m, 100) : NULL;
  CHECK(s != NULL && prefix_ok(s, 99));
  CHECK(s == NULL || txalloc_owner_of(s) == TXALLOC_SMALL);
  txalloc_free(s);

  txalloc_stats st;
  for (int i = 0; i < nn; i++) txalloc_free(neighbours[i]);
  txalloc_collect();
  txalloc_stats_get(&st);
  CHECK(st.large_cache_bytes == 0);
  int still_ours = 0;
  for (int i = 0; i < nn; i++)
    if (txalloc_owner_of(neighbours[i]) == TXALLOC_LARGE) still_ours++;
  CHECKF(still_ours == 0, "%d freed and collected large objects still classified LARGE",
         still_ours);
  return check_exit();
}
