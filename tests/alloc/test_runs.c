// labels: nothreads
/* Runs (src/alloc/runs.c), one mechanism at a time, from a single thread whose heap
 * has an arena of its own (nothing else of this process allocates runs):
 *   (1) realloc grows a run into the free units after it, in place; with a neighbour
 *       allocated there it moves, keeping the contents; shrinking stays in place and the
 *       freed tail serves the next request that fits; a growth by a small step takes a
 *       quarter more units, which the next small steps use without changing the run, and
 *       a request a little below the run keeps it, where a large one takes what it needs;
 *   (2) freed runs coalesce and serve requests of other sizes: a working set of one mix of
 *       sizes, freed in random order, then one of another mix, commits no more memory;
 *   (3) calloc on reused (dirty) runs reads zero over the whole usable size;
 *   (4) objects of one size allocated in a row start on different lines of their pages
 *       (odd run lengths and colours, with placement on);
 *   (5) errors: a second free is a double free; an interior pointer, a pointer into a
 *       chunk's map and a freed run's interior are invalid pointers; realloc
 *       reports the same and returns NULL;
 *   (6) the thread's cache: a freed run of 3 KiB is not cut for a shorter request, and
 *       serves the thread's next request of as many units, at its address; a second free of it
 * while cached, and a realloc, are double frees; after txalloc_collect gave it back to its chunk, a
 * free is still reported; (7) chunks whose runs are all free are decommitted beyond the two kept,
 * and txalloc_collect decommits those too; a program that then allocates and frees one object in a
 * loop reuses a kept chunk: no decommit, no commit, per iteration. */
#include "alloc/layout.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

#define KIB ((size_t)1024)
#define MIB ((size_t)1 << 20)

/* Every byte, so that any prefix can be checked (test_fill writes a sparse pattern). */
static void fill_all(char *p, size_t n, uint64_t tag) {
  for (size_t i = 0; i < n; i++) p[i] = (char)test_pattern_byte(tag, i);
}
static bool prefix_intact(const char *p, size_t n, uint64_t tag) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (char)test_pattern_byte(tag, i)) return false;
  return true;
}

static txalloc_stats now(void) {
  txalloc_stats s;
  txalloc_stats_get(&s);
  return s;
}

static test_error_log errors;

static void expect_report(const char *what, txalloc_error_kind kind, void *p) {
  errors.reports = 0;
  txalloc_free(p);
  int reports = errors.reports, got = (int)errors.kind;
  CHECKF(test_error_one(&errors, kind, p), "%s: %d reports, kind %d (want one of kind %d)", what,
         reports, got, (int)kind);
}

static void resize_in_place(void) {
  char *a = txalloc_malloc(9 * KIB);
  CHECK(a != NULL && txalloc_owner_of(a) == TXALLOC_SMALL);
  fill_all(a, 9 * KIB, 1);
  char *grown = txalloc_realloc(a, 100 * KIB);
  CHECKF(grown == a, "realloc(9 KiB -> 100 KiB) moved: %p -> %p (free pages follow it)", (void *)a,
         (void *)grown);
  CHECK(prefix_intact(grown, 9 * KIB, 1) && txalloc_usable_size(grown) >= 100 * KIB);
  fill_all(grown, 100 * KIB, 2);

  char *shrunk = txalloc_realloc(grown, 20 * KIB);
  CHECKF(shrunk == grown && txalloc_usable_size(shrunk) < 24 * KIB,
         "realloc(100 KiB -> 20 KiB): %p (was %p), usable %zu", (void *)shrunk, (void *)grown,
         txalloc_usable_size(shrunk));
  CHECK(prefix_intact(shrunk, 20 * KIB, 2));
  /* The tail it gave back is the shortest free run that fits a 60 KiB request. */
  char *b = txalloc_malloc(60 * KIB);
  CHECKF(b > shrunk && b < shrunk + 100 * KIB, "malloc(60 KiB) = %p, not in the tail of %p",
         (void *)b, (void *)shrunk);

  /* b now follows the object: growing past it must move, keeping the contents. */
  char *moved = txalloc_realloc(shrunk, 128 * KIB);
  CHECKF(moved != NULL && moved != shrunk, "realloc into an allocated neighbour: %p",
         (void *)moved);
  CHECK(moved && prefix_intact(moved, 20 * KIB, 2));
  txalloc_free(moved);
  txalloc_free(b);
}

/* A buffer grown by 64-byte steps from 8 KiB, with free units after it. */
static void small_steps(void) {
  char *a = txalloc_malloc(8 * KIB);
  CHECK(a != NULL);
  size_t start = txalloc_usable_size(a);
  fill_all(a, start, 3);
  char *grown = txalloc_realloc(a, start + 64);
  size_t roomy = txalloc_usable_size(grown);
  CHECKF(grown == a && roomy >= start + start / 5,
         "realloc(%zu -> %zu): %p (was %p), usable %zu: no headroom", start, start + 64,
         (void *)grown, (void *)a, roomy);
  CHECK(prefix_intact(grown, start, 3));
  for (size_t size = start + 128; size <= roomy; size += 64) {
    char *q = txalloc_realloc(grown, size);
    CHECKF(q == grown && txalloc_usable_size(q) == roomy,
           "realloc(%zu) within the headroom: %p, "
           "usable %zu (was %zu)",
           size, (void *)q, txalloc_usable_size(q), roomy);
  }
  /* A little below the run: kept whole; far below: the tail goes back. */
  CHECK(txalloc_realloc(grown, roomy - roomy / 8) == grown && txalloc_usable_size(grown) == roomy);
  CHECK(txalloc_realloc(grown, roomy / 2) == grown && txalloc_usable_size(grown) < roomy / 2 + KIB);
  /* A large growth takes what it needs, no headroom. */
  char *big = txalloc_realloc(grown, 64 * KIB);
  CHECKF(big == grown && txalloc_usable_size(big) < 64 * KIB + 2 * 256,
         "realloc(64 KiB): %p (was %p), usable %zu", (void *)big, (void *)grown,
         txalloc_usable_size(big));
  CHECK(prefix_intact(big, roomy / 2, 3));
  txalloc_free(big);
}

static void reuse_across_sizes(void) {
  enum { N = 400 };
  void *p[N];
  test_rng rng = {7};
  size_t pages = 0;
  for (int i = 0; i < N / 2; i++) {
    size_t size = 9 * KIB + test_rng_below(&rng, 40 * KIB);
    p[i] = txalloc_malloc(size);
    pages += (size + 4095) / 4096;
  }
  size_t committed = now().committed_bytes;
  for (int i = N / 2 - 1; i > 0; i--) { /* free in random order */
    int j = (int)test_rng_below(&rng, (uint64_t)i + 1);
    void *t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  for (int i = 0; i < N / 2; i++) txalloc_free(p[i]);
  /* Another mix of as many pages: half in 25-page objects, the rest in 3-page ones. */
  int n = 0;
  for (size_t taken = 0; taken + 25 <= pages / 2; taken += 25) p[n++] = txalloc_malloc(100 * KIB);
  for (size_t taken = (size_t)n * 25; taken + 3 <= pages && n < N; taken += 3)
    p[n++] = txalloc_malloc(10 * KIB);
  /* Without reuse across sizes it would need about as much again; a chunk of slack for
   * how the runs pack. */
  CHECKF(now().committed_bytes <= committed + MIB,
         "committed %zu KiB with the first mix, %zu KiB with the second (%d objects)",
         committed / KIB, now().committed_bytes / KIB, n);
  for (int i = 0; i < n; i++) txalloc_free(p[i]);
}

static void calloc_reused(void) {
  char *dirty[8];
  for (int i = 0; i < 8; i++) {
    dirty[i] = txalloc_malloc(50 * KIB);
    memset(dirty[i], 0xa5, txalloc_usable_size(dirty[i]));
  }
  for (int i = 0; i < 8; i++) txalloc_free(dirty[i]);
  for (int i = 0; i < 8; i++) {
    size_t size = 20 * KIB + (size_t)i * 1000;
    unsigned char *z = txalloc_calloc(1, size);
    size_t u = txalloc_usable_size(z);
    size_t nonzero = 0;
    for (size_t k = 0; k < u; k++) nonzero += z[k] != 0;
    CHECKF(nonzero == 0, "calloc(%zu) on reused runs: %zu of %zu bytes not zero", size, nonzero, u);
    txalloc_free(z);
  }
}

static void colours(void) {
  enum { N = 16 };
  void *p[N];
  unsigned seen = 0;
  bool offsets[4096 / 64] = {false};
  for (int i = 0; i < N; i++) {
    p[i] = txalloc_malloc(10 * KIB); /* 2 KiB of slack in its third page */
    unsigned line = (unsigned)(((uintptr_t)p[i] & 4095) / 64);
    if (!offsets[line]) seen++;
    offsets[line] = true;
  }
  CHECKF(seen >= 8, "16 objects of 10 KiB start on %u distinct lines of their pages", seen);
  for (int i = 0; i < N; i++) txalloc_free(p[i]);
}

static void errors_reported(void) {
  txalloc_error_fn old = txalloc_set_error_hook(test_error_record, &errors);
  char *a = txalloc_malloc(30 * KIB);
  char *b = txalloc_malloc(30 * KIB); /* keeps a's pages from merging with the chunk's rest */
  expect_report("interior pointer", TXALLOC_ERROR_INVALID_FREE, a + 64);
  expect_report("pointer into the map page", TXALLOC_ERROR_INVALID_FREE,
                (void *)((uintptr_t)a & ~(TXA_GRANULE - 1)));
  txalloc_free(a);
  expect_report("second free", TXALLOC_ERROR_DOUBLE_FREE, a);
  expect_report("freed run's interior", TXALLOC_ERROR_INVALID_FREE, a + 8 * KIB);
  errors.reports = 0;
  CHECK(txalloc_realloc(a, 40 * KIB) == NULL && errors.reports == 1 &&
        errors.kind == TXALLOC_ERROR_DOUBLE_FREE);
  CHECK(txalloc_usable_size(a) == 0 && txalloc_usable_size(b + 16) == 0 &&
        txalloc_usable_size(b) >= 30 * KIB);
  txalloc_free(b);
  txalloc_set_error_hook(old, NULL);
}

static void thread_cache(void) {
  txalloc_error_fn old = txalloc_set_error_hook(test_error_record, &errors);
  char *a = txalloc_malloc(3 * KIB);
  txalloc_free(a);
  /* Kept for its length: a shorter request, which its space would fit, is cut elsewhere. */
  char *shorter = txalloc_malloc(2 * KIB + 200);
  CHECKF(shorter != a, "malloc(2.2 KiB) took the cached run %p", (void *)a);
  char *b = txalloc_malloc(3 * KIB);
  CHECKF(b == a, "malloc(3 KiB) after a free of 3 KiB: %p, not the freed %p", (void *)b, (void *)a);
  fill_all(b, 3 * KIB, 7);
  txalloc_free(b);
  expect_report("second free of a cached run", TXALLOC_ERROR_DOUBLE_FREE, b);
  errors.reports = 0;
  CHECK(txalloc_realloc(b, 4 * KIB) == NULL && errors.reports == 1 &&
        errors.kind == TXALLOC_ERROR_DOUBLE_FREE);
  CHECK(txalloc_usable_size(b) == 0);
  txalloc_collect(); /* gives the run back to its chunk, where it may merge */
  errors.reports = 0;
  txalloc_free(b);
  CHECKF(errors.reports == 1, "free of a run the cache gave back: %d reports", errors.reports);
  txalloc_free(shorter);
  txalloc_set_error_hook(old, NULL);
}

static void empty_chunks_decommitted(void) {
  enum { N = 64 };
  void *p[N];
  /* A chunk's map stays committed: the chunks this needs exist before the baseline. */
  for (int i = 0; i < N; i++) p[i] = txalloc_malloc(100 * KIB);
  for (int i = N - 1; i >= 0; i--) txalloc_free(p[i]);
  txalloc_collect();
  size_t before = now().committed_bytes;
  for (int i = 0; i < N; i++) p[i] = txalloc_malloc(100 * KIB); /* 7+ chunks */
  for (int i = N - 1; i >= 0; i--) txalloc_free(p[i]);          /* the oldest chunk empties last */
  size_t kept = now().committed_bytes - before;
  CHECKF(kept <= 2 * MIB, "%zu KiB still committed after freeing every run (two chunks kept)",
         kept / KIB);
  txalloc_stats edge = now();
  for (int i = 0; i < 100; i++) txalloc_free(txalloc_malloc(100 * KIB));
  CHECKF(now().spans_decommitted == edge.spans_decommitted &&
             now().committed_bytes == edge.committed_bytes,
         "malloc/free at an empty chunk: %llu decommits, committed %zu -> %zu KiB",
         (unsigned long long)(now().spans_decommitted - edge.spans_decommitted),
         (size_t)edge.committed_bytes / KIB, (size_t)now().committed_bytes / KIB);
  txalloc_collect();
  CHECKF(now().committed_bytes <= before, "after txalloc_collect: %zu, before the runs: %zu",
         now().committed_bytes, before);
}

int main(void) {
  resize_in_place();
  small_steps();
  reuse_across_sizes();
  calloc_reused();
  colours();
  errors_reported();
  thread_cache();
  empty_chunks_decommitted();
  CHECK(now().live_bytes < 64 * KIB); /* every run's bytes were counted back */
  return check_exit();
}
