/* Stripe-aware placement (txmem_set_conflict_geometry): under strategy txalloc, objects
 * allocated through txmem, inside a transaction or outside, never share a stripe of the
 * reported geometry; under the wrap strategies placement is the process malloc's (0).
 *
 * Workload: for stripes of 32 and 64 bytes (and 8 and 16, which need no spacing), 2000
 * objects of every request size from 1 to 160 bytes and a few up to 1 KiB, half inside a
 * transaction (committed) and half outside: each must start on a stripe boundary, its
 * usable size must be whole stripes, and up to 128 bytes exactly the request rounded up to
 * the stripe (the least any spacing can cost). Then a 4 KiB stripe, which the small classes
 * cannot space, and no geometry (a global lock): placement is off.
 *
 * The first report of lock entries that repeat every block or more also turns on the
 * allocator's heap colours (option heap_colour at its default), off until then. */
#include <stdint.h>
#include <stdlib.h>

#include "alloc/alloc_direct.h"
#include "check.h"
#include "txalloc/txalloc.h"
#include "txalloc/txmem.h"

#define OBJECTS 64

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static void check_stripe(unsigned shift, bool inside) {
  size_t stripe = (size_t)1 << shift;
  txmem_set_conflict_geometry(shift, (uint64_t)1 << 20);
  bool spaced = txmem_get_strategy() == TXMEM_TXALLOC;
  size_t expected = spaced && stripe > 16 ? stripe : 0;
  CHECKF(txmem_placement_stripe() == expected, "stripe %zu: placement %zu", stripe,
         txmem_placement_stripe());
  if (!spaced) return;
  static const size_t big[] = {200, 255, 256, 300, 512, 700, 1000, 1024};
  void *objects[OBJECTS];
  for (size_t i = 0; i < 160 + sizeof big / sizeof big[0]; i++) {
    size_t size = i < 160 ? i + 1 : big[i - 160];
    if (inside) txmem_tx_begin(1);
    for (int k = 0; k < OBJECTS; k++) objects[k] = txmem_malloc(size);
    if (inside) txmem_tx_commit(1);
    for (int k = 0; k < OBJECTS; k++) {
      uintptr_t a = (uintptr_t)objects[k];
      size_t usable = txalloc_usable_size(objects[k]);
      CHECKF(a % stripe == 0 && usable % stripe == 0 && usable >= size,
             "stripe %zu, %zu bytes %s: object %p of %zu usable bytes", stripe, size,
             inside ? "inside" : "outside", objects[k], usable);
      if (size <= 128 && stripe <= 128)
        CHECKF(usable == round_up(size, stripe > 16 ? stripe : 16),
               "stripe %zu: %zu bytes cost %zu", stripe, size, usable);
    }
    for (int k = 0; k < OBJECTS; k++) txmem_free(objects[k]);
  }
  /* calloc outside a transaction is spaced too, and zeroed */
  unsigned char *z = txmem_calloc(3, 5);
  CHECK(z && (uintptr_t)z % stripe == 0 && z[0] == 0 && z[14] == 0);
  txmem_free(z);
}

int main(void) {
  bool default_colour = getenv("TXALLOC_HEAP_COLOUR") == NULL;
  if (default_colour) {
    txmem_set_conflict_geometry(0, 0); /* a global lock: no entries to alias */
    CHECK(!txa_heap_colour());
  }
  for (unsigned shift = 3; shift <= 6; shift++) {
    check_stripe(shift, true);
    check_stripe(shift, false);
  }
  if (default_colour) CHECK(txa_heap_colour()); /* 2^20 entries of 8..64 bytes */
  /* A page-sized stripe is not spaced: a 16-byte object would take 4 KiB. */
  txmem_set_conflict_geometry(12, (uint64_t)1 << 20);
  CHECK(txmem_placement_stripe() == 0);
  unsigned shift;
  uint64_t entries;
  txmem_get_conflict_geometry(&shift, &entries);
  CHECK(shift == 12 && entries == (uint64_t)1 << 20);
  if (txmem_get_strategy() == TXMEM_TXALLOC) {
    void *p = txmem_malloc(16);
    CHECK(txalloc_usable_size(p) == 16);
    txmem_free(p);
  }
  txmem_set_conflict_geometry(0, 0); /* a global lock: nothing to space */
  CHECK(txmem_placement_stripe() == 0);
  return check_exit();
}
