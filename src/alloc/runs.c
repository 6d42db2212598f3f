/* Page runs: requests above TXA_RUNS_MIN up to TXA_MEDIUM_MAX, served as runs of whole
 * pages cut from shared 1 MiB chunks, with coalescing on free and resizing in place.
 *
 * Why: in per-class spans, the memory of a class serves that class only, so a program's
 * resident set follows the sum of each class's peak. Objects above 8 KiB are few per
 * class and change class on every realloc, so their peaks hardly overlap (a string grown
 * by small steps from 8 KiB to 128 KiB passes through 32 classes). A run freed here is
 * reused by a request of any size, and a realloc grows into the free run after it.
 *
 * A chunk (a granule of kind TXA_KIND_RUNS) keeps its page map in its first page; pages
 * 1..255 hold runs. Per page index i:
 *   tag[i] & TAG_LIVE    a live run starts at i; len[i] pages; the object starts
 *                        colour[i] x 64 bytes into page i
 *   tag[i] & TAG_FREE    a free run starts at i; len[i] pages; on free list bin len[i]
 *   tag[i] & TAG_END     a free run ends at i; len[i] pages (the boundary tag read when
 *                        the run before i+1 is freed)
 * No two free runs touch (a free coalesces with both neighbours). Free runs of each length
 * form a doubly linked list of page indices (bin_head/next/prev), with a bitmap of the
 * lengths that have one, so the smallest fitting run is found in four word tests.
 *
 * Chunks belong to arenas, each with a lock and its chunks; a thread heap allocates from
 * the arena its creation assigned it (TXA_RUNS_ARENAS of them, so threads rarely share
 * one), and a free takes the lock of the object's arena, remote or not: each operation
 * moves or fills at least 8 KiB, next to which an uncontended lock is cheap. An arena
 * searches its chunks in creation order (the oldest first keeps the newest ones empty, so
 * they can be returned), one after the other: an arena of many fragmented chunks makes
 * its allocations slower. While more than two of an arena's chunks are empty and
 * committed, the newest of them is decommitted (all but its map page): the search takes
 * the oldest first, so a program that frees and allocates again at the edge of a chunk
 * reuses a committed one instead of decommitting and faulting the same chunk each time.
 * txalloc_collect decommits every empty chunk. */
#include <errno.h>
#include <string.h>

#include "alloc/internal.h"

#define PAGE_SHIFT 12
#define PAGE ((size_t)1 << PAGE_SHIFT)
#define PAGES (TXA_GRANULE >> PAGE_SHIFT) /* page 0 is the map */
#define FIRST_PAGE 1
#define COLOUR_UNIT 64
#define EMPTY_KEPT 2 /* fully free chunks kept committed */

enum { TAG_LIVE = 1, TAG_FREE = 2, TAG_END = 4 };

typedef struct runs_chunk runs_chunk;
struct runs_chunk {
  runs_chunk *next;    /* every chunk, in creation order */
  uint32_t free_pages; /* pages in free runs */
  bool decommitted;    /* pages FIRST_PAGE.. were given back while the chunk was empty */
  uint8_t colour_next; /* rotates the colours of new runs */
  uint8_t arena;       /* index in arenas, fixed */
  uint64_t nonempty[PAGES / 64];
  uint8_t len[PAGES], tag[PAGES], colour[PAGES];
  uint8_t bin_head[PAGES], bin_next[PAGES], bin_prev[PAGES];
};
_Static_assert(sizeof(runs_chunk) <= PAGE, "the page map fits in the first page");
_Static_assert(PAGES - FIRST_PAGE <= 255, "run lengths fit in a byte");
_Static_assert(TXA_MEDIUM_MAX + PAGE <= (PAGES - FIRST_PAGE) * PAGE, "a run fits in a chunk");

typedef struct runs_arena {
  _Alignas(TXA_CACHE_LINE) txa_lock lock; /* guards the arena and its chunks */
  runs_chunk *chunks, *tail;
  unsigned empty_committed; /* chunks all free and committed */
} runs_arena;
static runs_arena arenas[TXA_RUNS_ARENAS];

static inline runs_chunk *chunk_of(uintptr_t a) {
  return (runs_chunk *)(a & ~(uintptr_t)(TXA_GRANULE - 1));
}
static inline unsigned page_of(uintptr_t a) {
  return (unsigned)((a & (TXA_GRANULE - 1)) >> PAGE_SHIFT);
}
static inline char *page_addr(runs_chunk *c, unsigned i) {
  return (char *)c + ((size_t)i << PAGE_SHIFT);
}

/* ---- Free runs ---- */

static void bin_insert(runs_chunk *c, unsigned i, unsigned n) {
  c->len[i] = (uint8_t)n;
  c->len[i + n - 1] = (uint8_t)n;
  c->tag[i + n - 1] = TAG_END;
  c->tag[i] = (uint8_t)(TAG_FREE | (n == 1 ? TAG_END : 0));
  c->bin_prev[i] = 0;
  c->bin_next[i] = c->bin_head[n];
  if (c->bin_head[n]) c->bin_prev[c->bin_head[n]] = (uint8_t)i;
  c->bin_head[n] = (uint8_t)i;
  c->nonempty[n / 64] |= (uint64_t)1 << (n % 64);
}

static void bin_remove(runs_chunk *c, unsigned i) {
  unsigned n = c->len[i];
  if (c->bin_prev[i])
    c->bin_next[c->bin_prev[i]] = c->bin_next[i];
  else
    c->bin_head[n] = c->bin_next[i];
  if (c->bin_next[i]) c->bin_prev[c->bin_next[i]] = c->bin_prev[i];
  if (!c->bin_head[n]) c->nonempty[n / 64] &= ~((uint64_t)1 << (n % 64));
  c->tag[i] = 0;
  c->tag[i + n - 1] = 0;
}

/* The length of the shortest free run of at least n pages, or 0. */
static unsigned shortest_fit(const runs_chunk *c, unsigned n) {
  for (unsigned w = n / 64; w < PAGES / 64; w++) {
    uint64_t bits = c->nonempty[w];
    if (w == n / 64) bits &= ~(uint64_t)0 << (n % 64);
    if (bits) return w * 64 + (unsigned)__builtin_ctzll(bits);
  }
  return 0;
}

/* Frees pages [i, i+n), coalescing with the free runs on both sides. */
static void release_pages(runs_chunk *c, unsigned i, unsigned n) {
  c->free_pages += n;
  unsigned end = i + n;
  if (end < PAGES && (c->tag[end] & TAG_FREE)) {
    unsigned m = c->len[end];
    bin_remove(c, end);
    n += m;
  }
  if (i > FIRST_PAGE && (c->tag[i - 1] & TAG_END)) {
    unsigned m = c->len[i - 1];
    bin_remove(c, i - m);
    i -= m;
    n += m;
  }
  bin_insert(c, i, n);
}

/* ---- Chunks ---- */

static void chunk_init(runs_arena *a, runs_chunk *c) {
  c->arena = (uint8_t)(a - arenas);
  release_pages(c, FIRST_PAGE, PAGES - FIRST_PAGE);
  if (a->tail)
    a->tail->next = c;
  else
    a->chunks = c;
  a->tail = c;
  a->empty_committed++;
}

static bool chunk_empty(const runs_chunk *c) { return c->free_pages == PAGES - FIRST_PAGE; }

static void chunk_decommit(runs_arena *a, runs_chunk *c) {
  TXALLOC_ASSERT(chunk_empty(c) && !c->decommitted);
  txa_os_decommit(page_addr(c, FIRST_PAGE), (PAGES - FIRST_PAGE) * PAGE);
  txa_committed_add(-(int64_t)((PAGES - FIRST_PAGE) * PAGE));
  TXA_GCOUNT(spans_decommitted, 1);
  c->decommitted = true;
  a->empty_committed--;
}

/* Decommits the newest of a's empty committed chunks. pre: there is one. */
static void decommit_newest_empty(runs_arena *a) {
  runs_chunk *newest = NULL;
  for (runs_chunk *c = a->chunks; c; c = c->next)
    if (chunk_empty(c) && !c->decommitted) newest = c;
  chunk_decommit(a, newest);
}

/* Takes a run of n pages from c, which has one; returns its first page. *zeroed: the run
 * reads as zero (c was fresh or decommitted). */
static unsigned take_run(runs_arena *a, runs_chunk *c, unsigned n, unsigned fit, bool *zeroed) {
  *zeroed = false;
  if (chunk_empty(c)) {
    if (c->decommitted) {
      txa_committed_add((int64_t)((PAGES - FIRST_PAGE) * PAGE));
      c->decommitted = false;
      *zeroed = true;
    } else {
      a->empty_committed--;
    }
  }
  unsigned i = c->bin_head[fit];
  bin_remove(c, i);
  if (fit > n) bin_insert(c, i + n, fit - n);
  c->free_pages -= n;
  c->len[i] = (uint8_t)n;
  c->tag[i] = TAG_LIVE;
  return i;
}

/* ---- The operations ---- */

static size_t run_usable(const runs_chunk *c, unsigned i) {
  return ((size_t)c->len[i] << PAGE_SHIFT) - (size_t)c->colour[i] * COLOUR_UNIT;
}

/* Counts `bytes` of page-run objects allocated (k = 0) or freed (k = 1) in the calling
 * thread's heap, so that threads do not share a counter's line (stats.c sums them). */
static void count_bytes(unsigned k, uint64_t bytes) {
  txa_heap *h = txa_tls_heap;
  if (TXA_LIKELY(h != NULL))
    txa_bump_counter(&h->runs_bytes[k], bytes);
  else
    atomic_fetch_add_explicit(&txa_runs_bytes[k], bytes, memory_order_relaxed);
}

/* Counts an allocation (k = 0) or a free (k = 1) of an object of `usable` bytes. */
static void count(unsigned k, uint64_t usable) {
  txa_heap *h = txa_tls_heap;
  if (TXA_LIKELY(h != NULL))
    txa_bump_counter(&h->counters[k ? TXA_C_frees : TXA_C_mallocs], 1);
  else if (k)
    TXA_GCOUNT(frees, 1);
  else
    TXA_GCOUNT(mallocs, 1);
  count_bytes(k, usable);
}

void *txa_runs_alloc(size_t size, bool zero) {
  unsigned n = (unsigned)((size + PAGE - 1) >> PAGE_SHIFT);
  /* A thread gets its heap here too, so that its arena (and counts) are its own. */
  txa_heap *h = txa_tls_heap;
  if (!h && !txa_thread_is_exiting()) h = txa_heap_get_slow();
  runs_arena *a = &arenas[h ? h->runs_arena : 0];
  txa_lock_acquire(&a->lock);
  runs_chunk *c = a->chunks;
  unsigned fit = 0;
  bool fresh = false;
  for (; c; c = c->next)
    if (c->free_pages >= n && (fit = shortest_fit(c, n)) != 0) break;
  if (!c) {
    c = txa_region_chunk(TXA_KIND_RUNS);
    if (!c) {
      txa_lock_release(&a->lock);
      errno = ENOMEM;
      return NULL;
    }
    chunk_init(a, c);
    fresh = true;
    fit = shortest_fit(c, n);
  }
  bool zeroed = false;
  unsigned i = take_run(a, c, n, fit, &zeroed);
  zeroed = zeroed || fresh; /* carved memory reads as zero */
  /* The colour uses the run's slack only, so it never costs a page: consecutive runs start
   * their objects on different L1 sets, as the colours of class spans do. */
  size_t slack_units = (((size_t)n << PAGE_SHIFT) - size) / COLOUR_UNIT;
  c->colour[i] = (uint8_t)(c->colour_next % (slack_units + 1));
  c->colour_next += 5;
  size_t usable = run_usable(c, i);
  txa_lock_release(&a->lock);
  char *p = page_addr(c, i) + (size_t)c->colour[i] * COLOUR_UNIT;
  if (zero && !zeroed) memset(p, 0, usable);
  count(0, usable);
  return p;
}

/* The first page of the live run whose object starts at p, or 0 (p is not one).
 * pre: the lock of p's arena held, p in a chunk of kind RUNS. */
static unsigned live_start(const void *p) {
  uintptr_t a = (uintptr_t)p;
  const runs_chunk *c = chunk_of(a);
  unsigned i = page_of(a);
  if (i < FIRST_PAGE || !(c->tag[i] & TAG_LIVE)) return 0;
  return (a & (PAGE - 1)) == (size_t)c->colour[i] * COLOUR_UNIT ? i : 0;
}

/* Whether p, which starts no live run object, starts the object of a free run: a double
 * free (else an invalid pointer). pre: the lock of p's arena held. */
static bool starts_free_run(const void *p) {
  uintptr_t a = (uintptr_t)p;
  const runs_chunk *c = chunk_of(a);
  unsigned i = page_of(a);
  return i >= FIRST_PAGE && (c->tag[i] & TAG_FREE) &&
         (a & (PAGE - 1)) == (size_t)c->colour[i] * COLOUR_UNIT;
}

/* Reported after the lock is released: an error hook may allocate. */
static void report_bad(const void *p, const char *op, bool double_free) {
  if (double_free)
    txa_error(TXALLOC_ERROR_DOUBLE_FREE, p, "%s(%p): double free: the page run is already free", op,
              p);
  else
    txa_error(TXALLOC_ERROR_INVALID_FREE, p,
              "%s(%p): invalid pointer: not the start of a live object of a page run", op, p);
}

/* The arena of chunk c, locked. c->arena was written before any object of c was handed
 * out, so whoever holds an address in c reads it. */
static runs_arena *lock_arena_of(const runs_chunk *c) {
  runs_arena *a = &arenas[c->arena];
  txa_lock_acquire(&a->lock);
  return a;
}

void txa_runs_free(void *p, const char *op) {
  runs_chunk *c = chunk_of((uintptr_t)p);
  runs_arena *a = lock_arena_of(c);
  unsigned i = live_start(p);
  if (!i) {
    bool double_free = starts_free_run(p);
    txa_lock_release(&a->lock);
    report_bad(p, op, double_free);
    return;
  }
  size_t usable = run_usable(c, i);
  c->tag[i] = 0;
  release_pages(c, i, c->len[i]);
  if (chunk_empty(c) && ++a->empty_committed > EMPTY_KEPT) decommit_newest_empty(a);
  txa_lock_release(&a->lock);
  count(1, usable);
}

size_t txa_runs_usable(const void *p) {
  const runs_chunk *c = chunk_of((uintptr_t)p);
  runs_arena *a = lock_arena_of(c);
  unsigned i = live_start(p);
  size_t usable = i ? run_usable(c, i) : 0;
  txa_lock_release(&a->lock);
  return usable;
}

void *txa_runs_resize(void *p, size_t size, size_t *usable) {
  runs_chunk *c = chunk_of((uintptr_t)p);
  runs_arena *a = lock_arena_of(c);
  unsigned i = live_start(p);
  if (!i) { /* classified under the lock: the run may be handed out again after it */
    bool double_free = starts_free_run(p);
    txa_lock_release(&a->lock);
    report_bad(p, "realloc", double_free);
    *usable = 0;
    return NULL;
  }
  void *result = NULL;
  *usable = run_usable(c, i);
  if (size > TXA_RUNS_MIN && size <= TXA_MEDIUM_MAX) {
    size_t old = *usable;
    unsigned n = c->len[i];
    unsigned m = (unsigned)((size + (size_t)c->colour[i] * COLOUR_UNIT + PAGE - 1) >> PAGE_SHIFT);
    unsigned end = i + n;
    if (m < n) {
      c->len[i] = (uint8_t)m;
      release_pages(c, i + m, n - m);
      result = p;
    } else if (m == n) {
      result = p;
    } else if (end < PAGES && (c->tag[end] & TAG_FREE) && c->len[end] >= m - n) {
      unsigned after = c->len[end];
      bin_remove(c, end);
      if (after > m - n) bin_insert(c, i + m, after - (m - n));
      c->free_pages -= m - n;
      c->len[i] = (uint8_t)m;
      result = p;
    }
    size_t now = run_usable(c, i);
    if (result && now > old) count_bytes(0, now - old);
    if (result && now < old) count_bytes(1, old - now);
  }
  txa_lock_release(&a->lock);
  return result;
}

void txa_runs_collect(void) {
  for (runs_arena *a = arenas; a < arenas + TXA_RUNS_ARENAS; a++) {
    txa_lock_acquire(&a->lock);
    for (runs_chunk *c = a->chunks; c; c = c->next)
      if (chunk_empty(c) && !c->decommitted) chunk_decommit(a, c);
    txa_lock_release(&a->lock);
  }
}

void txa_runs_lock_all(void) {
  for (runs_arena *a = arenas; a < arenas + TXA_RUNS_ARENAS; a++) txa_lock_acquire(&a->lock);
}

void txa_runs_unlock_all(void) {
  for (runs_arena *a = arenas; a < arenas + TXA_RUNS_ARENAS; a++) txa_lock_release(&a->lock);
}
