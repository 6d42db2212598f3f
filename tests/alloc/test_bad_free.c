/* Bad input reaches the error hook with the right kind, pointer and message, and leaves
 * the allocator working (the bad call does nothing).
 *
 * Workload, one case at a time with a recording hook installed:
 *   - invalid frees: a stack address, a global, a glibc malloc'd pointer, a pointer into
 *     an mmap'd page (not ours at all);
 *   - interior frees: p + 16 and p + 8 of a small object, p + 4096 of a large one;
 *   - double frees: an object freed twice by its owner (it sits on its block's private
 *     free list), an object freed twice by another thread (it sits on the public list),
 *     an object freed by another thread and then by its owner, a large object freed
 *     twice (already released: invalid or double, either is reported);
 *   - realloc of a foreign and of an interior pointer.
 * For each: exactly one hook call, the expected kind, the pointer passed, a message that
 * names the problem and the address. Afterwards: the same objects are still handed out
 * once (a double free must not put an object on a free list twice: 2000 allocations of
 * the class are all distinct), the errors counter counted every report, and the default
 * handler is back after txalloc_set_error_hook(NULL). */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static int calls;
static txalloc_error_kind last_kind;
static const void *last_ptr;
static char last_message[512];
static void *last_arg;

static void record(txalloc_error_kind kind, const void *ptr, const char *message, void *arg) {
  calls++;
  last_kind = kind;
  last_ptr = ptr;
  last_arg = arg;
  snprintf(last_message, sizeof last_message, "%s", message ? message : "(null)");
}

static int global_variable;

/* Expects exactly one report of `kind` (or `alt_kind`) about `ptr` since the last reset. */
static void expect(const char *what, const void *ptr, txalloc_error_kind kind,
                   txalloc_error_kind alt_kind, const char *word) {
  CHECKF(calls == 1, "%s: %d hook calls, want 1", what, calls);
  CHECKF(last_kind == kind || last_kind == alt_kind, "%s: kind %d, want %d", what, (int)last_kind,
         (int)kind);
  CHECKF(last_ptr == ptr, "%s: hook got %p, want %p", what, last_ptr, ptr);
  CHECKF(last_arg == &calls, "%s: hook arg not passed through", what);
  char addr[32];
  snprintf(addr, sizeof addr, "%p", ptr);
  CHECKF(strstr(last_message, addr) != NULL, "%s: message '%s' does not name %s", what,
         last_message, addr);
  CHECKF(strstr(last_message, word) != NULL, "%s: message '%s' does not say '%s'", what,
         last_message, word);
  calls = 0;
  last_ptr = NULL;
  last_message[0] = 0;
}

static void *free_twice_remotely(void *p) {
  txalloc_free(p);
  txalloc_free(p);
  return NULL;
}
static void *free_once_remotely(void *p) {
  txalloc_free(p);
  return NULL;
}
static void in_thread(void *(*fn)(void *), void *p) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, p) != 0) exit(2);
  pthread_join(t, NULL);
}

/* After a double free of a 48-byte object, 2000 allocations of that class are distinct. */
static void class_still_sane(const char *what) {
  enum { N = 2000 };
  static void *p[N];
  int dup = 0;
  for (int i = 0; i < N; i++) {
    p[i] = txalloc_malloc(48);
    if (p[i]) test_fill(p[i], 48, (uint64_t)i);
  }
  for (int i = 0; i < N; i++)
    if (!p[i] || !test_check(p[i], 48, (uint64_t)i)) dup++;
  for (int i = 0; i < N; i++) txalloc_free(p[i]);
  CHECKF(dup == 0, "%s: %d of %d objects handed out twice afterwards", what, dup, N);
  CHECKF(calls == 0, "%s: %d spurious reports afterwards", what, calls);
}

int main(void) {
  txalloc_stats s0, s1;
  txalloc_stats_get(&s0);
  txalloc_error_fn previous = txalloc_set_error_hook(record, &calls);
  CHECK(previous != record);
  int reports = 0;

  /* Not ours. */
  int stack_variable;
  void *glibc_object = malloc(64);
  void *mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *foreign[] = {&stack_variable, &global_variable, glibc_object, mapped};
  const char *foreign_name[] = {"stack", "global", "glibc object", "mmap page"};
  for (int i = 0; i < 4; i++) {
    txalloc_free(foreign[i]);
    expect(foreign_name[i], foreign[i], TXALLOC_ERROR_INVALID_FREE, TXALLOC_ERROR_INVALID_FREE,
           "invalid");
    reports++;
  }

  /* Interior pointers. */
  char *small = txalloc_malloc(64);
  char *large = txalloc_malloc((size_t)8 << 20);
  CHECK(small && large);
  txalloc_free(small + 16);
  expect("interior small +16", small + 16, TXALLOC_ERROR_INVALID_FREE, TXALLOC_ERROR_INVALID_FREE,
         "interior");
  txalloc_free(small + 8);
  expect("interior small +8", small + 8, TXALLOC_ERROR_INVALID_FREE, TXALLOC_ERROR_INVALID_FREE,
         "interior");
  txalloc_free(large + 4096);
  expect("interior large", large + 4096, TXALLOC_ERROR_INVALID_FREE, TXALLOC_ERROR_INVALID_FREE,
         "interior");
  reports += 3;
  /* Those bad calls did nothing: the objects are still live and freeable. */
  memset(small, 1, 64);
  memset(large, 1, 4096);
  txalloc_free(small);
  txalloc_free(large);
  CHECKF(calls == 0, "freeing the real objects after interior frees reported %d errors", calls);

  /* realloc of bad pointers. */
  void *r = txalloc_realloc(&stack_variable, 100);
  CHECK(r == NULL);
  expect("realloc stack", &stack_variable, TXALLOC_ERROR_INVALID_FREE, TXALLOC_ERROR_INVALID_FREE,
         "invalid");
  char *obj = txalloc_malloc(100);
  r = txalloc_realloc(obj + 32, 200);
  CHECK(r == NULL);
  expect("realloc interior", obj + 32, TXALLOC_ERROR_INVALID_FREE, TXALLOC_ERROR_INVALID_FREE,
         "interior");
  txalloc_free(obj);
  reports += 2;

  /* Double free by the owner: the object is on its block's private list. Allocate a few
   * neighbours first so the block stays in use. */
  void *keep[8];
  for (int i = 0; i < 8; i++) keep[i] = txalloc_malloc(48);
  void *d = txalloc_malloc(48);
  txalloc_free(d);
  CHECK(calls == 0);
  txalloc_free(d);
  expect("double free (private list)", d, TXALLOC_ERROR_DOUBLE_FREE, TXALLOC_ERROR_DOUBLE_FREE,
         "double free");
  reports++;
  class_still_sane("private-list double free");

  /* Double free by another thread: on the public list. */
  d = txalloc_malloc(48);
  in_thread(free_twice_remotely, d);
  expect("double free (public list)", d, TXALLOC_ERROR_DOUBLE_FREE, TXALLOC_ERROR_DOUBLE_FREE,
         "double free");
  reports++;
  class_still_sane("public-list double free");

  /* Freed remotely, then freed by the owner before it repatriated the public list. */
  d = txalloc_malloc(48);
  in_thread(free_once_remotely, d);
  txalloc_free(d);
  expect("remote then local double free", d, TXALLOC_ERROR_DOUBLE_FREE, TXALLOC_ERROR_DOUBLE_FREE,
         "double free");
  reports++;
  class_still_sane("remote-then-local double free");
  for (int i = 0; i < 8; i++) txalloc_free(keep[i]);

  /* A large object freed twice: already released. */
  void *big = txalloc_malloc((size_t)4 << 20);
  txalloc_free(big);
  txalloc_free(big);
  expect("large double free", big, TXALLOC_ERROR_DOUBLE_FREE, TXALLOC_ERROR_INVALID_FREE, "free");
  reports++;

  txalloc_stats_get(&s1);
  CHECKF(s1.errors - s0.errors == (uint64_t)reports, "errors counter +%llu, want %d",
         (unsigned long long)(s1.errors - s0.errors), reports);

  /* Restoring the default returns our hook. */
  CHECK(txalloc_set_error_hook(NULL, NULL) == record);
  CHECK(txalloc_set_error_hook(NULL, NULL) != record);
  free(glibc_object);
  munmap(mapped, 4096);
  return check_exit();
}
