/* bootstrap.c: a bump arena of a few KiB. Each object is preceded by its size, so realloc
 * and malloc_usable_size work on it; free leaves it in place. Only the thread that resolves
 * the symbols allocates here, before any other thread can exist, so a plain bump pointer
 * suffices; the compare-and-swap only keeps a racing second resolver safe. */
#include "tools/bootstrap.h"

#include <stdalign.h>
#include <stdint.h>

#define ARENA_BYTES 65536

static alignas(4096) unsigned char arena[ARENA_BYTES];
static size_t arena_used;

void *bootstrap_alloc(size_t size, size_t align) {
  if (align < sizeof(size_t) * 2) align = sizeof(size_t) * 2;
  if (align > 4096 || size > ARENA_BYTES) return NULL;
  size_t used = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
  for (;;) {
    size_t start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
    size_t end = start + size;
    if (end > ARENA_BYTES) return NULL;
    if (__atomic_compare_exchange_n(&arena_used, &used, end, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      ((size_t *)(arena + start))[-1] = size;
      return arena + start; /* static storage: already zero, never handed out twice */
    }
  }
}

bool bootstrap_owns(const void *p) {
  uintptr_t a = (uintptr_t)p, base = (uintptr_t)arena;
  return a >= base && a < base + ARENA_BYTES;
}

size_t bootstrap_size(const void *p) { return ((const size_t *)p)[-1]; }
