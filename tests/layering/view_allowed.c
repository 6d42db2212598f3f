/* Compiled with the txmem layer's include path only: the allocator's narrow interface is
 * in sight. */
#include "alloc/alloc_direct.h"

size_t view_probe(const void *p);
size_t view_probe(const void *p) {
  size_t usable = 0;
  return txa_direct_usable(p, &usable) ? usable : 0;
}
