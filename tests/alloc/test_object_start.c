/* The fast frees validate an address with txa_is_object_start (one multiplication and
 * one compare, layout.h) instead of a division, and filter double frees with a mask
 * (txa_may_be_free); this checks that the test is exact, that txalloc_free's owner path
 * (small and medium blocks) still reports bad and double frees, and that live objects the
 * filter doubts are freed without a report.
 *
 * Arithmetic: for every class in use, at its first and last colour, every address of a
 * small block (16 KiB) and, for medium spans (1 MiB), every address in the first 64 KiB and
 * the last 64 KiB and every 7th one between, compared with the definition: at or after
 * the first object, a whole number of object sizes from it, before the last object's end.
 *
 * Behaviour: for sizes 48 B (small) and 1500 B (medium), with neighbours kept live so that
 * the block stays the thread's own: a free of p + 8, of p + size - 16 and of the block
 * header is reported as an invalid free; a second free of p as a double free; each report
 * leaves the allocator working (the next allocations of the class are distinct and the
 * live bytes come back to where they started).
 *
 * Doubted live objects: for the same sizes, objects whose first word decodes (with their
 * block's key) to 8, or to 16 below the span size, pass the filter to the checked path;
 * freed by the owner and by another thread, none is reported and all are reused. */
#include "alloc/internal.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static bool is_start_by_definition(uint32_t off, uint32_t first, uint32_t size, uint32_t cap) {
  return off >= first && (off - first) % size == 0 && (off - first) / size < cap;
}

static long check_class(unsigned c, uint32_t colour) {
  const txa_class_info *ci = &txa_classes[c];
  static txa_block b; /* only its geometry fields are read */
  uint32_t span = (uint32_t)1 << ci->span_shift;
  b.first_offset = ci->first_offset + colour * ci->colour_step;
  b.size = ci->size;
  b.capacity = ci->capacity;
  txa_block_set_start_test(&b);
  long wrong = 0;
  for (uint32_t off = 0; off < span;) {
    uintptr_t a = (uintptr_t)&b + off;
    /* Secure mode (TXALLOC_SECURE=1) sends every free to the checked path. */
    bool want = !txa_g.secure && is_start_by_definition(off, b.first_offset, b.size, b.capacity);
    if (txa_is_object_start(&b, a) != want) {
      if (wrong++ < 5)
        fprintf(stderr, "class %u (%u B, first %u, capacity %u): offset %u says %d\n", c, b.size,
                b.first_offset, b.capacity, off, !want);
    }
    bool dense = span == TXA_BLOCK_SIZE || off < 65536 || off >= span - 65536;
    off += dense ? 1 : 7;
  }
  return wrong;
}

static test_error_log errors;

static void expect_report(const char *what, const void *p, txalloc_error_kind kind) {
  test_error_log seen = errors;
  CHECKF(test_error_one(&errors, kind, p),
         "%s of %p: %d reports, kind %d, pointer %p; want one of kind %d", what, p, seen.reports,
         (int)seen.kind, seen.ptr, (int)kind);
}

static uint64_t live_bytes(void) {
  txalloc_stats s;
  txalloc_stats_get(&s);
  return s.live_bytes;
}

static void bad_frees_of_size(size_t size) {
  enum { KEEP = 8, AFTER = 64 };
  uint64_t live0 = live_bytes();
  void *keep[KEEP];
  for (int i = 0; i < KEEP; i++) keep[i] = txalloc_malloc(size);
  char *p = txalloc_malloc(size);
  size_t usable = txalloc_usable_size(p);
  CHECK(usable >= size);
  txalloc_free(p + 8);
  expect_report("interior free (+8)", p + 8, TXALLOC_ERROR_INVALID_FREE);
  txalloc_free(p + usable - 16);
  expect_report("interior free (end - 16)", p + usable - 16, TXALLOC_ERROR_INVALID_FREE);
  unsigned kind = size <= TXA_SMALL_MAX ? TXA_KIND_SMALL : TXA_KIND_MEDIUM;
  char *header = (char *)txa_block_of((uintptr_t)p, kind) + 64;
  txalloc_free(header);
  expect_report("free of the block header", header, TXALLOC_ERROR_INVALID_FREE);
  txalloc_free(p);
  CHECKF(errors.reports == 0, "the real free of %zu B reported %d errors", size, errors.reports);
  txalloc_free(p);
  expect_report("double free by the owner", p, TXALLOC_ERROR_DOUBLE_FREE);

  void *after[AFTER];
  int dup = 0;
  for (int i = 0; i < AFTER; i++) {
    after[i] = txalloc_malloc(size);
    for (int j = 0; j < i; j++) dup += after[j] == after[i];
    for (int j = 0; j < KEEP; j++) dup += keep[j] == after[i];
  }
  CHECKF(dup == 0, "%d duplicate objects of %zu B after the reports", dup, size);
  for (int i = 0; i < AFTER; i++) txalloc_free(after[i]);
  for (int i = 0; i < KEEP; i++) txalloc_free(keep[i]);
  CHECKF(errors.reports == 0, "freeing the real objects of %zu B reported %d errors", size,
         errors.reports);
  CHECKF(live_bytes() == live0, "live bytes %llu, want %llu", (unsigned long long)live_bytes(),
         (unsigned long long)live0);
}

/* Objects whose first word decodes to a small number: the filter's doubt, not a link. */
enum { DOUBTED = 16 };
static void *doubted[DOUBTED];

static void make_doubted(size_t size) {
  unsigned kind = size <= TXA_SMALL_MAX ? TXA_KIND_SMALL : TXA_KIND_MEDIUM;
  for (int i = 0; i < DOUBTED; i++) {
    doubted[i] = txalloc_malloc(size);
    const txa_block *b = txa_block_of((uintptr_t)doubted[i], kind);
    uintptr_t decoded = i % 2 ? 8 : txa_span_size(kind) - 16;
    *(uintptr_t *)doubted[i] = decoded ^ b->key_shared;
  }
}

static void *free_doubted(void *arg) {
  (void)arg;
  for (int i = 0; i < DOUBTED; i++) txalloc_free(doubted[i]);
  return NULL;
}

static void doubted_live_objects(size_t size) {
  uint64_t live0 = live_bytes();
  for (int remote = 0; remote < 2; remote++) {
    make_doubted(size);
    if (remote) {
      pthread_t t;
      CHECK(pthread_create(&t, NULL, free_doubted, NULL) == 0);
      pthread_join(t, NULL);
    } else {
      free_doubted(NULL);
    }
    CHECKF(errors.reports == 0, "%s frees of doubted %zu B objects: %d reports",
           remote ? "remote" : "owner", size, errors.reports);
    errors.reports = 0;
  }
  CHECKF(live_bytes() == live0, "live bytes %llu, want %llu", (unsigned long long)live_bytes(),
         (unsigned long long)live0);
  /* All of them are free again: the next allocations of the class find them. */
  enum { N = 4096 / 16 };
  static void *again[N];
  int found = 0;
  for (int i = 0; i < N; i++) {
    again[i] = txalloc_malloc(size);
    for (int j = 0; j < DOUBTED; j++) found += again[i] == doubted[j];
  }
  for (int i = 0; i < N; i++) txalloc_free(again[i]);
  CHECKF(found == DOUBTED, "only %d of %d doubted %zu B objects reused", found, DOUBTED, size);
}

int main(void) {
  txalloc_free(txalloc_malloc(1)); /* initialises the class table */
  long wrong = 0, classes = 0;
  for (unsigned c = 0; c < txa_class_count; c++) {
    const txa_class_info *ci = &txa_classes[c];
    if (ci->capacity == 0) continue;
    wrong += check_class(c, 0);
    if (ci->colours > 1) wrong += check_class(c, ci->colours - 1);
    classes++;
  }
  CHECKF(classes > 40, "only %ld classes checked", classes);
  CHECKF(wrong == 0, "%ld addresses misjudged", wrong);

  txalloc_set_error_hook(test_error_record, &errors);
  bad_frees_of_size(48);
  bad_frees_of_size(1500);
  doubted_live_objects(48);
  doubted_live_objects(1500); /* a medium class: below TXA_RUNS_MIN */
  txalloc_set_error_hook(NULL, NULL);
  return check_exit();
}
