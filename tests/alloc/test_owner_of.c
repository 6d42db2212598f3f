/* txalloc_owner_of: O(1) classification of any address as a small object's block, a large
 * object's span/mapping, or not ours.
 *
 * Workload: pointers from txalloc_malloc of small sizes (16..256 B: TXALLOC_SMALL, also
 * their interior bytes and, after free, the same address), every medium size class
 * sampled (ours: small or large), large objects of 4 and 32 MiB (TXALLOC_LARGE, interior
 * and last byte too); and addresses that are not ours: NULL, low addresses, a stack
 * variable, a global, a glibc malloc'd object (libtxalloc.a does not replace malloc), an
 * mmap'd page, the kernel half, code. Classification must also hold from another thread.
 * usable_size of foreign and interior pointers is 0. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

static int global_variable;

static void *classify_from_thread(void *arg) {
  void **ptrs = (void **)arg;
  long wrong = 0;
  if (txalloc_owner_of(ptrs[0]) != TXALLOC_SMALL) wrong++;
  if (txalloc_owner_of(ptrs[1]) != TXALLOC_LARGE) wrong++;
  if (txalloc_owner_of(ptrs[2]) != TXALLOC_NOT_OURS) wrong++;
  return (void *)wrong;
}

int main(void) {
  int stack_variable = 0;
  /* Not ours. */
  void *mapped = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(mapped != MAP_FAILED);
  void *glibc_object = malloc(100);
  void *glibc_large = malloc((size_t)8 << 20);
  const void *foreign[] = {NULL,
                           (void *)16,
                           (void *)4096,
                           &stack_variable,
                           &global_variable,
                           glibc_object,
                           glibc_large,
                           mapped,
                           (char *)mapped + 4096,
                           (void *)(uintptr_t)main,
                           (void *)0x7fffffffffffull,
                           (void *)0xffff800000000000ull,
                           (void *)UINTPTR_MAX};
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
    CHECKF(txalloc_owner_of(foreign[i]) == TXALLOC_NOT_OURS, "owner_of(%p) = %d", foreign[i],
           (int)txalloc_owner_of(foreign[i]));

  /* Small objects, their interiors, and freed ones (the block is still ours). */
  enum { SMALLS = 1000 };
  static void *small[SMALLS];
  for (int i = 0; i < SMALLS; i++) {
    size_t s = 16 + (size_t)(i % 16) * 16;
    small[i] = txalloc_malloc(s);
    CHECK(small[i] != NULL);
    CHECKF(txalloc_owner_of(small[i]) == TXALLOC_SMALL, "owner_of(malloc(%zu)) = %d", s,
           (int)txalloc_owner_of(small[i]));
    CHECK(txalloc_owner_of((char *)small[i] + s - 1) == TXALLOC_SMALL);
    CHECK(txalloc_owner_of((char *)small[i] + s / 2) == TXALLOC_SMALL);
  }
  for (int i = 0; i < SMALLS; i++) txalloc_free(small[i]);
  for (int i = 0; i < SMALLS; i += 10)
    CHECKF(txalloc_owner_of(small[i]) != TXALLOC_NOT_OURS, "freed small %p classified as foreign",
           small[i]);

  /* Every size between small and large is ours, whichever kind serves it. */
  for (size_t s = 256; s <= ((size_t)4 << 20); s += s / 4) {
    void *p = txalloc_malloc(s);
    CHECK(p != NULL);
    txalloc_owner o = txalloc_owner_of(p);
    CHECKF(o == TXALLOC_SMALL || o == TXALLOC_LARGE, "owner_of(malloc(%zu)) = %d", s, (int)o);
    CHECKF(txalloc_owner_of((char *)p + s - 1) == o, "last byte of malloc(%zu) classified %d", s,
           (int)txalloc_owner_of((char *)p + s - 1));
    txalloc_free(p);
  }

  /* Large objects: start, interior, last byte. */
  size_t large_sizes[] = {(size_t)4 << 20, (size_t)32 << 20};
  for (size_t i = 0; i < 2; i++) {
    size_t s = large_sizes[i];
    char *p = txalloc_malloc(s);
    CHECK(p != NULL);
    if (!p) continue;
    CHECK(txalloc_owner_of(p) == TXALLOC_LARGE);
    CHECK(txalloc_owner_of(p + s / 3) == TXALLOC_LARGE);
    CHECK(txalloc_owner_of(p + s - 1) == TXALLOC_LARGE);
    txalloc_free(p);
  }

  /* malloc_usable_size of what is not a live object's start is 0, not a crash. */
  {
    char *sm = txalloc_malloc(64), *lg = txalloc_malloc((size_t)4 << 20);
    CHECK(sm && lg);
    CHECK(txalloc_usable_size(&stack_variable) == 0);
    CHECK(txalloc_usable_size(glibc_object) == 0);
    CHECKF(txalloc_usable_size(sm + 8) == 0, "usable_size(interior small) = %zu",
           txalloc_usable_size(sm + 8));
    CHECKF(txalloc_usable_size(lg + 4096) == 0, "usable_size(interior large) = %zu",
           txalloc_usable_size(lg + 4096));
    txalloc_free(sm);
    txalloc_free(lg);
  }

  /* From another thread (a thread with no heap of its own yet). */
  void *s = txalloc_malloc(64), *l = txalloc_malloc((size_t)8 << 20);
  void *ptrs[3] = {s, l, &stack_variable};
  pthread_t t;
  void *wrong = NULL;
  CHECK(pthread_create(&t, NULL, classify_from_thread, ptrs) == 0);
  pthread_join(t, &wrong);
  CHECKF(wrong == NULL, "%ld classifications wrong in another thread", (long)wrong);
  txalloc_free(s);
  txalloc_free(l);
  free(glibc_object);
  free(glibc_large);
  munmap(mapped, 1 << 16);
  return check_exit();
}
