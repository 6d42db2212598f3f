/* The block store: global non-blocking LIFOs of blocks (McRT §3.2, Figure 1).
 *
 * ABA protection by tag bits freed by alignment: a block address is a multiple of 16 KiB
 * below 2^47, so it fits in 33 bits (address >> 14); the other 31 bits of the 64-bit top
 * word hold a version that every push and pop increments. A pop that read top = (A, v)
 * and A->next = B succeeds only if top is still (A, v); any pop or push in between changed
 * v, so the CAS fails instead of installing a stale B. Wrap-around needs 2^31 operations on
 * one stack while a thread sleeps between its load and its CAS. Block headers are never
 * unmapped and the links live in a side table (txa_block_link), so reading A's link after
 * A was popped meanwhile is harmless: the value is discarded when the CAS fails. Because
 * the links are outside the blocks, a decommitted block keeps no page at all.
 *
 * Stacks: empty blocks per span kind in three generations: "young" (freed since the last
 * purge tick), "old" (freed before it; memory still committed) and "clean" (decommitted);
 * abandoned part-used blocks per size class.
 *
 * Decommit by generations: a purge tick (at most every decommit_delay_ms / 2, run by the
 * thread that returns a block) decommits the whole old generation and moves the young one
 * to old with a single CAS, so a block is decommitted between delay/2 and about delay
 * after it became empty, and the purge never hides blocks that stay committed from other
 * threads for longer than a chain splice. Above decommit_threshold_mb of committed empty
 * blocks, old and then young are decommitted at once. */
#include "alloc/internal.h"

#define PTR_BITS 33
#define PTR_MASK ((UINT64_C(1) << PTR_BITS) - 1)

typedef struct lifo {
  _Alignas(TXA_CACHE_LINE) _Atomic(uint64_t) top;
} lifo;

static lifo young_empty[2], old_empty[2], clean_empty[2], abandoned[TXA_CLASSES];
static _Atomic(int64_t) dirty_bytes; /* committed empty blocks (young + old) */
static _Atomic(uint64_t) next_purge_ms;

static inline txa_block *ptr_of(uint64_t top) {
  return (txa_block *)(uintptr_t)((top & PTR_MASK) << TXA_BLOCK_SHIFT);
}
static inline uint64_t version_after(uint64_t top) { return ((top >> PTR_BITS) + 1) << PTR_BITS; }

static void lifo_push(lifo *s, txa_block *b) {
  uint64_t old = atomic_load_explicit(&s->top, memory_order_relaxed), desired;
  do {
    atomic_store_explicit(txa_block_link(b), old & PTR_MASK, memory_order_relaxed);
    desired = version_after(old) | ((uintptr_t)b >> TXA_BLOCK_SHIFT);
  } while (!atomic_compare_exchange_weak_explicit(&s->top, &old, desired, memory_order_release,
                                                  memory_order_relaxed));
}

static txa_block *lifo_pop(lifo *s) {
  uint64_t old = atomic_load_explicit(&s->top, memory_order_acquire), desired;
  txa_block *b;
  do {
    b = ptr_of(old);
    if (!b) return NULL;
    uint64_t next = atomic_load_explicit(txa_block_link(b), memory_order_relaxed);
    desired = version_after(old) | (next & PTR_MASK);
  } while (!atomic_compare_exchange_weak_explicit(&s->top, &old, desired, memory_order_acquire,
                                                  memory_order_acquire));
  return b;
}

/* Takes the whole stack; returns its first block (chained through the links). */
static txa_block *lifo_take_all(lifo *s) {
  uint64_t old = atomic_load_explicit(&s->top, memory_order_acquire);
  while (ptr_of(old) &&
         !atomic_compare_exchange_weak_explicit(&s->top, &old, version_after(old),
                                                memory_order_acquire, memory_order_acquire)) {
  }
  return ptr_of(old);
}

static txa_block *chain_next(txa_block *b) {
  return ptr_of(atomic_load_explicit(txa_block_link(b), memory_order_relaxed));
}

/* Pushes the chain first..last (linked through the links) with one CAS. */
static void lifo_push_chain(lifo *s, txa_block *first, txa_block *last) {
  uint64_t old = atomic_load_explicit(&s->top, memory_order_relaxed), desired;
  do {
    atomic_store_explicit(txa_block_link(last), old & PTR_MASK, memory_order_relaxed);
    desired = version_after(old) | ((uintptr_t)first >> TXA_BLOCK_SHIFT);
  } while (!atomic_compare_exchange_weak_explicit(&s->top, &old, desired, memory_order_release,
                                                  memory_order_relaxed));
}

/* Committed empty blocks beyond the threshold, given `dirty` bytes in the store; the heaps'
 * caches of empty blocks count too, with what they may hold (reserved). */
static bool exceeds_threshold(int64_t dirty) {
  return (uint64_t)(dirty + txa_empty_cache_reserved_bytes()) > txa_g.decommit_threshold;
}

static inline unsigned kind_index(unsigned kind) { return kind == TXA_KIND_SMALL ? 0 : 1; }

void txa_store_push_empty(txa_block *b) {
  size_t span = txa_span_size(b->span_kind);
  b->capacity = 0; /* frees into an empty block are invalid */
  uint64_t now = txa_os_now_ms();
  lifo_push(&young_empty[kind_index(b->span_kind)], b);
  atomic_fetch_add_explicit(&txa_blocks_in_store, 1, memory_order_relaxed);
  TXA_GCOUNT(blocks_to_store, 1);
  int64_t dirty =
      atomic_fetch_add_explicit(&dirty_bytes, (int64_t)span, memory_order_relaxed) + (int64_t)span;
  if (exceeds_threshold(dirty) || now >= atomic_load_explicit(&next_purge_ms, memory_order_relaxed))
    txa_store_purge(false);
}

static void taken_from_store(void) {
  atomic_fetch_sub_explicit(&txa_blocks_in_store, 1, memory_order_relaxed);
  TXA_GCOUNT(blocks_from_store, 1);
}

txa_block *txa_store_pop_committed(unsigned kind) {
  txa_block *b = lifo_pop(&young_empty[kind_index(kind)]);
  if (!b) b = lifo_pop(&old_empty[kind_index(kind)]);
  if (!b) return NULL;
  atomic_fetch_sub_explicit(&dirty_bytes, (int64_t)txa_span_size(kind), memory_order_relaxed);
  taken_from_store();
  return b;
}

txa_block *txa_store_pop_clean(unsigned kind) {
  txa_block *b = lifo_pop(&clean_empty[kind_index(kind)]);
  if (!b) return NULL;
  txa_committed_add((int64_t)txa_span_size(kind));
  b->span_kind = (uint8_t)kind;
  taken_from_store();
  return b;
}

txa_block *txa_store_pop_empty(unsigned kind) {
  txa_block *b = txa_store_pop_committed(kind);
  return b ? b : txa_store_pop_clean(kind);
}

void txa_store_push_abandoned(txa_block *b) {
  lifo_push(&abandoned[b->class_id], b);
  atomic_fetch_add_explicit(&txa_blocks_in_store, 1, memory_order_relaxed);
}

txa_block *txa_store_pop_abandoned(unsigned class_id) {
  txa_block *b = lifo_pop(&abandoned[class_id]);
  if (b) atomic_fetch_sub_explicit(&txa_blocks_in_store, 1, memory_order_relaxed);
  return b;
}

/* Decommits a chain of empty blocks into the clean stack. */
static void decommit_chain(unsigned ki, txa_block *b) {
  size_t span = ki == 0 ? TXA_BLOCK_SIZE : TXA_MEDIUM_SPAN;
  while (b) {
    txa_block *next = chain_next(b);
    txa_os_decommit(b, span);
    txa_committed_add(-(int64_t)span);
    atomic_fetch_sub_explicit(&dirty_bytes, (int64_t)span, memory_order_relaxed);
    TXA_GCOUNT(spans_decommitted, 1);
    lifo_push(&clean_empty[ki], b);
    b = next;
  }
}

static bool over_threshold(void) {
  return exceeds_threshold(atomic_load_explicit(&dirty_bytes, memory_order_relaxed));
}

/* pre: txa_purge_lock held. */
static void purge_kind(unsigned ki, bool force, bool tick) {
  if (force || tick || over_threshold()) decommit_chain(ki, lifo_take_all(&old_empty[ki]));
  if (force || over_threshold()) {
    decommit_chain(ki, lifo_take_all(&young_empty[ki]));
  } else if (tick) {
    txa_block *first = lifo_take_all(&young_empty[ki]);
    if (first) {
      txa_block *last = first;
      for (txa_block *n; (n = chain_next(last)) != NULL;) last = n;
      lifo_push_chain(&old_empty[ki], first, last);
    }
  }
}

void txa_store_maybe_purge(void) {
  if (txa_os_now_ms() >= atomic_load_explicit(&next_purge_ms, memory_order_relaxed) ||
      over_threshold())
    txa_store_purge(false);
}

void txa_store_purge(bool force) {
  if (force) {
    txa_lock_acquire(&txa_purge_lock);
  } else {
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&txa_purge_lock.held, &expected, 1,
                                                 memory_order_acquire, memory_order_relaxed))
      return; /* another thread is purging */
  }
  uint64_t now = txa_os_now_ms();
  bool tick = now >= atomic_load_explicit(&next_purge_ms, memory_order_relaxed);
  /* Idle heaps' caches join the young generation first, which this tick makes old. */
  if (tick || force) txa_empty_caches_age(force);
  purge_kind(0, force, tick);
  purge_kind(1, force, tick);
  if (tick || force) {
    uint64_t pause = txa_g.decommit_delay_ms / 2;
    atomic_store_explicit(&next_purge_ms, now + (pause ? pause : 1), memory_order_relaxed);
  }
  txa_lock_release(&txa_purge_lock);
}

void txa_store_reclaim_abandoned(void) {
  /* Under the purge lock, so that fork never finds blocks taken out of the stacks. */
  txa_lock_acquire(&txa_purge_lock);
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    txa_block *b = lifo_take_all(&abandoned[c]);
    while (b) {
      txa_block *next = chain_next(b);
      atomic_fetch_sub_explicit(&txa_blocks_in_store, 1, memory_order_relaxed);
      /* We hold b exclusively (it is out of every stack), so we are its only consumer. */
      txa_block_repatriate(b);
      if (txa_used(b) == 0) {
        txa_store_push_empty(b);
      } else {
        txa_store_push_abandoned(b);
      }
      b = next;
    }
  }
  txa_lock_release(&txa_purge_lock);
}
