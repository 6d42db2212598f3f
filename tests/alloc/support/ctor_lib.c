/* A shared library whose constructor allocates before main runs, possibly before
 * libtxalloc.so's own constructor (the order of two preloaded/linked libraries'
 * initialisers is not guaranteed): used by preload_constructor.c. */
#include <stdlib.h>
#include <string.h>

#include "ctor_lib.h"

void *ctor_lib_objects[CTOR_LIB_OBJECTS];
size_t ctor_lib_sizes[CTOR_LIB_OBJECTS];

__attribute__((constructor)) static void ctor_lib_init(void) {
  for (int i = 0; i < CTOR_LIB_OBJECTS; i++) {
    size_t size = i == CTOR_LIB_OBJECTS - 1 ? (size_t)4 << 20 : (size_t)(16 << (i % 10));
    void *p = NULL;
    if (i % 5 == 4) {
      if (posix_memalign(&p, 4096, size) != 0) p = NULL;
    } else if (i % 5 == 3) {
      p = calloc(1, size);
    } else {
      p = malloc(size);
    }
    if (p) memset(p, 0x40 + i, size);
    ctor_lib_objects[i] = p;
    ctor_lib_sizes[i] = size;
  }
  /* Some churn, so that the heap is not trivial when main starts. */
  for (int i = 0; i < 1000; i++) free(malloc((size_t)i + 1));
}
