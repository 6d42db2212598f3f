/* next_allocator.c: resolves the allocator below once, on the first request. */
#include "tools/next_allocator.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <unistd.h>

enum { UNRESOLVED, RESOLVING, READY };

static struct next_allocator next;
static int state = UNRESOLVED;

static void *lookup(const char *name) {
  void *sym = dlsym(RTLD_NEXT, name);
  if (!sym) {
    static const char msg[] = "placement interposer: the allocator below defines no ";
    (void)!write(2, msg, sizeof msg - 1);
    for (const char *c = name; *c; c++) (void)!write(2, c, 1);
    (void)!write(2, "\n", 1);
    _exit(127);
  }
  return sym;
}

const struct next_allocator *next_allocator(void) {
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == READY) return &next;
  int expected = UNRESOLVED;
  if (!__atomic_compare_exchange_n(&state, &expected, RESOLVING, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return expected == READY ? &next : NULL;
  next.malloc = (void *(*)(size_t))lookup("malloc");
  next.calloc = (void *(*)(size_t, size_t))lookup("calloc");
  next.realloc = (void *(*)(void *, size_t))lookup("realloc");
  next.free = (void (*)(void *))lookup("free");
  next.memalign = (void *(*)(size_t, size_t))lookup("memalign");
  next.posix_memalign = (int (*)(void **, size_t, size_t))lookup("posix_memalign");
  next.aligned_alloc = (void *(*)(size_t, size_t))lookup("aligned_alloc");
  next.malloc_usable_size = (size_t(*)(void *))lookup("malloc_usable_size");
  __atomic_store_n(&state, READY, __ATOMIC_RELEASE);
  return &next;
}
