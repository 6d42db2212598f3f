/* The allocator's entry points under hidden names, for the library's malloc interface
 * (src/preload). The exported txalloc_ names may be interposed, so a call to one from
 * inside the shared library is an indirect jump through the GOT; a call to these binds
 * within the library at link time and is a direct jump. malloc and free pay that jump on
 * every call (binarytrees: about 3 % of its time). Each is an alias of the function of the
 * same txalloc_ name (alloc.c), with its contract. */
#ifndef TXALLOC_ALLOC_ENTRY_H
#define TXALLOC_ALLOC_ENTRY_H

#include <stddef.h>

#pragma GCC visibility push(hidden)
void *txa_entry_malloc(size_t size);
void txa_entry_free(void *p);
void *txa_entry_calloc(size_t count, size_t size);
void *txa_entry_realloc(void *p, size_t size);
#pragma GCC visibility pop

#endif
