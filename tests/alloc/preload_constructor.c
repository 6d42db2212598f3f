/* Allocation before main, under LD_PRELOAD=libtxalloc.so: a linked shared library's
 * constructor (support/ctor_lib.c) and this program's own early constructor (priority
 * 101) allocate — possibly before libtxalloc.so's initialiser has run. main then checks
 * that those objects are txalloc's (txalloc_owner_of via dlsym), that their contents are
 * intact, that usable sizes are right, and frees them (plus a realloc of one). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support/ctor_lib.h"

enum { EARLY = 64 };
static void *early[EARLY];

__attribute__((constructor(101))) static void early_constructor(void) {
  for (int i = 0; i < EARLY; i++) {
    early[i] = malloc((size_t)i * 24 + 1);
    if (early[i]) memset(early[i], i, (size_t)i * 24 + 1);
  }
}

static int filled(const void *p, int byte, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != (unsigned char)byte) return 0;
  return 1;
}

int main(void) {
  typedef int (*owner_of_fn)(const void *);
  owner_of_fn owner_of = (owner_of_fn)dlsym(RTLD_DEFAULT, "txalloc_owner_of");
  CHECKF(owner_of != NULL, "txalloc_owner_of not found: is libtxalloc.so preloaded?");
  if (!owner_of) return check_exit();

  for (int i = 0; i < CTOR_LIB_OBJECTS; i++) {
    void *p = ctor_lib_objects[i];
    size_t n = ctor_lib_sizes[i];
    CHECKF(p != NULL, "library constructor allocation %d failed", i);
    if (!p) continue;
    CHECKF(owner_of(p) != 0, "library constructor object %d (%p) not txalloc's", i, p);
    CHECKF(malloc_usable_size(p) >= n, "object %d: usable %zu < %zu", i, malloc_usable_size(p), n);
    CHECKF(filled(p, 0x40 + i, n), "library constructor object %d corrupted", i);
    if (i % 5 == 4) CHECK(((uintptr_t)p & 4095) == 0);
  }
  for (int i = 0; i < EARLY; i++) {
    size_t n = (size_t)i * 24 + 1;
    CHECK(early[i] != NULL && owner_of(early[i]) != 0);
    if (early[i]) CHECKF(filled(early[i], i, n), "early object %d corrupted", i);
  }
  /* They behave like any other object. */
  void *grown = realloc(ctor_lib_objects[0], 100000);
  CHECK(grown != NULL && filled(grown, 0x40, ctor_lib_sizes[0]));
  free(grown);
  for (int i = 1; i < CTOR_LIB_OBJECTS; i++) free(ctor_lib_objects[i]);
  for (int i = 0; i < EARLY; i++) free(early[i]);
  return check_exit();
}
