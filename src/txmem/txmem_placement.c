/* Stripe-aware placement (include/txalloc/txmem.h, "Conflict geometry"): the runtime
 * says over what unit it detects conflicts, and the txalloc strategy spaces the objects
 * txmem allocates so that no two share such a unit unless they are one object.
 *
 * Which objects: everything allocated through txmem (tm_malloc), inside transactions and
 * outside. Those are the objects the program declared transactional: the nodes of a
 * concurrent structure, whether a transaction inserts them or an initial population made
 * them before the threads started (Baldassin et al. §5.1 populate the list outside any
 * transaction). Objects from plain malloc are left dense: spacing costs memory, and they
 * are not what transactions contend on.
 *
 * The spacing itself is the allocator's (alloc/alloc_direct.h): a second class table in
 * which every class's size and alignment are multiples of the stripe, so the spaced fast
 * path is the plain one with another table. Stripes the small classes cannot space (above
 * txa_spacing_max, e.g. 4 KiB) leave placement off: spacing a 16-byte node over a page is
 * not worth its memory. */
#include "txmem/txmem_direct.h"
#include "txmem/txmem_internal.h"
#include "txmem/txmem_options.h"
#include "util/message.h"

static unsigned geometry_shift;   /* 0: none reported */
static uint64_t geometry_entries; /* 0: the units do not wrap round */

/* Spaces the txmem objects for stripes of `stripe` bytes, or not at all when the small
 * classes cannot. */
static void set_spacing(size_t stripe) {
  if (stripe > txa_spacing_max() || !txa_set_spacing(stripe)) {
    if (txalloc_opt(TXALLOC_OPT_VERBOSE))
      txalloc_message("txmem: stripes of %zu bytes are not spaced (largest: %zu)", stripe,
                      txa_spacing_max());
    txa_set_spacing(0);
  }
}

void txmem_set_conflict_geometry(unsigned stripe_shift, uint64_t entries) {
  const txmem_config *cfg = txmem_config_get();
  geometry_shift = stripe_shift;
  geometry_entries = entries;
  size_t stripe = stripe_shift ? (size_t)1 << stripe_shift : 0;
  /* Lock entries that repeat: the allocator colours the threads' blocks against lockstep
   * aliasing (a placement of every object, not only txmem's, so whatever the strategy). */
  uint64_t period = 0;
  if (entries && stripe_shift < 64 &&
      __builtin_mul_overflow((uint64_t)1 << stripe_shift, entries, &period))
    period = UINT64_MAX;
  txa_colour_for_period(period);
  if (cfg->strategy != TXMEM_TXALLOC || !txalloc_opt(TXALLOC_OPT_TXMEM_PLACEMENT)) return;
  set_spacing(stripe);
  /* Runs reserved under the old spacing stop serving (txmem_run.c). */
  atomic_fetch_add_explicit(&txmem_placement_gen, 1, memory_order_relaxed);
}

void txmem_get_conflict_geometry(unsigned *stripe_shift, uint64_t *entries) {
  *stripe_shift = geometry_shift;
  *entries = geometry_entries;
}

size_t txmem_placement_stripe(void) {
  return txmem_config_get()->strategy == TXMEM_TXALLOC ? txa_spacing() : 0;
}
