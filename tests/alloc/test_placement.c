/* Cache-index-aware placement (size_class.c, docs/allocator.md "Size classes"): what it
 * guarantees with the default L1 geometry (64 sets x 64 B), and the plain layout with
 * TXALLOC_L1_SETS=0 (ctest alloc_placement_off runs this program so).
 *
 * Workload, placement on: for every node size of the ring benchmark served by a class (64 B
 * .. TXA_RUNS_MIN in steps of 64, and 1008), in a class not used before, 128 objects malloc'ed in a
 * row by one thread: their base addresses cover at least 32 of the 64 sets (the 128-byte class,
 * which keeps its 128-byte alignment, exactly 32; every other one at least 38), at most 6 on one
 * set. Each block's first object sits at the class's first offset plus the bin's next
 * colour (consecutive colours, multiples of 64 and of the class's alignment, within the
 * block's unused tail); every object lies inside its block, after the header, apart from
 * its neighbours; every request up to 1 KiB has a class in 16 KiB blocks; aligned allocation
 * returns aligned objects for every power-of-two alignment 16 B .. 256 KiB and sizes around it, a
 * power of two aligned to itself without waste; runs (above TXA_RUNS_MIN, up to 3x it, in
 * steps of 64 B) of one size cut in a row cover at least 32 sets, at most 4 on one. Placement off:
 * the base table (16-byte steps to 128 B, then 8 per doubling), no colour, and the crowding the
 * placement exists to avoid (512 B on 8 sets, 1 KiB on 4). */
#include "alloc/internal.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/options.h"
#include "txalloc/txalloc.h"

enum { NODES = 128, SETS = 64, LINE = 64, PAGE = SETS * LINE };

static bool placement_on(void) {
  return txalloc_option_value((size_t)txalloc_option_find("l1_sets")) != 0;
}

static const txa_class_info *class_of(size_t size) { return &txa_classes[txa_size_class(size)]; }

typedef struct spread {
  int sets, fullest;
} spread;

static spread spread_of(void *const *p, size_t n) {
  int per_set[SETS] = {0};
  spread s = {0, 0};
  for (size_t i = 0; i < n; i++) {
    int set = (int)(((uintptr_t)p[i] % PAGE) / LINE);
    if (per_set[set]++ == 0) s.sets++;
    if (per_set[set] > s.fullest) s.fullest = per_set[set];
  }
  return s;
}

/* Objects p[0..n) of class ci, allocated in a row from a bin not used before: each lies in
 * its block after the header, apart from the previous one, and each block starts at the
 * class's first offset plus the bin's colour, which counts up from block to block. */
static void check_blocks(const txa_class_info *ci, void *const *p, size_t n) {
  size_t span = (size_t)1 << ci->span_shift;
  uintptr_t block = 0;
  uint32_t colour_index = 0, blocks = 0;
  for (size_t i = 0; i < n; i++) {
    uintptr_t a = (uintptr_t)p[i], b = a & ~(uintptr_t)(span - 1);
    CHECKF(a - b >= TXA_BLOCK_HEADER && a - b + ci->size <= span,
           "class %u: object %p outside its block %p", ci->size, p[i], (void *)b);
    CHECKF(a % ci->align == 0, "class %u: object %p not aligned to %u", ci->size, p[i], ci->align);
    if (b == block) {
      CHECKF(a == (uintptr_t)p[i - 1] + ci->size, "class %u: %p does not follow %p", ci->size, p[i],
             p[i - 1]);
      continue;
    }
    uint32_t colour = (uint32_t)(a - b) - ci->first_offset;
    CHECKF(colour % ci->colour_step == 0 && colour / ci->colour_step < ci->colours,
           "class %u: block %p starts at colour %u (step %u, %u colours)", ci->size, (void *)b,
           colour, ci->colour_step, ci->colours);
    if (blocks > 0)
      CHECKF(colour / ci->colour_step == (colour_index + 1) % ci->colours,
             "class %u: colour %u after colour index %u of %u", ci->size, colour, colour_index,
             ci->colours);
    colour_index = colour / ci->colour_step;
    block = b;
    blocks++;
  }
}

static void check_ring_spread(bool on) {
  size_t seen[64];
  unsigned classes = 0;
  for (size_t size = 64; size <= TXA_RUNS_MIN + 64; size += 64) {
    size_t node = size > TXA_RUNS_MIN ? 1008 : size;
    const txa_class_info *ci = class_of(node);
    bool repeated = false;
    for (unsigned k = 0; k < classes; k++) repeated |= seen[k] == ci->size;
    if (repeated) continue;
    seen[classes++] = ci->size;
    void *p[NODES];
    for (int i = 0; i < NODES; i++) p[i] = txalloc_malloc(node);
    check_blocks(ci, p, NODES);
    spread s = spread_of(p, NODES);
    if (on) {
      int least = ci->size == 128 ? 32 : 38;
      CHECKF(s.sets >= least && s.fullest <= 6, "%zu B (class %u): %d sets, %d on the fullest",
             node, ci->size, s.sets, s.fullest);
    } else if (node == 512 || node == 1008 || node == 1024) {
      int crowded = node == 512 ? 8 : 4;
      CHECKF(s.sets == crowded, "placement off, %zu B: %d sets, not %d", node, s.sets, crowded);
    }
    if (node == 512 || node == 1008 || node == 1024)
      fprintf(stderr, "%zu B: class %u, %d sets, at most %d on one\n", node, ci->size, s.sets,
              s.fullest);
    for (int i = 0; i < NODES; i++) txalloc_free(p[i]);
  }
}

/* Above TXA_RUNS_MIN malloc cuts runs, whose colours use their slack: with placement on
 * every run keeps a line of slack, so that objects allocated in a row spread over the sets
 * even when their size fills whole units. */
static void check_runs_spread(bool on) {
  for (size_t size = TXA_RUNS_MIN + 64; size <= 3 * TXA_RUNS_MIN; size += 64) {
    void *p[NODES];
    for (int i = 0; i < NODES; i++) p[i] = txalloc_malloc(size);
    spread s = spread_of(p, NODES);
    if (on)
      CHECKF(s.sets >= SETS / 2 && s.fullest <= 4, "run %zu B: %d sets, %d on the fullest", size,
             s.sets, s.fullest);
    for (int i = 0; i < NODES; i++) txalloc_free(p[i]);
    txalloc_collect(); /* the next size is cut afresh, not taken from the thread's cache */
  }
}

/* Placement never touches the classes of 128 B and less; off, the table is the base one. */
static void check_table(bool on) {
  size_t n = 0;
  for (unsigned c = 0; c < txa_class_count; c++) {
    const txa_class_info *ci = &txa_classes[c];
    CHECKF(c == 0 || ci->size > txa_classes[c - 1].size, "class %u: sizes not ascending", c);
    CHECKF(ci->align == (ci->size & (~ci->size + 1)), "class %u: alignment %u", ci->size,
           ci->align);
    CHECKF(ci->first_offset % ci->align == 0 && ci->colour_step % ci->align == 0 &&
               ci->colour_step % 64 == 0,
           "class %u: first offset %u, colour step %u", ci->size, ci->first_offset,
           ci->colour_step);
    size_t span = (size_t)1 << ci->span_shift;
    CHECKF(ci->first_offset + (size_t)(ci->colours - 1) * ci->colour_step +
                   (size_t)ci->capacity * ci->size <=
               span,
           "class %u: the last colour overflows the block", ci->size);
    CHECKF(on || ci->colours == 1, "placement off: class %u has %u colours", ci->size, ci->colours);
    if (ci->aligned_only) {
      CHECKF(on && (ci->size & (ci->size - 1)) == 0, "class %u aligned-only", ci->size);
      continue;
    }
    size_t expected = n < 8 ? 16 * (n + 1) : (128u << ((n - 8) / 8)) * (8 + 1 + (n - 8) % 8) / 8;
    if (!on || expected <= 128)
      CHECKF(ci->size == expected, "class %zu: %u B, the base table says %zu", n, ci->size,
             expected);
    n++;
  }
  CHECKF(n == TXA_BASE_CLASSES, "%zu classes reached by malloc", n);
  /* The layers above free requests of up to TXA_DIRECT_SMALL_MAX as small-block objects. */
  for (size_t size = 1; size <= TXA_MEDIUM_MAX; size++) {
    const txa_class_info *ci = class_of(size);
    bool small = ci->span_shift == TXA_BLOCK_SHIFT;
    if (ci->size < size || ci->aligned_only || (size <= TXA_DIRECT_SMALL_MAX && !small)) {
      CHECKF(0, "request %zu: class %u (%s, span 2^%u)", size, ci->size,
             ci->aligned_only ? "aligned only" : "malloc", ci->span_shift);
      break;
    }
  }
  CHECKF(txalloc_class_count() == txa_class_count, "txalloc_class_count %zu",
         txalloc_class_count());
}

static void check_aligned(bool on) {
  for (size_t align = 16; align <= 256 * 1024; align *= 2) {
    size_t sizes[] = {1, align / 2, align - 16, align, align + 16, 3 * align, 1000, 5000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      size_t size = sizes[k] ? sizes[k] : 1;
      void *p = NULL;
      int rc = txalloc_posix_memalign(&p, align, size);
      CHECKF(rc == 0 && p && test_is_aligned(p, align) && txalloc_usable_size(p) >= size,
             "posix_memalign(%zu, %zu) = %d, %p", align, size, rc, p);
      if (p) test_fill(p, size, align + k);
      void *q = txalloc_aligned_alloc(align, size);
      CHECKF(q && test_is_aligned(q, align) && txalloc_usable_size(q) >= size,
             "aligned_alloc(%zu, %zu) = %p", align, size, q);
      if (p)
        CHECKF(test_check(p, size, align + k), "posix_memalign(%zu, %zu): overwritten", align,
               size);
      txalloc_free(p);
      txalloc_free(q);
    }
    if (align <= TXA_MEDIUM_MAX) { /* a class, not a mapping, and not a larger one */
      void *p = txalloc_aligned_alloc(align, align);
      CHECKF(p && txalloc_usable_size(p) == (align < 16 ? 16 : align),
             "aligned_alloc(%zu, %zu): usable %zu", align, align, p ? txalloc_usable_size(p) : 0);
      txalloc_free(p);
    }
  }
  /* Above TXA_RUNS_MIN, runs: a power of two fills its units, so it starts on one. */
  if (!on)
    for (size_t size = 256; size <= TXA_MEDIUM_MAX; size *= 2) {
      void *p = txalloc_malloc(size);
      size_t align = size <= TXA_RUNS_MIN ? size : 256;
      CHECKF(test_is_aligned(p, align), "placement off: malloc(%zu) = %p", size, p);
      txalloc_free(p);
    }
}

int main(void) {
  txalloc_free(txalloc_malloc(16)); /* initialises the class table (class 16 is not tested) */
  bool on = placement_on();
  fprintf(stderr, "placement %s\n", on ? "on" : "off");
  check_ring_spread(on); /* first: it needs bins not used before */
  check_table(on);
  check_aligned(on);
  check_runs_spread(on);
  return check_exit();
}
