/* placement_trace.c: libplacement-trace.so, the placement tracer behind
 * `txalloc placement`. It forwards every request to the allocator below (dlsym RTLD_NEXT:
 * the next preloaded allocator, or glibc) and records what came back: address, size asked
 * for, thread and a sequence number (trace_format.h). Put it first in LD_PRELOAD, so that
 * it sees what the program asked for:
 *   LD_PRELOAD=build/libplacement-trace.so:build/libtxalloc.so PLACEMENT_TRACE=/tmp/t prog
 * valloc and pvalloc are not traced (the allocator below serves them unseen; their frees
 * are recorded and ignored by the analyser as frees of unknown objects). */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bootstrap.h"
#include "tools/next_allocator.h"
#include "tools/trace_recorder.h"

#define EXPORT __attribute__((visibility("default")))

static void *allocated(void *p, size_t size, enum trace_kind kind, size_t align) {
  if (p) trace_record(trace_next_seq(), p, size, kind, align ? (unsigned)__builtin_ctzl(align) : 0);
  return p;
}

EXPORT void *malloc(size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(size, 0);
  return allocated(next->malloc(size), size, TRACE_MALLOC, 0);
}

EXPORT void *calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(n * size, 0);
  return allocated(next->calloc(n, size), n * size, TRACE_CALLOC, 0);
}

EXPORT void free(void *p) {
  if (!p || bootstrap_owns(p)) return;
  trace_record(trace_next_seq(), p, 0, TRACE_FREE, 0);
  next_allocator()->free(p);
}

EXPORT void *realloc(void *p, size_t size) {
  if (!p) {
    const struct next_allocator *next = next_allocator();
    if (!next) return bootstrap_alloc(size, 0);
    return allocated(next->realloc(NULL, size), size, TRACE_REALLOC, 0);
  }
  if (bootstrap_owns(p)) {
    void *q = malloc(size);
    size_t old = bootstrap_size(p);
    if (q) memcpy(q, p, old < size ? old : size);
    return q;
  }
  uint64_t freed_at = trace_next_seq(); /* before p can be reused by another thread */
  void *q = next_allocator()->realloc(p, size);
  if (q || size == 0) trace_record(freed_at, p, 0, TRACE_FREE, 0); /* NULL at 0: freed */
  return allocated(q, size, TRACE_REALLOC, 0);
}

EXPORT void *memalign(size_t align, size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(size, align);
  return allocated(next->memalign(align, size), size, TRACE_ALIGNED, align);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) {
    void *p = bootstrap_alloc(size, align);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = next->posix_memalign(out, align, size);
  if (rc == 0) allocated(*out, size, TRACE_ALIGNED, align);
  return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size) {
  const struct next_allocator *next = next_allocator();
  if (!next) return bootstrap_alloc(size, align);
  return allocated(next->aligned_alloc(align, size), size, TRACE_ALIGNED, align);
}

EXPORT size_t malloc_usable_size(void *p) {
  if (!p) return 0;
  if (bootstrap_owns(p)) return bootstrap_size(p);
  return next_allocator()->malloc_usable_size(p);
}
