/* txmem_direct_usable (src/txmem/txmem_direct.h), the one region-map lookup of a committed
 * free, must answer exactly what txalloc_owner_of and txalloc_usable_size answer: true
 * when txalloc_owner_of(p) != TXALLOC_NOT_OURS, with *usable = txalloc_usable_size(p). Checked
 * on every kind of address:
 *   - before txalloc's initialisation (first thing in main: nothing of this program has
 *     called txalloc yet): the process's objects, the stack, static data, NULL;
 *   - foreign ones after it: the same, the process's large (mmap) objects, addresses above
 *     the 47-bit user space;
 *   - txalloc's objects of every small class and of medium classes and runs (start,
 *     interior, one past the end), freed ones, large objects (start, interior, header, last byte,
 * freed), the heap metadata;
 *   - every 4 KiB page (offsets 0, 16 and 2000) of the 64 MiB around a small, a medium, a
 *     run and a large object: block headers, unused blocks of a chunk, reserved granules,
 * whatever the region map says there. txmem_backend_usable (the strategy's view) is checked too:
 * the process's objects never go to txalloc and count malloc_usable_size, under every strategy;
 * txalloc's objects go to txalloc with the txalloc strategy. So is txmem_direct_usable_block, the
 * commit's call-free lookup: on addresses in chunks of small (medium) blocks it must give
 * TXMEM_REL_SMALL (TXMEM_REL_MEDIUM) and txmem_direct_usable's size, elsewhere
 * TXMEM_REL_FOREIGN (the commit then asks txmem_backend_usable): a wrong code would send
 * the limbo's release to the wrong span size. Runs once per strategy (CMakeLists.txt). */
#include <stdio.h>
#include <stdlib.h>

#include "txmem/txmem_direct.h"
#include "txmem_test.h"

static char static_data[256];

/* Hides where p comes from: the compiler would otherwise see txmem_direct_usable's
 * block-header read as a read of the fresh (uninitialised) malloc object or local. */
static const void *opaque(const void *p) {
  __asm__("" : "+r"(p));
  return p;
}
static unsigned long compared, kinds[256];

/* The expected answer, from the public calls (they initialise txalloc). `process`: p is a
 * live object of the process's malloc (txmem_backend_usable may ask malloc_usable_size). */
static void check_address(const void *p, const char *what, bool process) {
  txmem_strategy strategy = txmem_get_strategy(); /* reads the configuration first */
  size_t usable = 12345;
  bool ours = txmem_direct_usable(opaque(p), &usable);
  bool want_ours = txalloc_owner_of(p) != TXALLOC_NOT_OURS;
  compared++;
  kinds[txa_kind_of((uintptr_t)p)]++;
  CHECKF(ours == want_ours, "%s %p: direct says %s, txalloc_owner_of %s", what, p,
         ours ? "ours" : "not ours", want_ours ? "ours" : "not ours");
  if (ours && want_ours)
    CHECKF(usable == txalloc_usable_size(p), "%s %p: direct usable %zu, txalloc_usable_size %zu",
           what, p, usable, txalloc_usable_size(p));
  unsigned kind = txa_kind_of((uintptr_t)p);
  size_t block_usable = 12345;
  unsigned release = txmem_direct_usable_block(opaque(p), &block_usable);
  unsigned want_release = kind == TXA_KIND_SMALL    ? TXMEM_REL_SMALL
                          : kind == TXA_KIND_MEDIUM ? TXMEM_REL_MEDIUM
                                                    : TXMEM_REL_FOREIGN;
  CHECKF(release == want_release, "%s %p: direct block release %u, want %u (kind %u)", what, p,
         release, want_release, kind);
  if (release != TXMEM_REL_FOREIGN && want_release != TXMEM_REL_FOREIGN)
    CHECKF(block_usable == txalloc_usable_size(p), "%s %p: direct block usable %zu, want %zu", what,
           p, block_usable, txalloc_usable_size(p));
  /* The strategy's view (only where it cannot hand a stray address to malloc_usable_size):
   * txalloc's pointers go to txalloc under its strategy, the process's never. */
  bool via_txalloc = !process;
  if (process) {
    size_t size = txmem_backend_usable(p, &via_txalloc);
    CHECKF(!via_txalloc && size == malloc_usable_size((void *)p),
           "%s %p: txmem_backend_usable: txalloc %d, size %zu", what, p, (int)via_txalloc, size);
  } else if (strategy == TXMEM_TXALLOC && want_ours) {
    size_t size = txmem_backend_usable(p, &via_txalloc);
    CHECKF(via_txalloc && size == txalloc_usable_size(p),
           "%s %p: txmem_backend_usable: txalloc %d, size %zu", what, p, (int)via_txalloc, size);
  }
}
static void check_one(const void *p, const char *what) { check_address(p, what, false); }

/* Every page of [center - 32 MiB, center + 32 MiB) at three offsets. Reads nothing but the
 * region map and, where it says small or medium, the block header (as txalloc does). */
static void sweep(const void *center, const char *what) {
  uintptr_t c = (uintptr_t)center & ~(uintptr_t)4095;
  uintptr_t lo = c > ((uintptr_t)32 << 20) ? c - ((uintptr_t)32 << 20) : 0;
  for (uintptr_t a = lo; a < c + ((uintptr_t)32 << 20); a += 4096) {
    static const unsigned offsets[] = {0, 16, 2000};
    for (int i = 0; i < 3; i++) check_one((const void *)(a + offsets[i]), what);
  }
}

int main(void) {
  /* Before txalloc's initialisation: the map is empty, every answer "not ours", as the
   * public calls (which initialise it) say afterwards. */
  void *early = malloc(100);
  int local = 0;
  size_t dummy;
  bool early_ours =
      txmem_direct_usable(opaque(early), &dummy) || txmem_direct_usable(opaque(&local), &dummy) ||
      txmem_direct_usable(opaque(static_data), &dummy) || txmem_direct_usable(NULL, &dummy);
  CHECK(!early_ours);
  CHECK(txmem_direct_usable_block(opaque(early), &dummy) == TXMEM_REL_FOREIGN);
  check_address(early, "early malloc", true);
  check_one(&local, "stack");
  check_one(static_data, "static");
  check_one(NULL, "NULL");

  /* Foreign after initialisation. */
  void *big = malloc((size_t)4 << 20); /* glibc: its own mapping */
  check_address(big, "malloc 4 MiB", true);
  check_one((char *)big + 100000, "malloc 4 MiB interior");
  check_one((void *)((uintptr_t)1 << 47), "2^47");
  check_one((void *)((uintptr_t)1 << 60), "2^60");
  check_one((void *)(uintptr_t)-4096, "top page");

  /* Every class: start, interior, one past the end; freed. */
  enum { SIZES = 40 };
  void *objs[SIZES];
  size_t sizes[SIZES];
  for (int i = 0; i < SIZES; i++) {
    /* Small to 1 KiB, medium classes to TXA_RUNS_MIN, runs to 128 KiB. */
    sizes[i] = i < 32   ? (size_t)(i + 1) * 32
               : i < 36 ? (size_t)(i - 31) * 2048
                        : (size_t)(i - 35) * 32768;
    objs[i] = txalloc_malloc(sizes[i]);
    CHECK(objs[i] != NULL);
  }
  for (int i = 0; i < SIZES; i++) {
    char *p = objs[i];
    size_t u = txalloc_usable_size(p);
    check_one(p, "object");
    check_one(p + 1, "object + 1");
    check_one(p + 16, "object + 16");
    check_one(p + u - 1, "object's last byte");
    check_one(p + u, "one past the object");
  }
  sweep(objs[0], "around a small object");
  sweep(objs[35], "around a medium object");
  sweep(objs[SIZES - 1], "around a run object");
  for (int i = 0; i < SIZES; i += 2) txalloc_free(objs[i]);
  for (int i = 0; i < SIZES; i += 2) check_one(objs[i], "freed object");

  /* Large objects. */
  char *large = txalloc_malloc((size_t)8 << 20);
  CHECK(large != NULL);
  check_one(large, "large");
  check_one(large + 4096, "large + 4096");
  check_one(large + ((size_t)8 << 20) - 1, "large's last byte");
  check_one(large - TXA_LARGE_HEADER, "large's header");
  check_one(large - 1, "large - 1");
  sweep(large, "around a large object");
  char *large2 = txalloc_malloc(300000);
  check_one(large2, "large 300000");
  txalloc_free(large2);
  check_one(large2, "freed large");
  check_one(large2 + 4096, "freed large + 4096");

  /* The heap's metadata. */
  check_one(txa_tls_heap, "this thread's heap");
  check_one((char *)txa_tls_heap + 64, "this thread's heap + 64");

  printf("%lu addresses compared; by region-map kind: none %lu, reserved %lu, small %lu, medium "
         "%lu, runs %lu, large %lu, meta %lu\n",
         compared, kinds[TXA_KIND_NONE], kinds[TXA_KIND_RESERVED], kinds[TXA_KIND_SMALL],
         kinds[TXA_KIND_MEDIUM], kinds[TXA_KIND_RUNS], kinds[TXA_KIND_LARGE], kinds[TXA_KIND_META]);
  /* The sweeps met every kind a pointer of a program can meet (reserved granules exist
   * while a region is not carved to its end: not guaranteed). */
  CHECK(kinds[TXA_KIND_NONE] && kinds[TXA_KIND_SMALL] && kinds[TXA_KIND_MEDIUM] &&
        kinds[TXA_KIND_RUNS] && kinds[TXA_KIND_LARGE] && kinds[TXA_KIND_META]);
  for (int i = 1; i < SIZES; i += 2) txalloc_free(objs[i]);
  txalloc_free(large);
  free(big);
  free(early);
  return check_exit();
}
