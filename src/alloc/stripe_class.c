/* Stripe-spaced class tables: for a stripe of 2^k bytes, the class of each small request
 * such that no two objects share a stripe unless they are one object. A class qualifies
 * when its size and its alignment are both multiples of the stripe: every object then
 * starts on a stripe boundary and ends on one, so an object's stripes are its own.
 *
 * The tables are built from txa_classes[] after the class table exists, by choosing for
 * each request the smallest qualifying class among the small ones (the fast paths of the
 * layers above, txa_direct_take_spaced and its give-back, serve small classes only). They
 * are lookup tables of the same shape as txa_class_by_16, so a spaced allocation costs
 * the same as a plain one.
 *
 * Two uses:
 *   - option stripe (TXALLOC_STRIPE): the allocator spaces every small object, for TM
 *     runtimes that do not tell txmem their geometry (TinySTM, libitm over the preloaded
 *     library). It remaps txa_class_by_16 itself at initialisation: malloc's fast path is
 *     unchanged.
 *   - txa_spaced_class_by_16: the table of the transactional layer's allocations
 *     (txa_direct_take_spaced), set by txa_set_spacing to the larger of the option's stripe
 *     and the stripe the TM runtime reported. Without either it equals txa_class_by_16.
 *
 * A stripe no class table can serve (no small class is aligned to it) is refused: the
 * option with a message, txa_set_spacing by its result. */
#include "alloc/internal.h"
#include "util/message.h"

uint8_t txa_spaced_class_by_16[TXA_SMALL_MAX / 16 + 1];
static size_t option_stripe; /* bytes, 0: none; set once at initialisation */
static size_t spaced_stripe; /* stripe of txa_spaced_class_by_16, 0: none */

static bool power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Smallest small class of at least `size` bytes whose size and alignment are multiples of
 * `stripe`, or TXA_CLASSES when there is none. */
static unsigned spaced_class(size_t size, size_t stripe) {
  for (unsigned c = 0; c < TXA_CLASSES && txa_classes[c].size <= TXA_SMALL_MAX; c++) {
    const txa_class_info *ci = &txa_classes[c];
    if (ci->size >= size && ci->size % stripe == 0 && ci->align % stripe == 0) return c;
  }
  return TXA_CLASSES;
}

bool txa_stripe_table_build(uint8_t *table, size_t stripe) {
  uint8_t built[TXA_SMALL_MAX / 16 + 1];
  for (size_t g = 0; g <= TXA_SMALL_MAX / 16; g++) {
    unsigned c = stripe <= 16 ? txa_class_by_16[g] : spaced_class(g ? g * 16 : 1, stripe);
    if (c == TXA_CLASSES) return false;
    built[g] = (uint8_t)c;
  }
  /* Readers may load entries while a later txa_set_spacing rewrites them: each entry is a
   * valid class before and after, so byte-wise relaxed stores suffice. */
  for (size_t g = 0; g <= TXA_SMALL_MAX / 16; g++)
    __atomic_store_n(&table[g], built[g], __ATOMIC_RELAXED);
  return true;
}

static size_t largest_stripe(void) {
  size_t best = 16; /* the class for the largest request serves every smaller one too */
  for (size_t s = 32; s <= TXA_SMALL_MAX && spaced_class(TXA_SMALL_MAX, s) != TXA_CLASSES; s *= 2)
    best = s;
  return best;
}

size_t txa_spacing_max(void) {
  txa_init();
  return largest_stripe();
}

void txa_stripe_init(void) {
  size_t stripe = (size_t)txalloc_opt(TXALLOC_OPT_STRIPE);
  if (stripe > 16) {
    if (!power_of_two(stripe) || stripe > largest_stripe()) {
      txalloc_message("TXALLOC_STRIPE=%zu: not a power of two from 16 to %zu (the largest "
                      "alignment the small classes share); objects are not spaced",
                      stripe, largest_stripe());
    } else if (txa_stripe_table_build(txa_class_by_16, stripe)) {
      option_stripe = stripe;
    }
  }
  for (size_t g = 0; g <= TXA_SMALL_MAX / 16; g++) txa_spaced_class_by_16[g] = txa_class_by_16[g];
  spaced_stripe = option_stripe;
}

size_t txa_alloc_stripe(void) {
  txa_init();
  return option_stripe;
}

bool txa_set_spacing(size_t stripe) {
  txa_init();
  if (stripe < option_stripe) stripe = option_stripe;
  if (stripe != 0 && !power_of_two(stripe)) return false;
  if (stripe <= 16) stripe = 0;
  if (stripe == spaced_stripe) return true;
  if (!txa_stripe_table_build(txa_spaced_class_by_16, stripe ? stripe : 16)) return false;
  spaced_stripe = stripe;
  return true;
}

size_t txa_spacing(void) { return spaced_stripe; }

/* The slow path of a spaced request: the spaced class itself, which the plain lookup may
 * not reach (a class only aligned allocation reaches, or one option stripe remapped). */
static void *spaced_alloc(size_t size, bool zero) {
  if (size > TXA_DIRECT_SMALL_MAX) return zero ? txalloc_calloc(1, size) : txalloc_malloc(size);
  txa_init();
  return txa_class_malloc(
      __atomic_load_n(&txa_spaced_class_by_16[(size + 15) >> 4], __ATOMIC_RELAXED), zero);
}

void *txa_spaced_malloc(size_t size) { return spaced_alloc(size, false); }
void *txa_spaced_calloc(size_t size) { return spaced_alloc(size, true); }
