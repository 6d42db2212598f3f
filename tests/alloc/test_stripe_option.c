/* Option stripe (TXALLOC_STRIPE): every small object spaced by the stripe, for TM runtimes
 * that do not report their geometry to txmem; bad values refused with a message.
 *
 * Each case runs in a child forked before this process ever calls the allocator, so that
 * the child reads its own TXALLOC_STRIPE at its first call:
 *   - 32 and 64: malloc of every size up to 1 KiB returns a stripe-aligned object of whole
 *     stripes (requests up to 128 bytes cost exactly the request rounded up to the
 *     stripe), calloc too; medium requests are unaffected;
 *   - 0 (off), 48 (not a power of two) and 1000: the classes stay dense, a 16-byte request
 *     costs 16 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "txalloc/txalloc.h"

static int failures;

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                   \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static void spaced(size_t stripe) {
  for (size_t size = 1; size <= 1024; size++) {
    void *p = txalloc_malloc(size);
    size_t usable = txalloc_usable_size(p);
    EXPECT((uintptr_t)p % stripe == 0 && usable % stripe == 0 && usable >= size);
    if (size <= 128) EXPECT(usable == (size + stripe - 1) / stripe * stripe);
    txalloc_free(p);
  }
  char *z = txalloc_calloc(2, 9);
  EXPECT((uintptr_t)z % stripe == 0 && z[17] == 0);
  txalloc_free(z);
}

static void dense(void) {
  void *p = txalloc_malloc(16), *q = txalloc_malloc(16);
  EXPECT(txalloc_usable_size(p) == 16);
  EXPECT((uintptr_t)q - (uintptr_t)p == 16 || (uintptr_t)p - (uintptr_t)q == 16);
  txalloc_free(p);
  txalloc_free(q);
}

static int run_case(const char *value) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("TXALLOC_STRIPE", value, 1);
    long stripe = atol(value);
    if (stripe == 32 || stripe == 64)
      spaced((size_t)stripe);
    else
      dense();
    _exit(failures ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

int main(void) {
  static const char *values[] = {"32", "64", "0", "48", "1000"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
    CHECKF(run_case(values[i]) == 0, "TXALLOC_STRIPE=%s", values[i]);
  return check_exit();
}
