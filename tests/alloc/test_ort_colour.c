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
 * (2^9 locks of 32 B) every k-th pair shares its locks: the check fails. */
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

static void run_class(size_t size) {
  request = size;
  unsigned c = txa_size_class(size);
  object_count = (size_t)BLOCKS * txa_classes[c].capacity;
  CHECK(object_count > (size_t)BLOCKS && object_count <= MAX_OBJECTS);
  atomic_store(&turn, 0);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
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
   * whose colours are half a block apart (the first pair: 0 and 1/2). */
  txa_init(); /* the class table; takes no heap */
  static const size_t sizes[] = {16, 32, 48, 64, 128, 256, 512, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) run_class(sizes[i]);
  return check_exit();
}
