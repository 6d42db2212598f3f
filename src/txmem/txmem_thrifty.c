/* Strategy thrifty: allocation inside a transaction from the thread's pool alone, and the
 * abort-refill-restart path (txmem.h, "Refill"; Carle et al. Figure 3). The refill takes the
 * heap lock, so it runs outside the transaction: the runtime's hook aborts the transaction,
 * calls txmem_refill and restarts it, which keeps the transaction as short as it was and
 * leaves the heap lock out of every transaction (under a hardware TM, a lock word in the
 * transaction's read set would make every other refill abort it). */
#include <errno.h>
#include <stdatomic.h>

#include "thrifty/thrifty.h"
#include "txmem/txmem_internal.h"

static _Atomic(txmem_refill_hook) refill_hook;
static void *_Atomic refill_arg;

/* cold: run once, from the TM runtime's constructor, and kept with the other startup
 * code, away from the transactional paths (docs/allocator.md, "Code footprint"). */
__attribute__((cold)) void txmem_set_refill_hook(txmem_refill_hook hook, void *arg) {
  atomic_store(&refill_arg, arg);
  atomic_store(&refill_hook, hook);
}

void *txmem_thrifty_malloc(size_t size) {
  bool hopeless;
  void *p = thrifty_pool_take(size, &hopeless);
  if (TXMEM_LIKELY(p != NULL) || hopeless) return p;
  txmem_refill_hook hook = atomic_load(&refill_hook);
  if (hook) hook(size, atomic_load(&refill_arg)); /* returns only for an irrevocable attempt */
  if (thrifty_pool_refill(size, false) && (p = thrifty_pool_take(size, &hopeless))) return p;
  errno = ENOMEM;
  return NULL;
}

bool txmem_refill(size_t size, unsigned refills) {
  if (txmem_config_get()->strategy != TXMEM_THRIFTY) return true;
  return thrifty_pool_refill(size, refills > 0);
}
