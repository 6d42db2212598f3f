/* The size-class table and cache-index-aware placement (Afek, Dice & Morrison; Dice et al.
 * §2-§3).
 *
 * Base table: 16-byte steps up to 128 B, then eight classes per doubling up to 128 KiB, so
 * above 128 B a request wastes less than 12.5 % of its class (between 64 and 128 B the
 * 16-byte alignment floor dominates: at most 15 B). Classes up to 1 KiB live in 16 KiB
 * blocks (at least 15 objects), larger ones in 1 MiB spans (at least 7). Lookup: one table
 * by 16 B up to 1 KiB, one by 64 B above (medium classes are whole lines).
 *
 * Why placement: the L1 maps an address to set (address / line) mod sets, so its index
 * pattern repeats every sets x line bytes (4 KiB by default). Objects allocated in a row
 * sit one class size apart; a stride s reaches only (sets x line) / gcd(s, sets x line)
 * offsets of that page, so a class that is a multiple of 2 lines puts a run of objects on
 * at most half the sets: 512 B on 8 of 64, 1 KiB on 4, 4 KiB on one. Under a hardware TM
 * the write set lives in the L1, and a set that needs more lines than it has ways aborts
 * the transaction (capacity) however small the write set is.
 *
 * With placement on (option l1_sets > 0), the base table is adjusted, at most 12 % waste
 * kept (above 128 B, default geometry; the classes of 128 B and less never change):
 *   - a class of 1 KiB or more that is a multiple of 2 lines grows by one line: every
 *     class from 1088 B up is an odd number of lines, so any run of `sets` objects of one
 *     span covers every set once, and its objects are line-aligned (a k-line object
 *     touches k lines). The 1088-B class serves requests up to 1 KiB, so it stays in
 *     16 KiB blocks (txa_direct_give_back relies on that), 14 to a block;
 *   - a class below 1 KiB that is a multiple of 2 lines, or a whole number of lines with
 *     fewer than sets / 2 objects to a block (576 B and up), grows by 16 B to an odd
 *     multiple of 16. A block then holds too few objects to cover the sets by itself, and
 *     the next block's run (shifted by its colour, below) must land between the sets of
 *     this one: odd-16 strides scatter a block's sets so that shifted runs interleave,
 *     where odd-line strides form a progression that a shift of a few lines mostly
 *     repeats (576 B: 35 sets for 128 objects against 43 at 592 B);
 *   - aligned allocation (which needs classes whose objects are aligned to a power of
 *     two) gets the power-of-two sizes that left the table back as classes of their own,
 *     which only it reaches: 256 B ... 128 KiB.
 * Block colouring: the first object of each block (small or medium) moves by a multiple
 * of max(line, 64, the class's alignment), counting up per bin from block to block, so
 * that the objects at the same index of consecutive blocks do not share a set. Colours
 * stay within the tail the block leaves unused anyway (and below one L1 page), so
 * colouring costs no capacity; a class with no such room is not coloured.
 * With the default geometry, 128 objects of any class allocated in a row from a fresh
 * bin cover at least 38 of the 64 sets above 128 B (the 128-B class itself, aligned to
 * 128, covers 32), at most 6 to a set, whatever colour the bin starts from.
 *
 * Each object of a class is aligned to the class's natural alignment (the largest power of
 * two dividing its size; McRT §3.1), since the first object sits at the block header
 * rounded up to it and colours are multiples of it; aligned allocation picks a class whose
 * alignment suffices. First-object offset and capacity are copied into each block header,
 * so a block's layout is its own. */
#include "alloc/internal.h"

txa_class_info txa_classes[TXA_CLASSES];
unsigned txa_class_count;
uint8_t txa_class_by_16[TXA_SMALL_MAX / 16 + 1];
uint8_t txa_class_by_64[TXA_MEDIUM_MAX / 64 + 1];

static uint32_t natural_alignment(uint32_t size) { return size & (~size + 1); }

static uint32_t floor_power_of_two(uint32_t x) {
  return x ? UINT32_C(1) << (31 - __builtin_clz(x)) : 0;
}

static uint32_t gcd(uint32_t a, uint32_t b) {
  while (b) {
    uint32_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/* The L1 geometry placement works for; sets == 0: placement off. */
typedef struct l1_geometry {
  uint32_t sets, line, page; /* page = sets x line: the period of the set index */
} l1_geometry;

static l1_geometry read_geometry(void) {
  l1_geometry g;
  g.sets = floor_power_of_two((uint32_t)txalloc_opt(TXALLOC_OPT_L1_SETS));
  g.line = floor_power_of_two((uint32_t)txalloc_opt(TXALLOC_OPT_L1_LINE));
  g.page = g.sets * g.line;
  return g;
}

/* The class that replaces a base-table size under geometry g (see the comment above). */
static uint32_t index_friendly(uint32_t size, l1_geometry g) {
  if (!g.sets || size <= 128) return size;
  bool crowded = gcd(size, g.page) > g.line; /* a multiple of 2 lines: <= sets / 2 reached */
  if (size >= TXA_SMALL_MAX) return crowded ? size + g.line : size;
  uint32_t per_block = (uint32_t)((TXA_BLOCK_SIZE - TXA_BLOCK_HEADER) / size);
  if (crowded || (size % g.line == 0 && per_block < g.sets / 2)) return size + 16;
  return size;
}

/* Appends a class. `small`: it lives in 16 KiB blocks (it serves requests up to
 * TXA_SMALL_MAX, which txa_direct_give_back relies on). */
static void add_class(unsigned *n, uint32_t size, bool small, bool aligned_only) {
  txa_class_info *ci = &txa_classes[(*n)++];
  ci->size = size;
  ci->span_shift = small ? TXA_BLOCK_SHIFT : TXA_GRANULE_SHIFT;
  ci->aligned_only = aligned_only;
}

/* Fills in a class's layout from its size and span. */
static void lay_out(txa_class_info *ci, l1_geometry g) {
  uint32_t align = natural_alignment(ci->size);
  uint32_t first = (TXA_BLOCK_HEADER + align - 1) / align * align;
  size_t span = (size_t)1 << ci->span_shift;
  ci->first_offset = first;
  ci->capacity = (uint32_t)((span - first) / ci->size);
  ci->align = align;
  ci->inverse = (((uint64_t)1 << 40) / ci->size) + 1;
  /* Colours: multiples of step (which keep the alignment) within the unused tail, below
   * one L1 page. */
  uint32_t step = align > TXA_CACHE_LINE ? align : TXA_CACHE_LINE;
  if (g.line > step) step = g.line;
  size_t room = span - first - (size_t)ci->capacity * ci->size;
  size_t page_room = g.page > step ? g.page - step : 0;
  ci->colour_step = step;
  ci->colours = g.sets ? (uint32_t)((room < page_room ? room : page_room) / step) + 1 : 1;
}

void txa_classes_init(void) {
  uint32_t base[TXA_BASE_CLASSES];
  unsigned m = 0;
  for (uint32_t s = 16; s <= 128; s += 16) base[m++] = s;
  for (uint32_t b = 128; b < TXA_MEDIUM_MAX; b *= 2)
    for (uint32_t k = 1; k <= 8; k++) base[m++] = b + k * (b / 8);

  l1_geometry g = read_geometry();
  unsigned n = 0;
  uint32_t last = 0, power = 256; /* the next power of two aligned allocation may need */
  for (unsigned i = 0; i < m; i++) {
    uint32_t size = index_friendly(base[i], g);
    for (; power <= TXA_MEDIUM_MAX && power <= size; power *= 2)
      if (power != size && power > last) add_class(&n, power, power <= TXA_SMALL_MAX, true);
    if (size <= last) continue; /* adjusted onto the next size (some geometries) */
    add_class(&n, size, base[i] <= TXA_SMALL_MAX, false);
    last = size;
  }
  txa_class_count = n;
  for (unsigned c = 0; c < n; c++) lay_out(&txa_classes[c], g);

  unsigned c = 0;
  for (size_t q = 0; q <= TXA_SMALL_MAX / 16; q++) {
    while (txa_classes[c].aligned_only || txa_classes[c].size < q * 16) c++;
    txa_class_by_16[q] = (uint8_t)c;
  }
  c = 0;
  for (size_t q = 0; q <= TXA_MEDIUM_MAX / 64; q++) {
    while (txa_classes[c].aligned_only || txa_classes[c].size < q * 64) c++;
    txa_class_by_64[q] = (uint8_t)c;
  }
}

unsigned txa_aligned_class(size_t size, size_t align) {
  unsigned c = txa_size_class(size);
  while (c > 0 && txa_classes[c - 1].size >= size) c--; /* an aligned-only class below */
  for (; c < txa_class_count; c++)
    if (txa_classes[c].align >= align) return c;
  return txa_class_count;
}
