/* The allocator's data layout (McRT-Malloc §3, made production grade): geometry, size
 * classes, region map, block and heap headers, global settings. alloc/internal.h adds the
 * allocator's functions; alloc/alloc_direct.h, the inline operations the layers above may
 * use, is written in these types alone.
 *
 * Glossary
 *   granule   1 MiB of address space; the unit of the region map and of carving.
 *   region    a large reservation (option region_mb) carved into granules on demand.
 *   chunk     a carved granule: 64 small blocks, one medium span, runs (runs.c), or
 *             allocator metadata.
 *   block     an aligned span holding objects of one size class: 16 KiB (small classes)
 *             or 1 MiB (medium classes). Its header sits at its start.
 *   object    what malloc returns. Small/medium objects have no header.
 *   large     objects above the largest class: their own mapping (whole granules), a
 *             64-byte header just before the object, cached for reuse when freed.
 *   heap      a thread's bins (one per class) of blocks; reached through initial-exec TLS.
 *   store     global non-blocking LIFOs of empty blocks (per span kind: young, old and
 *             decommitted generations) and of abandoned part-used blocks (per class).
 *   foreign   objects of other heaps' blocks that a thread freed, kept on its heap's
 *             per-class foreign lists for its own next mallocs (foreign.c).
 *
 * Free lists: objects on a block's private or public list hold, in their first word, the
 * link to the next object XOR the block's key (0 ^ key ends a list). The private head is
 * a raw pointer; the public head is packed with the list length (txa_public_pack). A live
 * object's first word is zeroed when it leaves the private list, and the key is fresh for
 * every block lifetime (so stale links in a reused bump area never decode), so a free whose
 * object still decodes to a link into its own block is a double free.
 *
 * Counts: `used` = objects neither on the private list nor in the bump area; objects on
 * the public list still count until their owner repatriates them, so used == 0 means no
 * live object and no pending remote free: only then is a block returned to the store. */
#ifndef TXALLOC_ALLOC_LAYOUT_H
#define TXALLOC_ALLOC_LAYOUT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/txalloc.h"

#define TXA_LIKELY(x) __builtin_expect(!!(x), 1)
#define TXA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TXA_CACHE_LINE 64
/* The allocator's globals are internal to whatever links it (no txa_ symbol is exported):
 * declared hidden, the fast paths address them directly instead of through the GOT. */
#define TXA_HIDDEN __attribute__((visibility("hidden")))

/* ---- Geometry ---- */
#define TXA_BLOCK_SHIFT 14 /* small blocks: 16 KiB, aligned to their size */
#define TXA_BLOCK_SIZE ((size_t)1 << TXA_BLOCK_SHIFT)
#define TXA_GRANULE_SHIFT 20 /* region map unit, chunk size, medium span size */
#define TXA_GRANULE ((size_t)1 << TXA_GRANULE_SHIFT)
#define TXA_MEDIUM_SPAN TXA_GRANULE
#define TXA_ADDRESS_BITS 47  /* user address space of x86-64 4-level paging */
#define TXA_MAP_LEAF_BITS 14 /* a leaf of the region map covers 2^14 granules = 16 GiB */
#define TXA_MAP_LEAF_ENTRIES ((size_t)1 << TXA_MAP_LEAF_BITS)
#define TXA_MAP_ROOT_ENTRIES                                                                       \
  ((size_t)1 << (TXA_ADDRESS_BITS - TXA_GRANULE_SHIFT - TXA_MAP_LEAF_BITS))
#define TXA_BLOCK_HEADER 192 /* three cache lines, see txa_block */

/* ---- Size classes (size_class.c) ---- */
#define TXA_BASE_CLASSES 88 /* 8 by 16 B up to 128 B, then 8 per doubling */
/* Room in the table: the base classes (adjusted by cache-index-aware placement) and the
 * ten powers of two 256 B .. 128 KiB that placement may move out of malloc's reach, kept
 * for aligned allocation. txa_class_count says how many are in use. */
#define TXA_CLASSES (TXA_BASE_CLASSES + 10)
#define TXA_SMALL_MAX ((size_t)1024)        /* requests up to here are served from 16 KiB blocks */
#define TXA_MEDIUM_MAX ((size_t)128 * 1024) /* largest request of a class; above: large */
/* malloc serves requests above this (up to TXA_MEDIUM_MAX) from runs (runs.c), not from
 * their classes, which only aligned allocation reaches there. */
#define TXA_RUNS_MIN ((size_t)2 * 1024)
#define TXA_LARGE_HEADER 64

typedef struct txa_class_info {
  uint32_t size;         /* object size, a multiple of 16 */
  uint32_t first_offset; /* offset of object 0 from the block start */
  uint32_t capacity;     /* objects per block */
  uint32_t span_shift;   /* log2 of the block size */
  uint32_t align;        /* every object of the class is aligned to this */
  uint64_t inverse;      /* floor(2^40 / size) + 1: offset / size by multiplication */
  uint32_t colours;      /* first-object offsets a block may get: first_offset + k x step */
  uint32_t colour_step;  /* a multiple of align and of 64; k < colours keeps capacity */
  bool aligned_only;     /* reached by aligned allocation only, never by a size lookup */
} txa_class_info;

extern txa_class_info txa_classes[TXA_CLASSES]; /* sizes ascending */
extern unsigned txa_class_count;
/* Class of a request of `size` bytes (size <= TXA_MEDIUM_MAX). */
extern TXA_HIDDEN uint8_t txa_class_by_16[TXA_SMALL_MAX / 16 + 1];
/* Medium classes: whole lines. */
extern TXA_HIDDEN uint8_t txa_class_by_64[TXA_MEDIUM_MAX / 64 + 1];
static inline unsigned txa_size_class(size_t size) {
  return size <= TXA_SMALL_MAX ? txa_class_by_16[(size + 15) >> 4]
                               : txa_class_by_64[(size + 63) >> 6];
}

/* ---- Region map (region.c) ---- */
enum txa_kind {
  TXA_KIND_NONE = 0, /* not ours */
  TXA_KIND_RESERVED, /* reserved by a region but not carved yet */
  TXA_KIND_SMALL,    /* chunk of 16 KiB blocks */
  TXA_KIND_MEDIUM,   /* one 1 MiB medium block */
  TXA_KIND_LARGE,    /* large-object mapping (live or cached) */
  TXA_KIND_META,     /* allocator metadata (heaps) */
  TXA_KIND_RUNS,     /* chunk of runs (runs.c) */
};
/* Two levels: a static root of 8192 leaf pointers; a leaf (16 KiB, one byte per granule)
 * is mapped when the first granule it covers becomes ours, and is never unmapped. */
extern TXA_HIDDEN _Atomic(uint8_t *) txa_region_map[TXA_MAP_ROOT_ENTRIES];

static inline unsigned txa_kind_of(uintptr_t a) {
  /* The root index is below TXA_MAP_ROOT_ENTRIES exactly when a is below 2^47. */
  uintptr_t root = a >> (TXA_GRANULE_SHIFT + TXA_MAP_LEAF_BITS);
  if (TXA_UNLIKELY(root >= TXA_MAP_ROOT_ENTRIES)) return TXA_KIND_NONE;
  uint8_t *leaf = atomic_load_explicit(&txa_region_map[root], memory_order_acquire);
  if (TXA_UNLIKELY(!leaf)) return TXA_KIND_NONE;
  return __atomic_load_n(&leaf[(a >> TXA_GRANULE_SHIFT) & (TXA_MAP_LEAF_ENTRIES - 1)],
                         __ATOMIC_RELAXED);
}
/* Block-store links live outside the blocks (so that a decommitted block keeps no page):
 * one 64-bit word per 16 KiB of address space, in 8 MiB leaves (lazily backed) created
 * with the region-map leaf covering the same 16 GiB. */
extern _Atomic(_Atomic(uint64_t) *) txa_link_map[TXA_MAP_ROOT_ENTRIES];
static inline _Atomic(uint64_t) *txa_block_link(const void *b) {
  uintptr_t a = (uintptr_t)b;
  _Atomic(uint64_t) *leaf = atomic_load_explicit(
      &txa_link_map[a >> (TXA_GRANULE_SHIFT + TXA_MAP_LEAF_BITS)], memory_order_acquire);
  return &leaf[(a >> TXA_BLOCK_SHIFT) &
               (((uintptr_t)1 << (TXA_GRANULE_SHIFT + TXA_MAP_LEAF_BITS - TXA_BLOCK_SHIFT)) - 1)];
}
/* ---- Blocks ---- */
typedef struct txa_heap txa_heap;
typedef struct txa_block txa_block;
struct txa_block {
  /* line 0: written by the owner only (fast paths) */
  void *free;        /* private free list: head raw, links encoded */
  char *bump;        /* next never-used object */
  char *bump_end;    /* end of the last whole object */
  uintptr_t key;     /* copy of key for the owner's fast path */
  txa_block *next;   /* bin ring */
  txa_block *prev;   /* bin ring */
  uint32_t used;     /* objects out of the private list and bump area (public included) */
  uint32_t obj_size; /* copy of the class size */
  uint16_t class_id; /* size class */
  uint8_t zero_bump; /* the bump area reads as zero (fresh or decommitted memory) */
  uint8_t pad0[1];
  uint32_t wrap_objects; /* objects before the first bump area, bumped after it (heap.c) */
  /* line 1: written when the block changes hands; read by every thread that frees */
  _Alignas(TXA_CACHE_LINE) _Atomic(txa_heap *) owner; /* NULL: in the store or abandoned */
  uintptr_t key_shared; /* link encoding key, random per block lifetime */
  uint64_t inverse;     /* see txa_class_info */
  uint32_t capacity;    /* objects in the block; 0 while the block is empty/in the store */
  uint32_t first_offset;
  uint32_t size; /* object size */
  uint16_t class_shared;
  uint8_t span_kind; /* TXA_KIND_SMALL or TXA_KIND_MEDIUM */
  /* The block is its bin's current one (written by the owner under its ring lock): remote
   * frees then skip the release check, which would read line 0 (heap.c). */
  _Atomic(uint8_t) current_hint;
  /* The fast frees' object-start test (txa_is_object_start), set with capacity by
   * txa_block_init: start_magic = floor(2^64 / size) + 1, start_bound = capacity x
   * (start_magic x size mod 2^64), or 0 in secure mode, where every free must take the
   * checked path. Valid while the block has an owner. */
  uint64_t start_magic;
  uint64_t start_bound;
  /* line 2: the public free list, target of remote frees' CAS: head and length packed in
   * one word (txa_public_pack), so the owner takes both with one exchange. */
  _Alignas(TXA_CACHE_LINE) _Atomic(uint64_t) public_free;
};
_Static_assert(sizeof(txa_block) <= TXA_BLOCK_HEADER, "block header too big");

static inline size_t txa_span_size(unsigned kind) {
  return kind == TXA_KIND_SMALL ? TXA_BLOCK_SIZE : TXA_MEDIUM_SPAN;
}
/* The span kind of class c's blocks: TXA_KIND_SMALL (16 KiB blocks) or TXA_KIND_MEDIUM. */
static inline unsigned txa_class_kind(unsigned c) {
  return txa_classes[c].span_shift == TXA_BLOCK_SHIFT ? TXA_KIND_SMALL : TXA_KIND_MEDIUM;
}
static inline txa_block *txa_block_of(uintptr_t a, unsigned kind) {
  return (txa_block *)(a & ~(uintptr_t)(txa_span_size(kind) - 1));
}
/* Index of the object starting at a in block b, or -1 when a is not an object start (an
 * interior pointer, the header, past the last object; an empty block has capacity 0).
 * pre: b = txa_block_of(a, kind). Then off is below the span (<= 1 MiB), where the
 * reciprocal gives the exact quotient (size < 2^20), or wrapped round to above 2^64 - 2^20
 * (a inside the header), which no idx * size (< 2^24 x 2^17) can equal. */
static inline int64_t txa_object_index(const txa_block *b, uintptr_t a) {
  uint64_t off = (uint64_t)(a - (uintptr_t)b) - b->first_offset;
  uint64_t idx = (off * b->inverse) >> 40;
  if (TXA_UNLIKELY(idx >= b->capacity || idx * b->size != off)) return -1;
  return (int64_t)idx;
}
/* The fast frees' object-start test, equal to txa_object_index(b, a) >= 0 while b has an
 * owner (an empty block has a stale bound), always false in secure mode (so the fast paths
 * need no test of the mode): one multiplication and one compare. With d = size,
 * M = start_magic and e = M x d - 2^64 (1 <= e <= d), an offset n = q x d + r below 2^32
 * gives n x M mod 2^64 = q x e + r x M without wrapping (M >= 2^47 > e + 2^32): at least
 * M > start_bound when r > 0, else q x e, below start_bound = capacity x e exactly when
 * q < capacity. A 32-bit offset keeps n below 2^32: an address in the header wraps to
 * above 2^32 - 2^20, a quotient beyond any capacity. */
static inline bool txa_is_object_start(const txa_block *b, uintptr_t a) {
  uint32_t n = (uint32_t)a - (uint32_t)(uintptr_t)b - b->first_offset;
  return (uint64_t)n * b->start_magic < b->start_bound;
}
static inline uintptr_t txa_encode(void *next, uintptr_t key) { return (uintptr_t)next ^ key; }
static inline void *txa_decode(uintptr_t link, uintptr_t key) { return (void *)(link ^ key); }

/* The public list word: object address >> 4 (objects are 16-aligned below 2^47: 43 bits)
 * and the number of objects on the list in the top 21 bits (a block holds < 2^21). */
#define TXA_PUBLIC_PTR_BITS 43
static inline uint64_t txa_public_pack(void *head, uint64_t count) {
  return ((uintptr_t)head >> 4) | (count << TXA_PUBLIC_PTR_BITS);
}
static inline void *txa_public_head(uint64_t w) {
  return (void *)(uintptr_t)((w & ((UINT64_C(1) << TXA_PUBLIC_PTR_BITS) - 1)) << 4);
}
static inline uint32_t txa_public_count(uint64_t w) { return (uint32_t)(w >> TXA_PUBLIC_PTR_BITS); }

/* `used` is written by the owner only, and read by a thread that may release the block when
 * its frees emptied it (heap.c). A decrement (txa_used_set) is a release store, so that a
 * releaser that reads the count with acquire and finds the block empty also sees the owner's
 * last writes to it; an increment (an allocation) needs no order. The owner's accesses are
 * plain in normal builds: an aligned 32-bit store is single-copy atomic on x86-64, and
 * atomic ones would cost the fast paths a load and a store instead of one add to memory
 * (3 instructions per malloc/free pair); ThreadSanitizer builds make them atomic so that the
 * protocol is checked. The releaser's loads are always atomic. */
#if defined(__SANITIZE_THREAD__)
#define TXA_OWNER_ATOMIC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TXA_OWNER_ATOMIC 1
#endif
#endif
static inline uint32_t txa_used(const txa_block *b) {
#ifdef TXA_OWNER_ATOMIC
  return __atomic_load_n(&b->used, __ATOMIC_RELAXED);
#else
  return b->used;
#endif
}
static inline uint32_t txa_used_acquire(const txa_block *b) {
  return __atomic_load_n(&b->used, __ATOMIC_ACQUIRE);
}
static inline void txa_used_set(txa_block *b, uint32_t n) {
#ifdef TXA_OWNER_ATOMIC
  __atomic_store_n(&b->used, n, __ATOMIC_RELEASE);
#else
  __atomic_signal_fence(__ATOMIC_RELEASE); /* a plain store on x86-64 has release order */
  b->used = n;
#endif
}
/* One fewer object in use (the owner's free), with txa_used_set's order; returns the count. */
static inline uint32_t txa_used_dec(txa_block *b) {
#ifdef TXA_OWNER_ATOMIC
  uint32_t n = __atomic_load_n(&b->used, __ATOMIC_RELAXED) - 1;
  __atomic_store_n(&b->used, n, __ATOMIC_RELEASE);
  return n;
#else
  __atomic_signal_fence(__ATOMIC_RELEASE);
  return --b->used;
#endif
}
static inline void txa_used_inc(txa_block *b) {
#ifdef TXA_OWNER_ATOMIC
  __atomic_store_n(&b->used, __atomic_load_n(&b->used, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#else
  b->used++;
#endif
}

/* ---- Thread heaps (heap.c) ---- */
enum txa_counter {
#define TXA_COUNTER_ID_(name, doc) TXA_C_##name,
  TXALLOC_STATS_COUNTERS(TXA_COUNTER_ID_)
#undef TXA_COUNTER_ID_
      TXA_COUNTERS
};

/* A bin's ring; its current block is the heap's current[class] (see txa_heap). */
typedef struct txa_bin {
  txa_block *head;    /* the distinguished bin head of §3.3; NULL when empty */
  uint32_t blocks;    /* blocks in the ring */
  uint32_t visited;   /* blocks inspected in the current traversal */
  uint64_t free_seen; /* free objects found on arriving at blocks, this traversal */
  uint64_t cap_seen;  /* capacity of the blocks inspected, this traversal */
  bool grow;          /* last traversal found < bin_grow_percent free: add a block */
  uint32_t colour;    /* colour of the next block initialised for this bin (mod colours) */
  /* Refills that add a block without searching, after searches that found only full
   * blocks (heap.c); backoff is the last such count, doubled by each failed search. */
  uint32_t skip, backoff;
} txa_bin;

/* A spin lock for slow paths (fork.c). */
typedef struct txa_lock {
  _Atomic(int) held;
} txa_lock;

/* Blocks that other threads' frees emptied, offered to their owner's heap for release
 * (heap.c); more at once set release_scan instead. */
#define TXA_RELEASE_SLOTS 16
/* Empty small blocks a heap keeps for itself (empty_cache.c): 512 x 16 KiB = 8 MiB at most
 * per thread, enough for a thread that empties and refills a few MiB of blocks a round. */
#define TXA_HEAP_EMPTY_BLOCKS 512
#define TXA_EMPTY_CACHE_CHUNK 32 /* its share of the caches' budget is reserved in these */
/* Foreign objects (foreign.c): a class's list starts with room for TXA_FOREIGN_START
 * objects and doubles, up to TXA_FOREIGN_CLASS_MAX objects and TXA_FOREIGN_CLASS_BYTES, each
 * time its thread's mallocs empty it; a heap keeps at most TXA_FOREIGN_BYTES in all. */
#define TXA_FOREIGN_START 4
#define TXA_FOREIGN_CLASS_MAX 64
#define TXA_FOREIGN_CLASS_BYTES ((uint32_t)16 * 1024)
#define TXA_FOREIGN_BYTES ((uint32_t)256 * 1024)
/* Arenas of runs (runs.c); a heap allocates from the one its creation assigned it. */
#define TXA_RUNS_ARENAS 8
/* A heap's cache of runs it freed (runs.c): runs of up to TXA_RUN_CACHE_UNITS units (8 KiB
 * requests), TXA_RUN_CACHE_DEPTH of each length, TXA_RUN_CACHE_BYTES in all. */
#define TXA_RUN_CACHE_UNITS 33
#define TXA_RUN_CACHE_DEPTH 4
#define TXA_RUN_CACHE_BYTES ((uint32_t)64 * 1024)

/* Per-class event counts, one array per event: the fast paths index them by class with
 * one scaled address. */
typedef struct txa_class_counters {
  uint64_t allocs[TXA_CLASSES], frees[TXA_CLASSES], remote_frees[TXA_CLASSES];
} txa_class_counters;

struct txa_heap {
  /* The block each bin allocates from, never NULL: &txa_empty_block when the bin has no
   * block. Apart from the bins and first, so that malloc's fast path finds it with one
   * scaled load. Changed under ring_lock like the rings. */
  txa_block *current[TXA_CLASSES];
  /* Foreign objects (foreign.c): objects of other heaps' blocks that this thread freed,
   * kept for its own next mallocs of their class, which take them before the current
   * block. Linked through their second word; their first word holds their block's key
   * (the end of a free list), so that the double-free filters see them as free. */
  void *foreign[TXA_CLASSES];
  uint16_t foreign_count[TXA_CLASSES];
  uint16_t foreign_cap[TXA_CLASSES]; /* grows while the thread takes them all; 0: secure */
  uint32_t foreign_bytes;            /* object bytes on all the lists */
  txa_bin bins[TXA_CLASSES];
  /* Statistics: written by the owning thread only (relaxed atomic stores, plain moves on
   * x86-64), read by txalloc_stats_get. */
  txa_class_counters cls;
  uint64_t counters[TXA_COUNTERS];
  txa_heap *all_next;  /* registry of every heap ever made (never unlinked) */
  txa_heap *pool_next; /* free heaps, ready for a new thread */
  uint32_t colour;     /* where its blocks start bumping, in 2^-32 of a block (heap.c) */
  uint32_t runs_arena; /* its arena of runs, fixed at creation (runs.c) */
  uint32_t refills;    /* blocks it added to its bins (owner only) */
  /* Usable bytes of the run objects this thread allocated [0] and freed [1], for
   * live_bytes (owner-only, like the counters). */
  uint64_t runs_bytes[2];
  /* Runs this thread freed, kept for its own next requests of as many units (runs.c):
   * linked through their first word, marked pending so that a second free is caught. */
  void *run_cache[TXA_RUN_CACHE_UNITS + 1];
  uint8_t run_cache_count[TXA_RUN_CACHE_UNITS + 1];
  uint32_t run_cache_bytes;
  bool in_use;
  /* The rings of the bins (next/prev, head, current, blocks) and the ownership of the
   * blocks in them change only under ring_lock: the owner takes it on its slow paths, other
   * threads to release blocks their frees emptied while the owner is idle (heap.c). */
  _Alignas(TXA_CACHE_LINE) txa_lock ring_lock;
  _Atomic(uint32_t) release_pending; /* a slot or release_scan was set since the last drain */
  _Atomic(uint32_t) release_scan;    /* the slots overflowed: inspect every block */
  _Atomic(txa_block *) release_slots[TXA_RELEASE_SLOTS];
  /* Small blocks this heap's own frees emptied, kept for its next refill (empty_cache.c):
   * linked through next, under empty_lock; the count is read without it, as a hint. */
  _Alignas(TXA_CACHE_LINE) txa_lock empty_lock;
  _Atomic(uint32_t) empty_count;
  bool empty_taken;        /* the owner took one since the last purge tick */
  uint32_t empty_reserved; /* its share of the caches' budget, in blocks */
  txa_block *empty_first;
};

extern txa_block txa_empty_block; /* sentinel: no free object, no bump space */
extern __thread txa_heap *txa_tls_heap;

/* ---- Global state (init.c, stats.c) ---- */
typedef struct txa_globals {
  uintptr_t secret;      /* random, for block keys */
  pthread_key_t tls_key; /* destructor hands the heap back at thread exit */
  bool secure, free_check, foreign_reuse;
  _Atomic(bool) heap_colour; /* blocks start at their heap's colour (heap.c) */
  uint32_t bin_search, bin_grow_percent;
  uint64_t decommit_delay_ms, decommit_threshold, large_cache_max;
  size_t region_size;
  int stats_fd; /* duplicate of stderr for the exit statistics, or -1 */
} txa_globals;
extern TXA_HIDDEN txa_globals txa_g;

/* Sets start_magic and start_bound from b's size and capacity and the mode (txa_block_init;
 * secure is fixed before the first block). */
static inline void txa_block_set_start_test(txa_block *b) {
  uint64_t magic = UINT64_MAX / b->size + 1;
  if (magic * b->size == 0) magic++; /* a power of two: e must not be 0 */
  b->start_magic = magic;
  b->start_bound = txa_g.secure ? 0 : (uint64_t)b->capacity * (magic * b->size);
}

#endif
