/* The bounded allocator's internals.
 *
 * Words:
 *   heap    the one region mapped at the first use (thrifty_heap.c); its free blocks, outside
 *           every pool, are on the heap list, under the heap lock.
 *   pool    a thread's free blocks (thrifty_pool.c), on its own list, touched by that thread
 *           alone: no lock, no atomic operation; with owner-returns other threads reach it
 *           only through its return stack (thrifty_returns.c).
 *   block   a 16-byte-aligned span of the heap: a header and, when allocated, the object.
 *
 * A list (thrifty_list.c) is address ordered and first fit. Coalescing uses the order
 * instead of boundary tags: a block put on a list meets its two list neighbours, and merges
 * with each one it touches. Boundary tags would let a free find its address neighbours in
 * O(1), but those neighbours may be free in another thread's pool (a remote free moves
 * blocks between pools), and reading or merging them would race with their owner; the walk
 * that first fit's address order needs anyway finds the neighbours that are this list's.
 * Blocks touching but on different lists stay apart until both reach one list (a refill
 * sends a pool's rest to the heap, where they merge). */
#ifndef TXALLOC_THRIFTY_INTERNAL_H
#define TXALLOC_THRIFTY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/thrifty.h"

#define THRIFTY_ALIGN ((size_t)16)
#define THRIFTY_HEADER ((size_t)16)
#define THRIFTY_MIN_BLOCK ((size_t)32) /* a header and 16 bytes: a free block's link fits */
/* In an allocated block's header; a free block holds its list link there instead, whose
 * upper half is never this (no user-space address has bit 63 set): a double free is seen. */
#define THRIFTY_MAGIC UINT32_C(0xA110C8ED)

/* An allocated block. */
typedef struct thrifty_header {
  uint64_t size;  /* the block's bytes, header included */
  uint32_t pool;  /* id of the pool that served it: a serial number times THRIFTY_RECORDS
                   * plus its return slot (thrifty_pool.c) */
  uint32_t magic; /* THRIFTY_MAGIC */
} thrifty_header;

/* A free block (a span), on one list. */
typedef struct thrifty_span {
  uint64_t size;
  struct thrifty_span *next; /* higher address */
} thrifty_span;

typedef struct thrifty_list {
  thrifty_span *head; /* lowest address */
  size_t free_bytes;
} thrifty_list;

/* The block bytes for a request of `size`; 0 when it overflows. */
static inline size_t thrifty_block_size(size_t size) {
  if (size > SIZE_MAX / 2) return 0;
  size_t b = (size + THRIFTY_HEADER + THRIFTY_ALIGN - 1) & ~(THRIFTY_ALIGN - 1);
  return b < THRIFTY_MIN_BLOCK ? THRIFTY_MIN_BLOCK : b;
}

/* thrifty_list.c. take: the first block of at least `need` bytes (a multiple of 16, >=
 * THRIFTY_MIN_BLOCK), split when the rest makes a block (the caller's part is the
 * block's end, so the list keeps its node); *got = the bytes taken (need, or the whole
 * block when the rest would be too small). NULL when no block fits. */
void *thrifty_list_take(thrifty_list *l, size_t need, size_t *got);
/* Puts [block, block + size) on the list, merged with the list neighbours it touches. */
void thrifty_list_put(thrifty_list *l, void *block, size_t size);
/* Moves every block of `from` onto `to`. */
void thrifty_list_move_all(thrifty_list *to, thrifty_list *from);
/* The largest free block's bytes. */
size_t thrifty_list_largest(const thrifty_list *l);
/* The list's free blocks. */
size_t thrifty_list_count(const thrifty_list *l);

/* thrifty_heap.c. The heap exists after thrifty_heap_init (once; false when it could not be
 * mapped: every allocation then fails). Exchange: under the heap lock, the blocks of
 * `give` go back to the heap, then a run of `want` bytes (or at least `need`) comes out
 * into `into` (*got its bytes; 0 when even `need` did not fit). */
bool thrifty_heap_init(void);
void thrifty_heap_exchange(thrifty_list *give, thrifty_list *into, size_t want, size_t need,
                           size_t *got);
size_t thrifty_heap_size(void);
size_t thrifty_heap_free_bytes(void);
bool thrifty_heap_contains(const void *p);
/* The highest heap_size - heap free seen by an exchange (pools and objects together: that
 * sum changes only at an exchange, so the peak is exact), and its restart from now. */
size_t thrifty_heap_held_peak(void);
void thrifty_heap_reset_held_peak(void);

/* thrifty_returns.c: the owner-returns variant's per-pool return stacks, in a table of
 * THRIFTY_RECORDS slots (slot 0 is none: a pool that found no free slot keeps the paper's
 * freer-returns). claim: a free slot, opened (0 when none). push: any thread, lock-free;
 * false when the slot is closed (the freer keeps the block). pending/drain: the owner; drain
 * moves the pending blocks onto `into`. close: the owner, once; a later push fails, and the
 * blocks pending until then go onto `into`. drain and close return the blocks moved. */
#define THRIFTY_RECORDS 1024u
uint32_t thrifty_returns_claim(void);
bool thrifty_returns_push(uint32_t slot, void *block, size_t size);
bool thrifty_returns_pending(uint32_t slot);
size_t thrifty_returns_drain(uint32_t slot, thrifty_list *into);
size_t thrifty_returns_close(uint32_t slot, thrifty_list *into);

/* thrifty_stats.c: counters, and the pressure (a relaxed atomic add per allocation and
 * free, so that the peak of the sum over threads is exact). */
enum {
#define THRIFTY_COUNTER_ID_(name, doc) THRIFTY_C_##name,
  THRIFTY_STATS_COUNTERS(THRIFTY_COUNTER_ID_)
#undef THRIFTY_COUNTER_ID_
      THRIFTY_C_COUNT_
};
void thrifty_count(int counter, uint64_t add);
void thrifty_pressure_add(size_t bytes);
void thrifty_pressure_sub(size_t bytes);

#endif
