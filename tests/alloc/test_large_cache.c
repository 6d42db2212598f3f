/* The large-object cache, one mechanism at a time, from a single thread (each step starts
 * from an empty cache: txalloc_collect()):
 *   (1) a larger cached span serves a smaller request at its start, without mmap; the
 *       rest stays cached and serves a second request right after it; both freed, the
 *       pieces merge, and the whole span serves a request of nearly its size;
 *   (2) a cached span smaller than the request is grown (a cache hit, no fresh mapping of
 *       the whole size), and calloc on such dirty, grown memory returns zeros;
 *   (3) double frees are still reported after reuse: an object carved from a reused span,
 *       freed twice; an object whose span merged into its neighbour's, freed twice;
 *   (4) realloc growth of an aligned object to 48 MiB while neighbours are allocated: no
 *       step copies (no new large allocation), contents and the alignment are kept, a
 *       moved object's old address reads "not ours";
 *   (5) realloc shrink gives the tail to the cache, where the next request finds it;
 *   (6) a working set of 48 x 8 MiB freed at once: the cache keeps more than
 *       large_cache_mb (half the peak of live large bytes, trimmed to whole
 *       granules), and txalloc_collect() empties it and unmaps every freed address. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

#define MIB ((size_t)1 << 20)

static txalloc_stats now(void) {
  txalloc_stats s;
  txalloc_stats_get(&s);
  return s;
}

static test_error_log errors;

static void expect_double_free(const char *what, void *p) {
  errors.reports = 0;
  txalloc_free(p);
  int reports = errors.reports, got = (int)errors.kind;
  CHECKF(test_error_one(&errors, TXALLOC_ERROR_DOUBLE_FREE, p),
         "%s: %d reports, kind %d (want one DOUBLE_FREE)", what, reports, got);
}

static void reuse_of_larger_span(void) {
  txalloc_collect();
  char *a = txalloc_malloc(8 * MIB - 64);
  CHECK(a != NULL);
  txalloc_free(a);
  txalloc_stats s0 = now();
  CHECKF(s0.large_cache_bytes == 8 * MIB, "cache holds %llu",
         (unsigned long long)s0.large_cache_bytes);
  char *b = txalloc_malloc(3 * MIB); /* 4 MiB span: the start of a's */
  char *c = txalloc_malloc(3 * MIB); /* the other 4 MiB */
  txalloc_stats s1 = now();
  CHECKF(b == a, "3 MiB request at %p, want the cached span's start %p", (void *)b, (void *)a);
  CHECKF(c == a + 4 * MIB, "second request at %p, want %p", (void *)c, (void *)(a + 4 * MIB));
  CHECK(s1.os_maps == s0.os_maps);
  CHECK(s1.large_cache_hits == s0.large_cache_hits + 2);
  CHECK(s1.large_cache_bytes == 0);
  CHECK(txalloc_usable_size(b) >= 3 * MIB && txalloc_usable_size(c) >= 3 * MIB);
  memset(b, 1, 3 * MIB);
  memset(c, 2, 3 * MIB);
  CHECK(b[3 * MIB - 1] == 1 && c[0] == 2);
  txalloc_free(c);
  txalloc_free(b);
  CHECK(now().large_cache_bytes == 8 * MIB);
  char *d = txalloc_malloc(7 * MIB + MIB / 2); /* needs the merged span */
  txalloc_stats s2 = now();
  CHECKF(d == a, "request of the merged span's size at %p, want %p", (void *)d, (void *)a);
  CHECK(s2.os_maps == s0.os_maps);
  txalloc_free(d);
}

static void growth_of_smaller_span(void) {
  txalloc_collect();
  char *a = txalloc_malloc(6 * MIB);
  CHECK(a != NULL);
  memset(a, 0x5a, 6 * MIB);
  txalloc_free(a);
  txalloc_stats s0 = now();
  char *z = txalloc_calloc(1, 10 * MIB); /* the 7 MiB span grown to 11 MiB */
  txalloc_stats s1 = now();
  CHECK(z != NULL);
  CHECK(s1.large_cache_hits == s0.large_cache_hits + 1);
  CHECK(s1.large_cache_bytes == 0);
  size_t nonzero = 0;
  for (size_t i = 0; i < 10 * MIB; i += 512) nonzero += z[i] != 0;
  nonzero += z[10 * MIB - 1] != 0;
  CHECKF(nonzero == 0, "calloc from a grown dirty span: %zu non-zero samples", nonzero);
  CHECK(txalloc_owner_of(z + 10 * MIB - 1) == TXALLOC_LARGE);
  txalloc_free(z);
}

static void double_free_after_reuse(void) {
  txalloc_collect();
  txalloc_error_fn old = txalloc_set_error_hook(test_error_record, &errors);
  char *a = txalloc_malloc(8 * MIB - 64);
  txalloc_free(a);
  char *b = txalloc_malloc(2 * MIB); /* carved from a's span */
  CHECK(b == a);
  txalloc_free(b);
  expect_double_free("reused then freed twice", b);
  char *c = txalloc_malloc(2 * MIB); /* b's span again */
  char *d = txalloc_malloc(2 * MIB); /* right after c */
  CHECK(c == a && d == a + 3 * MIB);
  txalloc_free(c);
  txalloc_free(d); /* merges into c's cached span */
  expect_double_free("freed twice after its span merged", d);
  expect_double_free("first of the merged span freed twice", c);
  txalloc_set_error_hook(old, NULL);
  char *e = txalloc_malloc(5 * MIB); /* the allocator still works, from the merged span */
  CHECK(e == a);
  txalloc_free(e);
}

static void fill_sparse(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)(i >> 12) ^ 0xa5;
}
static size_t check_sparse(const unsigned char *p, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i += 4096) bad += p[i] != ((unsigned char)(i >> 12) ^ 0xa5);
  return bad;
}

static void realloc_growth_keeps_contents_and_alignment(void) {
  txalloc_collect();
  enum { NEIGHBOURS = 12 };
  void *neighbour[NEIGHBOURS];
  const size_t align = 4 * MIB;
  size_t size = 300 << 10;
  unsigned char *p = txalloc_aligned_alloc(align, size);
  CHECK(p != NULL && test_is_aligned(p, align));
  fill_sparse(p, size);
  txalloc_stats s0 = now();
  int moved = 0, lost = 0, steps = 0;
  for (int i = 0; size < 48 * MIB; i++) {
    size_t next = size * 3 / 2;
    unsigned char *q = txalloc_realloc(p, next);
    CHECKF(q != NULL, "realloc %zu -> %zu", size, next);
    if (!q) return;
    steps++;
    size_t bad = check_sparse(q, size);
    CHECKF(bad == 0, "%zu pages lost growing %zu -> %zu", bad, size, next);
    CHECKF(test_is_aligned(q, align), "grown object at %p lost its %zu alignment", (void *)q,
           align);
    if (q != p) {
      moved++;
      if (txalloc_owner_of(p) != TXALLOC_NOT_OURS) lost++;
    }
    p = q;
    size = next;
    fill_sparse(p, size);
    if (i < NEIGHBOURS) neighbour[i] = txalloc_malloc(2 * MIB); /* blocks growth in place */
  }
  txalloc_stats s1 = now();
  /* Every neighbour is one large malloc; a copying realloc would add more. */
  CHECKF(s1.large_mallocs - s0.large_mallocs == NEIGHBOURS, "%llu large mallocs for %d neighbours",
         (unsigned long long)(s1.large_mallocs - s0.large_mallocs), NEIGHBOURS);
  CHECKF(lost == 0, "%d old addresses still read LARGE after a move", lost);
  fprintf(stderr, "realloc: %d steps to %zu bytes, moved %d times\n", steps, size, moved);
  txalloc_free(p);
  for (int i = 0; i < NEIGHBOURS; i++) txalloc_free(neighbour[i]);
}

static void realloc_shrink_feeds_cache(void) {
  txalloc_collect();
  char *p = txalloc_malloc(16 * MIB - 64);
  memset(p, 3, 16 * MIB - 64);
  char *q = txalloc_realloc(p, 2 * MIB); /* 3 MiB kept, 13 MiB to the cache */
  CHECK(q == p);
  CHECK(q[2 * MIB - 1] == 3);
  CHECKF(now().large_cache_bytes == 13 * MIB, "cache after shrink: %llu",
         (unsigned long long)now().large_cache_bytes);
  txalloc_stats s0 = now();
  char *r = txalloc_malloc(12 * MIB);
  CHECK(r == p + 3 * MIB);
  CHECK(now().os_maps == s0.os_maps);
  txalloc_free(r);
  txalloc_free(q);
}

static void adaptive_bound_and_collect(void) {
  txalloc_collect();
  enum { N = 48 };
  char *obj[N];
  for (int i = 0; i < N; i++) {
    obj[i] = txalloc_malloc(8 * MIB - 64);
    CHECK(obj[i] != NULL);
  }
  for (int i = 0; i < N; i++) txalloc_free(obj[i]);
  txalloc_stats s = now();
  /* Peak 48 x 8 MiB = 384 MiB live: half is 192 MiB, more than the default 64. */
  CHECKF(s.large_cache_bytes > 64 * MIB && s.large_cache_bytes <= 192 * MIB,
         "cache holds %llu MiB after a 384 MiB working set",
         (unsigned long long)(s.large_cache_bytes >> 20));
  uint64_t committed = s.committed_bytes;
  txalloc_collect();
  s = now();
  CHECK(s.large_cache_bytes == 0);
  CHECKF(committed - s.committed_bytes >= 64 * MIB, "collect released only %llu MiB",
         (unsigned long long)((committed - s.committed_bytes) >> 20));
  int ours = 0;
  for (int i = 0; i < N; i++) ours += txalloc_owner_of(obj[i]) != TXALLOC_NOT_OURS;
  CHECKF(ours == 0, "%d freed addresses still ours after collect", ours);
}

int main(void) {
  reuse_of_larger_span();
  growth_of_smaller_span();
  double_free_after_reuse();
  realloc_growth_keeps_contents_and_alignment();
  realloc_shrink_feeds_cache();
  adaptive_bound_and_collect();
  return check_exit();
}
