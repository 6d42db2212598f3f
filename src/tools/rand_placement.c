/* rand_placement.c: librand-placement.so, the RAND control of Dice, Kogan and Morrison
 * ("Malloc placement and HTM"): every request to the allocator below is enlarged by a
 * random number of 16-byte units, so consecutive objects land at irregular distances and
 * regular strides no longer crowd a few cache sets.
 *
 * The pad goes at the end: the allocator below returns the object's base address, which is
 * handed back unchanged, so free, realloc and malloc_usable_size pass straight through and
 * only the next object moves.
 *
 * LD_PRELOAD order: put this library before the allocator it pads,
 *   LD_PRELOAD=build/librand-placement.so:build/libtxalloc.so   (txalloc+RAND)
 *   LD_PRELOAD=build/librand-placement.so                        (glibc+RAND)
 * The variables are RAND_PLACEMENT_UNITS (pad uniformly in 0..N units of 16 bytes,
 * default 4) and RAND_PLACEMENT_SEED (default 1; the same seed gives every thread the same
 * pad sequence from run to run). They carry no TXALLOC_ prefix because txalloc's options
 * table warns about, and its bench programs refuse, TXALLOC_ variables it does not know. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bootstrap.h"
#include "tools/env_number.h"
#include "tools/next_allocator.h"

#define EXPORT __attribute__((visibility("default")))
#define UNIT 16
#define DEFAULT_UNITS 4
#define MAX_UNITS 65536
#define DEFAULT_SEED 1

static uint64_t max_units = DEFAULT_UNITS;
static uint64_t seed = DEFAULT_SEED;
static int options_read;
static unsigned thread_count;
static __thread uint64_t rng; /* 0 until the thread's first request */

static void read_options(void) {
  if (__atomic_load_n(&options_read, __ATOMIC_ACQUIRE)) return;
  max_units = env_number("RAND_PLACEMENT_UNITS", DEFAULT_UNITS, 0, MAX_UNITS);
  seed = env_number("RAND_PLACEMENT_SEED", DEFAULT_SEED, 0, UINT64_MAX);
  __atomic_store_n(&options_read, 1, __ATOMIC_RELEASE);
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A multiple of UNIT in [0, max_units * UNIT]. */
static size_t random_pad(void) {
  read_options();
  if (max_units == 0) return 0;
  if (rng == 0) {
    unsigned index = __atomic_fetch_add(&thread_count, 1, __ATOMIC_RELAXED);
    rng = splitmix64(seed + index) | 1; /* xorshift needs a non-zero state */
  }
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (size_t)((rng >> 11) % (max_units + 1)) * UNIT;
}

/* size plus pad, or size alone where the sum would overflow (the allocator below then
 * fails the request as it would have). */
static size_t padded(size_t size, size_t pad) { return size > SIZE_MAX - pad ? size : size + pad; }

EXPORT void *malloc(size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(size, 0);
  return next->malloc(padded(size, random_pad()));
}

EXPORT void *calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(n * size, 0);
  return next->calloc(1, padded(n * size, random_pad()));
}

EXPORT void free(void *p) {
  if (!p || bootstrap_owns(p)) return;
  next_allocator()->free(p);
}

EXPORT void *realloc(void *p, size_t size) {
  if (!p) return malloc(size);
  if (bootstrap_owns(p)) {
    void *q = malloc(size);
    size_t old = bootstrap_size(p);
    if (q) memcpy(q, p, old < size ? old : size);
    return q;
  }
  const struct next_allocator *next = next_allocator();
  if (size == 0) return next->realloc(p, 0); /* the allocator below decides what 0 means */
  return next->realloc(p, padded(size, random_pad()));
}

EXPORT void *memalign(size_t align, size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(size, align);
  return next->memalign(align, padded(size, random_pad()));
}

EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) {
    void *p = bootstrap_alloc(size, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  return next->posix_memalign(out, align, padded(size, random_pad()));
}

EXPORT void *aligned_alloc(size_t align, size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(size, align);
  size_t pad = random_pad();
  /* keep size a multiple of align when the caller made it one (C11's rule) */
  if (align > UNIT && (align & (align - 1)) == 0) pad = (pad + align - 1) & ~(align - 1);
  return next->aligned_alloc(align, padded(size, pad));
}

EXPORT size_t malloc_usable_size(void *p) {
  if (!p) return 0;
  if (bootstrap_owns(p)) return bootstrap_size(p);
  return next_allocator()->malloc_usable_size(p);
}
