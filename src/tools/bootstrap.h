/* bootstrap.h: the memory an interposer hands out while dlsym(RTLD_NEXT, ...) resolves the
 * allocator below it (glibc's dlsym may call calloc for its error buffer). Objects come
 * from a static arena, are never reused, and must never reach the allocator below. */
#ifndef TXALLOC_PLACEMENT_BOOTSTRAP_H
#define TXALLOC_PLACEMENT_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>

/* A zeroed object of `size` bytes aligned to `align` (a power of two, at most 4096), or
 * NULL when the arena is spent. */
void *bootstrap_alloc(size_t size, size_t align);

/* True when p lies in the arena. */
bool bootstrap_owns(const void *p);

/* The size p was allocated with; pre: bootstrap_owns(p). */
size_t bootstrap_size(const void *p);

#endif
