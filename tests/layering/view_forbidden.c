/* Compiled with the txmem layer's include path only: the rest of the allocator is out of
 * sight, so this must not compile (the ctest expects failure). Otherwise the same as
 * view_allowed.c, so that the include is the only reason it fails. */
#include "alloc/internal.h"

size_t view_probe(const void *p);
size_t view_probe(const void *p) {
  size_t usable = 0;
  return txa_direct_usable(p, &usable) ? usable : 0;
}
