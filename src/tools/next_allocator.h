/* next_allocator.h: the allocator below an interposer, found with dlsym(RTLD_NEXT): the
 * next library in the lookup order that defines malloc (another preloaded allocator, or
 * glibc). */
#ifndef TXALLOC_PLACEMENT_NEXT_ALLOCATOR_H
#define TXALLOC_PLACEMENT_NEXT_ALLOCATOR_H

#include <stddef.h>

struct next_allocator {
  void *(*malloc)(size_t);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void (*free)(void *);
  void *(*memalign)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  size_t (*malloc_usable_size)(void *);
};

/* The allocator below, or NULL while its symbols are being resolved (dlsym itself may
 * allocate: the caller then serves the request from the bootstrap arena). */
const struct next_allocator *next_allocator(void);

#endif
