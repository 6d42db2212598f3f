#define _GNU_SOURCE
/* The malloc interface of libtxalloc.so: LD_PRELOAD the library (or link it) and these
 * definitions replace the C library's allocator (glibc documents which functions a
 * replacement must provide). Each one is the txalloc_ function of the same name, the hot
 * ones called by their hidden names (alloc/entry.h: a direct jump); the allocator
 * initialises itself on the first call without calling malloc, so the first call may come
 * from ld.so, any thread, or another library's constructor. */
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>

#include "alloc/entry.h"
#include "txalloc/txalloc.h"

#define TXALLOC_PRELOAD __attribute__((visibility("default")))

TXALLOC_PRELOAD void *malloc(size_t size) { return txa_entry_malloc(size); }
TXALLOC_PRELOAD void free(void *ptr) { txa_entry_free(ptr); }
TXALLOC_PRELOAD void *calloc(size_t count, size_t size) { return txa_entry_calloc(count, size); }
TXALLOC_PRELOAD void *realloc(void *ptr, size_t size) { return txa_entry_realloc(ptr, size); }
TXALLOC_PRELOAD void *reallocarray(void *ptr, size_t count, size_t size) {
  return txalloc_reallocarray(ptr, count, size);
}
TXALLOC_PRELOAD int posix_memalign(void **out, size_t alignment, size_t size) {
  return txalloc_posix_memalign(out, alignment, size);
}
TXALLOC_PRELOAD void *aligned_alloc(size_t alignment, size_t size) {
  return txalloc_aligned_alloc(alignment, size);
}
TXALLOC_PRELOAD void *memalign(size_t alignment, size_t size) {
  return txalloc_memalign(alignment, size);
}
TXALLOC_PRELOAD void *valloc(size_t size) { return txalloc_valloc(size); }
TXALLOC_PRELOAD void *pvalloc(size_t size) { return txalloc_pvalloc(size); }
TXALLOC_PRELOAD size_t malloc_usable_size(void *ptr) { return txalloc_usable_size(ptr); }
/* Obsolete glibc alias some old programs still call. */
void cfree(void *ptr);
TXALLOC_PRELOAD void cfree(void *ptr) { txa_entry_free(ptr); }

/* The library's DT_FINI (-Wl,-fini, src/preload/CMakeLists.txt), in place of crtn's
 * _fini, which is empty here but sits after all the code, where calling it at exit would
 * fault in a window of code the program never ran (docs/allocator.md, "Code footprint"). */
void txa_library_fini(void);
void txa_library_fini(void) {}
