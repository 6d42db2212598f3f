/* Allocation inside ABI transactions: GCC turns malloc, calloc and free inside a block into
 * these, and they go to txalloc's transaction-aware allocation (tm_malloc/tm_free,
 * docs/txmem.md): an allocation is given back if its level rolls back, a free takes effect
 * when the top level commits. Outside a transaction they are malloc and free. */
#include <string.h>

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

void *_ITM_malloc(size_t size) { return tm_malloc(size); }

void *_ITM_calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) return NULL;
  void *p = tm_malloc(bytes);
  if (p) memset(p, 0, bytes); /* new memory: private to this transaction until it commits */
  return p;
}

void _ITM_free(void *ptr) { tm_free(ptr); }

/* A hint that the transaction will not access the range again: nothing to drop here
 * (the STM keeps no per-range state a later access would need). */
void _ITM_dropReferences(void *addr, size_t size) {
  (void)addr;
  (void)size;
}
