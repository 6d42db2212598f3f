/* The return stacks of the owner-returns variant (TXALLOC_THRIFTY_RETURN=owner): one record
 * per live pool, in a fixed table so that a record outlives nothing it must not. A remote
 * free pushes the block onto the record of the pool that served it (a lock-free stack:
 * many pushers, one taker that takes the whole stack at once, so no ABA); the owner drains
 * the stack into its address-ordered list, where the blocks coalesce.
 *
 * A record's top word is its state:
 *   NULL           closed: free to claim; a push fails and the freer keeps the block
 *   RETURNS_EMPTY  open, nothing pending
 *   a block        open, the newest pending block; the chain ends at RETURNS_EMPTY
 * Closing exchanges the top for NULL and hands the pending blocks to the closing owner:
 * a push after that fails, so nothing pushed is ever left on a closed record. A slot
 * claimed again may receive blocks another pool served under that slot before: harmless,
 * as any pool may hold any free block. */
#include "thrifty/thrifty_internal.h"

#define RETURNS_EMPTY ((thrifty_span *)(uintptr_t)THRIFTY_ALIGN)

typedef struct {
  _Alignas(64) _Atomic(thrifty_span *) top; /* a line each: pushers write their owner's */
} return_record;

static return_record records[THRIFTY_RECORDS];
static _Atomic uint32_t claim_hint;

uint32_t thrifty_returns_claim(void) {
  uint32_t start = atomic_load_explicit(&claim_hint, memory_order_relaxed);
  for (uint32_t k = 0; k < THRIFTY_RECORDS - 1; k++) {
    uint32_t slot = 1 + (start + k) % (THRIFTY_RECORDS - 1); /* slot 0: no record */
    thrifty_span *closed = NULL;
    if (atomic_compare_exchange_strong_explicit(&records[slot].top, &closed, RETURNS_EMPTY,
                                                memory_order_relaxed, memory_order_relaxed)) {
      atomic_store_explicit(&claim_hint, slot, memory_order_relaxed);
      return slot;
    }
  }
  return 0;
}

bool thrifty_returns_push(uint32_t slot, void *block, size_t size) {
  _Atomic(thrifty_span *) *top = &records[slot].top;
  thrifty_span *b = block;
  b->size = size;
  thrifty_span *old = atomic_load_explicit(top, memory_order_relaxed);
  do {
    if (old == NULL) return false;
    b->next = old;
  } while (!atomic_compare_exchange_weak_explicit(top, &old, b, memory_order_release,
                                                  memory_order_relaxed));
  return true;
}

bool thrifty_returns_pending(uint32_t slot) {
  return atomic_load_explicit(&records[slot].top, memory_order_relaxed) != RETURNS_EMPTY;
}

static size_t put_chain(thrifty_list *into, thrifty_span *s) {
  size_t n = 0;
  while (s != RETURNS_EMPTY && s != NULL) {
    thrifty_span *next = s->next;
    thrifty_list_put(into, s, s->size);
    s = next;
    n++;
  }
  return n;
}

size_t thrifty_returns_drain(uint32_t slot, thrifty_list *into) {
  return put_chain(
      into, atomic_exchange_explicit(&records[slot].top, RETURNS_EMPTY, memory_order_acquire));
}

size_t thrifty_returns_close(uint32_t slot, thrifty_list *into) {
  return put_chain(into, atomic_exchange_explicit(&records[slot].top, NULL, memory_order_acquire));
}
