/* A heap's cache of empty small blocks.
 *
 * A block that its owner's own free emptied stays with the heap for the heap's next refill
 * instead of going to the global store. From the store, the next taker is as likely another
 * thread, whose core must then fetch every line of the block it writes: threadtest with
 * 512-byte objects at 2 threads, whose threads each empty about 470 blocks a round, ran 1.5x
 * mimalloc's time when a heap kept only 64 of them, and as fast as mimalloc when it kept all.
 *
 * Keeping them must neither grow the process nor keep idle memory committed, so the cache
 * is bounded three ways:
 *  - at most TXA_HEAP_EMPTY_BLOCKS blocks per heap, and over all heaps at most half the
 *    decommit threshold (reserved in chunks, below); beyond that, blocks go to the store;
 *  - a heap that needs a block and finds neither one of its own nor a committed one in the
 *    store takes one from another heap's cache before it commits memory (a decommitted
 *    block or a fresh one): no heap grows while another holds empty memory;
 *  - every purge tick of the store (block_store.c) hands over the caches of the heaps that
 *    took no block from theirs since the previous tick, and collect hands over all of them;
 *    the store then decommits those blocks on its own schedule, so an idle thread's cache
 *    goes back to the OS within about the decommit delay, whatever the thread does.
 *
 * Each cache has its own spin lock: the owner takes it on its slow paths (under its ring
 * lock), other threads only try it, and nobody holds it while calling into the store. A
 * cached block has no owner and capacity 0 (a free into it is reported), and is linked
 * through its next field. */
#include "alloc/internal.h"

/* The budget is shared by reservations of TXA_EMPTY_CACHE_CHUNK blocks, so that a heap that
 * fills and drains its cache touches the shared counter once per chunk crossed, not once
 * per block (two threads doing so on every block spent a tenth of threadtest's allocator
 * time bouncing its line). A heap gives a chunk back when it holds two more than it needs;
 * the total of the reservations is therefore an upper bound of the blocks cached, and its
 * being 0 means that no cache holds any. */
static _Atomic(int64_t) reserved_blocks;

int64_t txa_empty_cache_reserved_bytes(void) {
  return atomic_load_explicit(&reserved_blocks, memory_order_relaxed) * TXA_BLOCK_SIZE;
}

static int64_t budget_blocks(void) {
  return (int64_t)(txa_g.decommit_threshold / 2 / TXA_BLOCK_SIZE);
}

/* pre: h->empty_lock held. */
static bool reserve_chunk(txa_heap *h) {
  int64_t total =
      atomic_fetch_add_explicit(&reserved_blocks, TXA_EMPTY_CACHE_CHUNK, memory_order_relaxed);
  if (total + TXA_EMPTY_CACHE_CHUNK > budget_blocks()) {
    atomic_fetch_sub_explicit(&reserved_blocks, TXA_EMPTY_CACHE_CHUNK, memory_order_relaxed);
    return false;
  }
  h->empty_reserved += TXA_EMPTY_CACHE_CHUNK;
  return true;
}

/* pre: h->empty_lock held. Gives back the chunks beyond `keep` blocks. */
static void unreserve_above(txa_heap *h, uint32_t keep) {
  if (h->empty_reserved <= keep) return;
  uint32_t chunks = (h->empty_reserved - keep) / TXA_EMPTY_CACHE_CHUNK;
  h->empty_reserved -= chunks * TXA_EMPTY_CACHE_CHUNK;
  atomic_fetch_sub_explicit(&reserved_blocks, (int64_t)chunks * TXA_EMPTY_CACHE_CHUNK,
                            memory_order_relaxed);
}

static uint32_t count_of(txa_heap *h) {
  return atomic_load_explicit(&h->empty_count, memory_order_relaxed);
}

/* pre: h->empty_lock held (writers hold it; readers without it only take a hint). */
static void set_count(txa_heap *h, uint32_t n) {
  atomic_store_explicit(&h->empty_count, n, memory_order_relaxed);
}

bool txa_empty_cache_put(txa_heap *h, txa_block *b) {
  if (count_of(h) >= TXA_HEAP_EMPTY_BLOCKS) return false;
  txa_lock_acquire(&h->empty_lock);
  uint32_t n = count_of(h);
  if (n >= h->empty_reserved && !reserve_chunk(h)) {
    txa_lock_release(&h->empty_lock);
    return false;
  }
  b->capacity = 0; /* frees into an empty block are invalid, as in the store */
  b->next = h->empty_first;
  h->empty_first = b;
  set_count(h, n + 1);
  txa_lock_release(&h->empty_lock);
  return true;
}

/* pre: h->empty_lock held. */
static txa_block *pop_locked(txa_heap *h) {
  txa_block *b = h->empty_first;
  if (!b) return NULL;
  h->empty_first = b->next;
  b->next = NULL;
  uint32_t n = count_of(h) - 1;
  set_count(h, n);
  unreserve_above(h, n + 2 * TXA_EMPTY_CACHE_CHUNK);
  return b;
}

txa_block *txa_empty_cache_take(txa_heap *h) {
  if (!count_of(h)) return NULL;
  txa_lock_acquire(&h->empty_lock);
  txa_block *b = pop_locked(h);
  if (b) h->empty_taken = true;
  txa_lock_release(&h->empty_lock);
  return b;
}

txa_block *txa_empty_cache_steal(txa_heap *self) {
  if (atomic_load_explicit(&reserved_blocks, memory_order_relaxed) <= 0) return NULL;
  for (txa_heap *o = txa_heap_registry(); o; o = o->all_next) {
    if (o == self || !count_of(o) || !txa_lock_try(&o->empty_lock)) continue;
    txa_block *b = pop_locked(o);
    txa_lock_release(&o->empty_lock);
    if (b) return b;
  }
  return NULL;
}

/* Takes h's whole cache when `all` or when h took none of it since the last call; clears
 * the mark. The chain, or NULL. */
static txa_block *detach(txa_heap *h, bool all) {
  txa_block *first = NULL;
  if (all || !h->empty_taken) {
    first = h->empty_first;
    h->empty_first = NULL;
    set_count(h, 0);
    unreserve_above(h, 0);
  }
  h->empty_taken = false;
  return first;
}

static void push_chain(txa_block *b) {
  while (b) {
    txa_block *next = b->next;
    b->next = NULL;
    txa_store_push_empty(b);
    b = next;
  }
}

void txa_empty_cache_flush(txa_heap *h) {
  if (!count_of(h)) return;
  txa_lock_acquire(&h->empty_lock);
  txa_block *chain = detach(h, true);
  txa_lock_release(&h->empty_lock);
  push_chain(chain);
}

void txa_empty_caches_age(bool force) {
  for (txa_heap *h = txa_heap_registry(); h; h = h->all_next) {
    if (force) {
      txa_lock_acquire(&h->empty_lock);
    } else if (!txa_lock_try(&h->empty_lock)) {
      continue; /* its owner is refilling: not idle */
    }
    txa_block *chain = detach(h, force);
    txa_lock_release(&h->empty_lock);
    push_chain(chain);
  }
}
