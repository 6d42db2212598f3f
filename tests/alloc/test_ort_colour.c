/* Block colouring: two threads' blocks never map onto the same ORT entries in lockstep.
 *
 * Workload: two threads, the first two to take a heap in this process (colours 0 and
 * 1/2, heap.c), allocate in strict alternation (a turn word: A's k-th object, then B's
 * k-th, ...) so that their blocks are carved one after the other from the same chunk, as
 * in a concurrent run, until each filled BLOCKS blocks of one class. For every ORT
 * geometry of a TinySTM-style map (lock = (addr >> shift) mod 2^n, shift 3..12, n 4..24)
 * whose period 2^(shift + n) is at least a block (16 KiB), A's k-th object and B's k-th
 * object must cover disjoint lock sets, for every k and for small classes from 16 B to
 * 1 KiB. Without the colours the threads' blocks are adjacent, so at a period of 16 KiB
 * (2^9 locks of 32 B) every k-th pair shares its locks: the check fails.
 *
 * The colours cost a page per block with few objects, so they are off until a TM runtime
 * reports an ORT of at least a block (txa_colour_for_period; option heap_colour = 2, the
 * default). First, with none reported (and after a period below a block), every thread's
 * blocks must start at their first object; then, with a 32 MiB period, the check above. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "alloc/internal.h"
#include "check.h"
#include "txalloc/txalloc.h"

#define BLOCKS 3
#define MAX_OBJECTS (BLOCKS * (TXA_BLOCK_SIZE / 16))

static uintptr_t objects[2][MAX_OBJECTS];
static size_t object_count;
static size_t request;
static _Atomic int turn;

static void *worker(void *arg) {
  int me = (int)(intptr_t)arg;
  for (size_t k = 0; k < object_count; k++) {
    while (atomic_load_explicit(&turn, memory_order_acquire) != me) sched_yield();
    objects[me][k] = (uintptr_t)txalloc_malloc(request);
    atomic_store_explicit(&turn, 1 - me, memory_order_release);
  }
  /* Freed by their owner, so that the main thread never takes a heap; the empty blocks go
   * back to the store, and the next pair of threads recolours them. */
  for (size_t k = 0; k < object_count; k++) txalloc_free((void *)objects[me][k]);
  return NULL;
}

/* Lock indices [first, last] of an object, unreduced (before the modulo). */
static bool share_a_lock(uintptr_t a, uintptr_t b, size_t size, unsigned shift, unsigned n) {
  uint64_t mask = ((uint64_t)1 << n) - 1;
  for (uintptr_t x = a >> shift; x <= (a + size - 1) >> shift; x++)
    for (uintptr_t y = b >> shift; y <= (b + size - 1) >> shift; y++)
      if (((x ^ y) & mask) == 0) return true;
  return false;
}

/* Two workers fill `blocks` blocks each of the class of `size` in strict alternation. */
static void run_pair(size_t size, size_t blocks) {
  request = size;
  object_count = blocks * txa_classes[txa_size_class(size)].capacity;
  CHECK(object_count >= blocks && object_count <= MAX_OBJECTS);
  atomic_store(&turn, 0);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

/* Without heap colours, each worker's first object is its block's first bump object: at
 * the class's first offset plus the block's L1 colour, below one L1 page past it. */
static void check_uncoloured(size_t size) {
  run_pair(size, 1);
  const txa_class_info *ci = &txa_classes[txa_size_class(size)];
  for (int me = 0; me < 2; me++) {
    uintptr_t offset = objects[me][0] & (TXA_BLOCK_SIZE - 1);
    CHECKF(offset >= ci->first_offset &&
               offset < ci->first_offset + (uintptr_t)ci->colours * ci->colour_step,
           "%u-byte class, worker %d: first object at offset %zu without heap colours", ci->size,
           me, (size_t)offset);
  }
}

static void run_class(size_t size) {
  unsigned c = txa_size_class(size);
  run_pair(size, BLOCKS);
  CHECK(object_count > (size_t)BLOCKS);
  size_t obj = txa_classes[c].size;
  int bad_geometries = 0;
  for (unsigned shift = 3; shift <= 12; shift++) {
    for (unsigned n = 4; n <= 24; n++) {
      if (shift + n < TXA_BLOCK_SHIFT) continue; /* an ORT smaller than a block */
      size_t hits = 0;
      for (size_t k = 0; k < object_count; k++)
        hits += share_a_lock(objects[0][k], objects[1][k], obj, shift, n);
      if (hits) bad_geometries++;
      CHECKF(hits == 0,
             "%zu-byte objects, shift %u, 2^%u locks: %zu of %zu k-th pairs share a lock", obj,
             shift, n, hits, object_count);
    }
  }
  printf("%4zu-byte class: %zu objects per thread, %d geometries with lockstep aliasing\n", obj,
         object_count, bad_geometries);
}

int main(void) {
  /* The main thread takes no heap: each pair of workers takes acquisitions 2j and 2j + 1,
   * whose colours are half a block apart. */
  txa_init(); /* the class table; takes no heap */
  static const size_t sizes[] = {16, 32, 48, 64, 128, 256, 512, 1024};
  check_uncoloured(256);
  txa_colour_for_period((uint64_t)8 << 10); /* an ORT smaller than a block: no colours */
  check_uncoloured(512);
  txa_colour_for_period((uint64_t)32 << 20);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) run_class(sizes[i]);
  return check_exit();
}
