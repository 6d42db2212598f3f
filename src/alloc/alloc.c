/* The allocation API: malloc, free and their relatives (include/txalloc/txalloc.h).
 *
 * Fast paths: malloc takes the TLS heap, the size class (one table load), the bin's
 * current block, and pops its private list or bumps its bump pointer. free finds the
 * granule's kind in the region map, the block header by masking, validates the object
 * (one multiplication), and pushes onto the private list when the calling thread owns
 * the block, else onto the public list with a CAS (remote free). */
#include <errno.h>
#include <string.h>

#include "alloc/entry.h"
#include "alloc/internal.h"

/* ---- Small and medium objects ---- */

static inline txa_heap *heap_for_malloc(void) {
  txa_heap *h = txa_tls_heap;
  if (TXA_LIKELY(h != NULL)) return h;
  return txa_heap_get_slow();
}

static inline void *class_alloc(unsigned c, size_t zero_bytes) {
  txa_heap *h = heap_for_malloc();
  if (TXA_UNLIKELY(!h)) {
    errno = ENOMEM;
    return NULL;
  }
  txa_block *b = h->current[c];
  bool zeroed = zero_bytes && b->zero_bump && b->free == NULL;
  void *p = txa_block_take(b);
  if (TXA_UNLIKELY(!p)) {
    p = txa_heap_alloc_slow(h, c);
    if (!p) return NULL;
    zeroed = false;
  }
  txa_bump_counter(&h->cls.allocs[c], 1);
  /* calloc: the whole usable size reads as zero, not just the bytes asked for. */
  if (zero_bytes && !zeroed) memset(p, 0, txa_classes[c].size);
  return p;
}

static inline void *alloc_size(size_t size, size_t zero_bytes) {
  if (TXA_LIKELY(size <= TXA_RUNS_MIN)) {
    /* A thread with a heap implies an initialised allocator (class tables filled). */
    if (TXA_UNLIKELY(!txa_tls_heap) && !txa_heap_get_slow()) {
      errno = ENOMEM;
      return NULL;
    }
    return class_alloc(txa_size_class(size), zero_bytes);
  }
  txa_init();
  if (size <= TXA_MEDIUM_MAX) return txa_runs_alloc(size, zero_bytes != 0);
  return txa_large_alloc(size, 0, zero_bytes != 0);
}

static __attribute__((noinline)) void *malloc_slow(size_t size) { return alloc_size(size, 0); }

/* malloc from the heap's foreign list of a class (foreign.c), given the list's head slot
 * h->foreign + class. Not inlined, and given no more than malloc's fast path has at hand:
 * that path stays a leaf without a stack frame, pays a load and a branch, and tail-calls
 * this. */
static __attribute__((noinline)) void *foreign_take(txa_heap *h, void **slot) {
  unsigned c = (unsigned)(slot - h->foreign);
  void *p = *slot;
  *slot = ((void **)p)[1];
  h->foreign_bytes -= txa_classes[c].size;
  if (--h->foreign_count[c] == 0) txa_foreign_grow(h, c);
  *(uintptr_t *)p = 0; /* a live object's first word */
  txa_bump_counter(&h->cls.allocs[c], 1);
  TXA_COUNT(h, foreign_reuses, 1);
  return p;
}

/* The common case as a leaf without a stack frame: a small request of a thread with a
 * heap, served by its foreign list of the class (foreign_take) or by the current block of
 * its bin. Everything else (first call, runs and large sizes, a refill) tail-calls
 * malloc_slow, which starts again from the size. */
TXALLOC_API void *txalloc_malloc(size_t size) {
  txa_heap *h = txa_tls_heap;
  if (TXA_LIKELY(h != NULL)) {
    unsigned c;
    if (TXA_LIKELY(size <= TXA_SMALL_MAX))
      c = txa_class_by_16[(size + 15) >> 4];
    else if (size <= TXA_RUNS_MIN)
      c = txa_class_by_64[(size + 63) >> 6];
    else
      return malloc_slow(size);
    if (TXA_UNLIKELY(h->foreign[c] != NULL)) return foreign_take(h, &h->foreign[c]);
    void *p = txa_block_take(h->current[c]);
    if (TXA_LIKELY(p != NULL)) {
      txa_bump_counter(&h->cls.allocs[c], 1);
      return p;
    }
  }
  return malloc_slow(size);
}

void *txa_class_malloc(unsigned c, bool zero) {
  txa_init();
  return class_alloc(c, zero ? txa_classes[c].size : 0);
}

TXALLOC_API void *txalloc_calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return alloc_size(total, total ? total : 1);
}

/* ---- Validation and errors ---- */

static void report_bad_object(const char *op, const void *p, const txa_block *b) {
  uintptr_t a = (uintptr_t)p;
  if (b->capacity == 0) {
    txa_error(TXALLOC_ERROR_INVALID_FREE, p,
              "%s(%p): invalid pointer: no live object there (its block %p is empty; "
              "double free?)",
              op, p, (const void *)b);
    return;
  }
  uint64_t off = (uint64_t)(a - (uintptr_t)b);
  if (off >= b->first_offset) {
    uint64_t idx = ((off - b->first_offset) * b->inverse) >> 40;
    if (idx < b->capacity) {
      txa_error(TXALLOC_ERROR_INVALID_FREE, p,
                "%s(%p): invalid pointer: interior pointer, %llu bytes into the %u-byte "
                "object at %p",
                op, p, (unsigned long long)(off - b->first_offset - idx * b->size), b->size,
                (void *)((uintptr_t)b + b->first_offset + idx * b->size));
      return;
    }
  }
  txa_error(TXALLOC_ERROR_INVALID_FREE, p,
            "%s(%p): invalid pointer: not an object of the block %p (%u-byte objects)", op, p,
            (const void *)b, b->size);
}

static void report_not_ours(const char *op, const void *p) {
  txa_error(TXALLOC_ERROR_INVALID_FREE, p,
            "%s(%p): invalid pointer: not allocated by txalloc (or an already released "
            "large object)",
            op, p);
}

/* The object's first word decodes to a link into its own block, or to the end of a list:
 * the object sits on a free list (live objects have their first word zeroed when taken). */
static inline bool looks_free(const txa_block *b, const void *p, uintptr_t key) {
  uintptr_t d = *(const uintptr_t *)p ^ key;
  return d == 0 || d - (uintptr_t)b < txa_span_size(b->span_kind);
}

static bool list_contains(const txa_block *b, const void *list, const void *p, uintptr_t key) {
  uint32_t n = 0;
  for (const void *q = list; q && n <= b->capacity; n++) {
    if (q == p) return true;
    if ((uintptr_t)q - (uintptr_t)b >= txa_span_size(b->span_kind)) return false;
    q = txa_decode(*(const uintptr_t *)q, key);
  }
  return false;
}

/* Owner-side confirmation (option secure): is p really on one of b's free lists? */
static bool confirmed_free(const txa_block *b, const void *p) {
  return list_contains(b, b->free, p, b->key) ||
         list_contains(b,
                       txa_public_head(atomic_load_explicit(&b->public_free, memory_order_acquire)),
                       p, b->key);
}

static void report_double_free(const char *op, const void *p, const txa_block *b) {
  txa_error(TXALLOC_ERROR_DOUBLE_FREE, p,
            "%s(%p): double free: the %u-byte object is already on a free list of its block %p", op,
            p, b->size, (const void *)b);
}

/* ---- free ---- */

/* Returns false (after reporting) for a double free. */
static inline __attribute__((always_inline)) bool remote_free(txa_block *b, void *p,
                                                              const char *op) {
  uintptr_t key = b->key_shared;
  if (txa_g.free_check && TXA_UNLIKELY(looks_free(b, p, key))) {
    report_double_free(op, p, b);
    return false;
  }
  txa_public_push(b, p, key);
  return true;
}

static __attribute__((noinline)) void free_slow(void *p, unsigned kind);

/* txalloc_free's remote free of an object of span kind `kind` (SMALL or MEDIUM), without
 * the checked path's dispatch: the object-start test (an empty block, capacity 0, has a
 * stale bound), txa_may_be_free's filter in place of the exact double-free test (a hit
 * goes to the checked path, which decides and reports), the counts, the push (counted
 * first, so that nothing but b is live across the push's possible call).
 * pre: b = txa_block_of(p, kind), h != NULL does not own b. */
static inline __attribute__((always_inline)) void free_remote(txa_heap *h, txa_block *b, void *p,
                                                              unsigned kind) {
  uintptr_t key = b->key_shared;
  if (TXA_UNLIKELY(b->capacity == 0 || !txa_is_object_start(b, (uintptr_t)p)) ||
      TXA_UNLIKELY(txa_may_be_free(b, *(uintptr_t *)p, key, kind))) {
    free_slow(p, kind);
    return;
  }
  TXALLOC_ASSERT(txa_object_index(b, (uintptr_t)p) >= 0);
  unsigned c = b->class_shared;
  txa_bump_counter(&h->cls.frees[c], 1);
  txa_bump_counter(&h->cls.remote_frees[c], 1);
  uint32_t size = b->size;
  if (h->foreign_count[c] < h->foreign_cap[c] && h->foreign_bytes + size <= TXA_FOREIGN_BYTES) {
    /* Kept for this thread's next malloc of class c (foreign.c). */
    *(uintptr_t *)p = txa_encode(NULL, key);
    ((void **)p)[1] = h->foreign[c];
    h->foreign[c] = p;
    h->foreign_count[c]++;
    h->foreign_bytes += size;
    return;
  }
  txa_public_push(b, p, key);
}
static __attribute__((noinline)) void free_remote_small(txa_heap *h, txa_block *b, void *p) {
  free_remote(h, b, p, TXA_KIND_SMALL);
}
static __attribute__((noinline)) void free_remote_medium(txa_heap *h, txa_block *b, void *p) {
  free_remote(h, b, p, TXA_KIND_MEDIUM);
}

/* pre: kind is SMALL or MEDIUM. Returns false (after reporting) for a bad pointer. */
static inline bool free_in_block(void *p, unsigned kind, const char *op) {
  uintptr_t a = (uintptr_t)p;
  txa_block *b = txa_block_of(a, kind);
  if (TXA_UNLIKELY(txa_object_index(b, a) < 0)) {
    report_bad_object(op, p, b);
    return false;
  }
  txa_heap *h = txa_tls_heap;
  unsigned c = b->class_shared;
  if (TXA_LIKELY(h != NULL) && atomic_load_explicit(&b->owner, memory_order_relaxed) == h) {
    uintptr_t key = b->key;
    if (txa_g.free_check && TXA_UNLIKELY(looks_free(b, p, key))) {
      if (!txa_g.secure || confirmed_free(b, p)) {
        report_double_free(op, p, b);
        return false;
      }
    }
    if (TXA_UNLIKELY(txa_g.secure) && txa_block_never_used(b, p)) {
      txa_error(TXALLOC_ERROR_INVALID_FREE, p,
                "%s(%p): invalid pointer: the object was never allocated", op, p);
      return false;
    }
    txa_owner_free(h, b, p, c);
    return true;
  }
  if (!h && !txa_thread_is_exiting()) h = txa_heap_get_slow();
  if (!remote_free(b, p, op)) return false;
  if (h) {
    txa_bump_counter(&h->cls.frees[c], 1);
    txa_bump_counter(&h->cls.remote_frees[c], 1);
  } else {
    atomic_fetch_add_explicit(&txa_global_cls[c][1], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&txa_global_cls[c][2], 1, memory_order_relaxed);
  }
  return true;
}

static __attribute__((noinline)) void free_checked(void *p, const char *op) {
  txa_init();
  unsigned kind = txa_kind_of((uintptr_t)p);
  if (TXA_LIKELY(kind == TXA_KIND_SMALL || kind == TXA_KIND_MEDIUM)) {
    free_in_block(p, kind, op);
  } else if (kind == TXA_KIND_RUNS) {
    txa_runs_free(p, op);
  } else if (kind == TXA_KIND_LARGE) {
    txa_large_free(p, op);
  } else {
    report_not_ours(op, p);
  }
}

/* pre: kind = txa_kind_of(p). */
static __attribute__((noinline)) void free_slow(void *p, unsigned kind) {
  if (TXA_LIKELY(kind == TXA_KIND_SMALL || kind == TXA_KIND_MEDIUM)) {
    free_in_block(p, kind, "free");
  } else if (p) {
    free_checked(p, "free");
  }
}

/* The common case as a leaf, with few live registers: a valid object of a small or medium
 * block the calling thread owns, not looking free. A block it does not own tail-calls
 * the remote free of its kind. Everything else (NULL, whose granule is never ours; large objects,
 * errors; a thread without a heap; the first call before initialisation: the empty region map says
 * "not ours") tail-calls free_slow with the kind found here, which redoes the checks and reports.
 */
static inline __attribute__((always_inline)) bool free_in_span(void *p, unsigned kind) {
  txa_block *b = txa_block_of((uintptr_t)p, kind);
  txa_heap *h = txa_tls_heap;
  if (TXA_UNLIKELY(h == NULL)) return false;
  if (TXA_LIKELY(atomic_load_explicit(&b->owner, memory_order_relaxed) == h))
    return txa_free_owned_by(h, b, p, kind);
  if (kind == TXA_KIND_SMALL)
    free_remote_small(h, b, p);
  else
    free_remote_medium(h, b, p);
  return true;
}

TXALLOC_API void txalloc_free(void *p) {
  unsigned kind = txa_kind_of((uintptr_t)p);
  if (TXA_LIKELY(kind == TXA_KIND_SMALL)) {
    if (TXA_LIKELY(free_in_span(p, TXA_KIND_SMALL))) return;
  } else if (kind == TXA_KIND_MEDIUM && free_in_span(p, TXA_KIND_MEDIUM)) {
    return;
  }
  free_slow(p, kind);
}

/* ---- Sizes ---- */

TXALLOC_API size_t txalloc_usable_size(const void *p) {
  if (!p) return 0;
  txa_init();
  size_t usable;
  return txa_direct_usable(p, &usable) ? usable : 0;
}

TXALLOC_API txalloc_owner txalloc_owner_of(const void *p) {
  txa_init();
  switch (txa_kind_of((uintptr_t)p)) {
  case TXA_KIND_NONE: return TXALLOC_NOT_OURS;
  case TXA_KIND_LARGE: return TXALLOC_LARGE;
  default: return TXALLOC_SMALL;
  }
}

/* ---- realloc ---- */

TXALLOC_API void *txalloc_realloc(void *p, size_t size) {
  if (!p) return txalloc_malloc(size);
  if (size == 0) {
    free_checked(p, "realloc");
    return NULL;
  }
  txa_init();
  uintptr_t a = (uintptr_t)p;
  unsigned kind = txa_kind_of(a);
  size_t old, want = size;
  if (kind == TXA_KIND_SMALL || kind == TXA_KIND_MEDIUM) {
    txa_block *b = txa_block_of(a, kind);
    if (txa_object_index(b, a) < 0) {
      report_bad_object("realloc", p, b);
      return NULL;
    }
    old = b->size;
    /* In place while the object is big enough and not more than twice the need. */
    if (size <= old && (size >= old / 2 || old <= 64)) return p;
  } else if (kind == TXA_KIND_RUNS) {
    /* Within the runs' sizes, in place whenever the neighbouring pages allow. */
    void *q = txa_runs_resize(p, size, &old);
    if (q) return q;
    if (old == 0) return NULL; /* reported */
    if (size <= old && size >= old / 2) return p;
  } else if (kind == TXA_KIND_LARGE) {
    old = txa_large_usable(p);
    if (old == 0) {
      txa_large_free(p, "realloc"); /* reports the bad pointer */
      return NULL;
    }
    if (size > TXA_MEDIUM_MAX) {
      void *q = txa_large_resize(p, size);
      if (q) return q;
    }
  } else {
    report_not_ours("realloc", p);
    return NULL;
  }
  /* A growth that moves takes a quarter more (two class steps at least), within the
   * classes and runs: a buffer grown by small steps then moves half as often. */
  size_t grown = old + old / 4;
  if (size > old && size <= TXA_MEDIUM_MAX && grown > size)
    want = grown < TXA_MEDIUM_MAX ? grown : TXA_MEDIUM_MAX;
  void *q = txalloc_malloc(want);
  if (!q) return NULL; /* p stays valid */
  memcpy(q, p, old < size ? old : size);
  free_checked(p, "realloc");
  return q;
}

TXALLOC_API void *txalloc_reallocarray(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return txalloc_realloc(p, total);
}

/* ---- Aligned allocation ---- */

/* pre: align is a power of two. */
static void *aligned(size_t align, size_t size) {
  if (align <= 16) return txalloc_malloc(size);
  txa_init();
  if (size <= TXA_MEDIUM_MAX && align <= TXA_MEDIUM_MAX) {
    unsigned c = txa_aligned_class(size, align);
    if (c < txa_class_count) return class_alloc(c, 0);
  }
  return txa_large_alloc(size, align, false);
}

static bool power_of_two(size_t x) { return x && !(x & (x - 1)); }

TXALLOC_API int txalloc_posix_memalign(void **out, size_t alignment, size_t size) {
  if (!power_of_two(alignment) || alignment % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = aligned(alignment, size);
  if (!p) {
    errno = saved;
    return ENOMEM;
  }
  *out = p;
  return 0;
}

TXALLOC_API void *txalloc_aligned_alloc(size_t alignment, size_t size) {
  if (!power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return aligned(alignment, size);
}

TXALLOC_API void *txalloc_memalign(size_t alignment, size_t size) {
  /* glibc: a non-power-of-two alignment is rounded up to the next power of two. */
  if (alignment > ((size_t)1 << 62)) {
    errno = EINVAL;
    return NULL;
  }
  size_t a = 1;
  while (a < alignment) a <<= 1;
  return aligned(a, size);
}

TXALLOC_API void *txalloc_valloc(size_t size) { return aligned(txa_os_page_size(), size); }

TXALLOC_API void *txalloc_pvalloc(size_t size) {
  size_t page = txa_os_page_size();
  if (size > SIZE_MAX - page) {
    errno = ENOMEM;
    return NULL;
  }
  size = size ? (size + page - 1) & ~(page - 1) : page;
  return aligned(page, size);
}

/* ---- Maintenance ---- */

TXALLOC_API void txalloc_collect(void) {
  txa_init();
  txa_heap *h = txa_tls_heap;
  if (h) {
    txa_foreign_flush(h);
    txa_runs_cache_flush(h);
    txa_heap_trim(h);
  }
  txa_store_reclaim_abandoned();
  txa_store_purge(true);
  txa_runs_collect();
  txa_large_cache_flush();
}

/* The hidden names of the entry points (alloc/entry.h). */
void *txa_entry_malloc(size_t size) __attribute__((alias("txalloc_malloc")));
void txa_entry_free(void *p) __attribute__((alias("txalloc_free")));
void *txa_entry_calloc(size_t count, size_t size) __attribute__((alias("txalloc_calloc")));
void *txa_entry_realloc(void *p, size_t size) __attribute__((alias("txalloc_realloc")));
