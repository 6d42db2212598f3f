#define _GNU_SOURCE
/* Virtual memory primitives (Linux). Uses the libc wrappers of mmap/munmap/mprotect/
 * madvise/mremap, which are plain system calls and never allocate. */
#include "os/os_mem.h"

#include <errno.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

static txa_os_observer_fn observer;

void txa_os_set_observer(txa_os_observer_fn fn) {
  __atomic_store_n(&observer, fn, __ATOMIC_RELEASE);
}

/* Before each system call: one load and a predictable branch when nobody observes. */
static inline void observe(const char *call) {
  txa_os_observer_fn fn = __atomic_load_n(&observer, __ATOMIC_ACQUIRE);
  if (__builtin_expect(fn != NULL, 0)) fn(call);
}

size_t txa_os_page_size(void) {
  unsigned long p = getauxval(AT_PAGESZ);
  return p ? (size_t)p : TXA_OS_PAGE;
}

/* An aligned run of `size` bytes. The kernel usually hands out addresses that are already
 * aligned (mappings pack downwards from an aligned one; it aligns those of whole huge pages),
 * so a plain mapping is tried first; otherwise size + align bytes are mapped and both ends
 * trimmed. */
static void *map_aligned(size_t size, size_t align, int prot, int flags) {
  if (align < TXA_OS_PAGE) align = TXA_OS_PAGE;
  if (size > SIZE_MAX / 2 - align) {
    errno = ENOMEM;
    return NULL;
  }
  flags |= MAP_PRIVATE | MAP_ANONYMOUS;
  if (align > TXA_OS_PAGE) {
    observe("mmap");
    void *first = mmap(NULL, size, prot, flags, -1, 0);
    if (first == MAP_FAILED) {
      errno = ENOMEM;
      return NULL;
    }
    if (((uintptr_t)first & (align - 1)) == 0) return first;
    observe("munmap");
    munmap(first, size);
  }
  size_t len = size + (align > TXA_OS_PAGE ? align : 0);
  observe("mmap");
  void *raw = mmap(NULL, len, prot, flags, -1, 0);
  if (raw == MAP_FAILED) {
    errno = ENOMEM;
    return NULL;
  }
  uintptr_t start = (uintptr_t)raw;
  uintptr_t aligned = (start + align - 1) & ~(uintptr_t)(align - 1);
  if (aligned > start) {
    observe("munmap");
    munmap(raw, aligned - start);
  }
  uintptr_t end = start + len, want_end = aligned + size;
  if (end > want_end) {
    observe("munmap");
    munmap((void *)want_end, end - want_end);
  }
  return (void *)aligned;
}

void *txa_os_reserve(size_t size, size_t align) {
  return map_aligned(size, align, PROT_NONE, MAP_NORESERVE);
}

void *txa_os_map(size_t size, size_t align) {
  return map_aligned(size, align, PROT_READ | PROT_WRITE, MAP_NORESERVE);
}

int txa_os_commit(void *addr, size_t size) {
  observe("mprotect");
  if (mprotect(addr, size, PROT_READ | PROT_WRITE) != 0) {
    errno = ENOMEM;
    return -1;
  }
  return 0;
}

void txa_os_decommit(void *addr, size_t size) {
  observe("madvise");
  int saved = errno;
  madvise(addr, size, MADV_DONTNEED);
  errno = saved;
}

void txa_os_unmap(void *addr, size_t size) {
  observe("munmap");
  int saved = errno;
  munmap(addr, size);
  errno = saved;
}

bool txa_os_grow_in_place(void *addr, size_t old_size, size_t new_size) {
#if defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer does not intercept mremap: pages it brought in would keep the race
   * history of whatever was mapped at that address before (a false report). Callers then
   * move the mapping onto a fresh reservation, an mmap that TSan sees. (A fixed mmap after
   * the mapping would be seen too, but leaves two kernel mappings that mremap cannot move
   * as one.) */
  (void)addr;
  (void)old_size;
  (void)new_size;
  return false;
#else
  observe("mremap");
  int saved = errno;
  void *r = mremap(addr, old_size, new_size, 0);
  errno = saved;
  return r == addr;
#endif
}

bool txa_os_move_to(void *addr, size_t old_size, size_t new_size, void *target) {
  observe("mremap");
  int saved = errno;
  void *r = mremap(addr, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  errno = saved;
  return r == target;
}
