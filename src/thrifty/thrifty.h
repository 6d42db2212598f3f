/* The narrow interface the bounded allocator offers the transactional layer (txmem's
 * strategy thrifty), beside the public thrifty_malloc/thrifty_free (txalloc/thrifty.h).
 *
 * Inside a transaction an allocation must not refill (the refill takes the heap lock and
 * is done outside the transaction), so txmem asks the pool alone first. */
#ifndef TXALLOC_THRIFTY_THRIFTY_H
#define TXALLOC_THRIFTY_THRIFTY_H

#include <stdbool.h>
#include <stddef.h>

#include "txalloc/thrifty.h"

/* An object from the calling thread's pool, or NULL when the pool cannot serve `size`
 * bytes without a refill (errno untouched) or the size can never be served (errno =
 * ENOMEM; *hopeless set). Takes no lock. */
void *thrifty_pool_take(size_t size, bool *hopeless);

/* Refills the calling thread's pool so that it can serve `size` bytes: the rest of the pool
 * goes back to the heap and a pool of max(pool size, 2 x block) comes out; `grow` doubles
 * the pool size on top (a transaction that needed a refill already). false: the heap
 * cannot serve it (the pool is then empty). Takes the heap lock: call it outside any
 * transaction. */
bool thrifty_pool_refill(size_t size, bool grow);

#endif
