/* Runs: requests above TXA_RUNS_MIN up to TXA_MEDIUM_MAX, served as runs of 256-byte
 * units cut from shared 1 MiB chunks, with coalescing on free and resizing in place.
 *
 * Why: in per-class spans, the memory of a class serves that class only, so a program's
 * resident set follows the sum of each class's peak. Objects of a few KiB and more are
 * few per class and change class on every realloc, so their peaks hardly overlap (a
 * string grown by small steps from 2 KiB to 128 KiB passes through 48 classes). A run
 * freed here is reused by a request of any size, and a realloc grows into the free run
 * after it.
 *
 * A chunk (a granule of kind TXA_KIND_RUNS) keeps its map in its first pages (FIRST_UNIT
 * units); the units after it hold runs. Per unit i:
 *   tag LIVE             a live run starts at i; len units; the object starts colour x 64
 *                        bytes into unit i
 *   tag LIVE | PENDING   the same, freed: in a heap's cache, or on the pending list of
 *                        the arena (freed by a thread of another arena)
 *   tag FREE             a free run starts at i; len units; on the free list of len
 *   tag END              a free run ends at i; len units (the boundary tag read when the
 *                        run before i+1 is freed)
 * No two free runs touch (a free coalesces with both neighbours). Free runs of each length
 * form a doubly linked list of unit indices (bin_head, bin_next/prev), with a two-level
 * bitmap of the lengths that have one, so the smallest fitting run is found in two word
 * tests.
 *
 * Chunks belong to arenas, each with a lock and its chunks; a thread heap allocates from
 * the arena its creation assigned it (TXA_RUNS_ARENAS of them, so threads rarely share
 * one), and from the others (those whose lock is free) before its own grows. A thread
 * keeps runs of a few KiB that it frees in its heap's cache, for its own next requests of
 * as many units; past the cache's bounds it frees a run of its own arena under the lock,
 * and pushes one of another arena on that arena's pending list, for the lock's next
 * holder. An arena searches its chunks
 * in creation order (the oldest first keeps the newest ones empty, so they can be
 * returned), one after the other: an arena of many fragmented chunks makes its
 * allocations slower. While more than two of an arena's chunks are empty and committed,
 * the newest of them is decommitted (all but its map): the search takes the oldest first,
 * so a program that frees and allocates again at the edge of a chunk reuses a committed
 * one instead of decommitting and faulting the same chunk each time. txalloc_collect
 * decommits every empty chunk. */
#include <errno.h>
#include <string.h>

#include "alloc/internal.h"

#define UNIT_SHIFT 8
#define UNIT ((size_t)1 << UNIT_SHIFT)
#define UNITS (TXA_GRANULE >> UNIT_SHIFT)
#define PAGE ((size_t)4096)
#define COLOUR_UNIT 64
#define EMPTY_KEPT 2 /* fully free chunks kept committed */

/* TAG_PENDING: a live run freed by a thread of another arena, waiting on the arena's
 * pending list (remote frees, below). */
enum { TAG_LIVE = 1, TAG_FREE = 2, TAG_END = 4, TAG_PENDING = 8 };

/* Per unit; one entry holds all a run's state at its first unit, so a run touches the map
 * at two entries at most (its first, and its last while it is free). */
typedef struct unit_info {
  uint16_t len;                /* units of the run that starts (or, TAG_END, ends) here */
  uint16_t bin_next, bin_prev; /* free run: neighbours on the list of its length; 0 ends */
  uint8_t tag;
  uint8_t colour; /* live run: the object starts colour x 64 bytes in */
} unit_info;

typedef struct runs_chunk runs_chunk;
struct runs_chunk {
  runs_chunk *next;        /* every chunk, in creation order */
  uint32_t free_units;     /* units in free runs */
  bool decommitted;        /* units FIRST_UNIT.. were given back while the chunk was empty */
  uint8_t runs_cut;        /* runs cut so far, mod 256: picks their colours */
  uint8_t arena;           /* index in arenas, fixed */
  uint64_t nonempty_words; /* bit w: nonempty[w] != 0 */
  uint64_t nonempty[UNITS / 64];
  uint16_t bin_head[UNITS]; /* by length: first free run of that many units, or 0 */
  unit_info unit[UNITS];
};
/* The map fills the chunk's first pages; runs start on the page after it, so that the
 * units after the map can be decommitted as whole pages. */
#define FIRST_UNIT ((sizeof(runs_chunk) + PAGE - 1) / PAGE * (PAGE / UNIT))
_Static_assert(UNITS <= 65536 && UNITS <= 64 * 64, "indices fit 16 bits, lengths two levels");
_Static_assert(TXA_MEDIUM_MAX + 2 * UNIT <= (UNITS - FIRST_UNIT) * UNIT, "a run fits a chunk");

typedef struct runs_arena {
  _Alignas(TXA_CACHE_LINE) txa_lock lock; /* guards the arena and its chunks */
  runs_chunk *chunks, *tail;
  unsigned empty_committed; /* chunks all free and committed */
  /* Objects that threads of other arenas freed, linked through their first word: pushed
   * without the lock, taken whole by whoever next holds it (drain_pending). */
  _Alignas(TXA_CACHE_LINE) _Atomic(uintptr_t) pending;
} runs_arena;
static runs_arena arenas[TXA_RUNS_ARENAS];

/* Cache-index-aware placement (option l1_sets > 0): a unit is 4 lines, so runs of n units
 * cut in a row start 4n lines apart, which for even n reaches at most 8 of the 16 offsets
 * of a 4 KiB L1 page that are multiples of a unit. With placement on, a run takes an odd
 * number of units (all 16 offsets) and at least a line of slack, whose colour moves every
 * 16 runs, so that runs of any one size cover at least half the sets. Set by
 * txa_runs_init. */
static bool placement;

void txa_runs_init(void) { placement = txalloc_opt(TXALLOC_OPT_L1_SETS) > 0; }

static unsigned units_needed(size_t size) {
  if (!placement) return (unsigned)((size + UNIT - 1) >> UNIT_SHIFT);
  return (unsigned)((size + COLOUR_UNIT + UNIT - 1) >> UNIT_SHIFT) | 1;
}

/* Tags are read and written atomically (plain moves on x86-64): a remote free marks a
 * live run pending without the lock, while the lock holder may read that tag as the
 * neighbour of a run it frees. Everything else in the map is guarded by the lock. */
static inline unsigned tag_of(const runs_chunk *c, unsigned i) {
  return __atomic_load_n(&c->unit[i].tag, __ATOMIC_RELAXED);
}
static inline void tag_set(runs_chunk *c, unsigned i, uint8_t tag) {
  __atomic_store_n(&c->unit[i].tag, tag, __ATOMIC_RELAXED);
}

static inline runs_chunk *chunk_of(uintptr_t a) {
  return (runs_chunk *)(a & ~(uintptr_t)(TXA_GRANULE - 1));
}
static inline unsigned unit_of(uintptr_t a) {
  return (unsigned)((a & (TXA_GRANULE - 1)) >> UNIT_SHIFT);
}
static inline char *unit_addr(runs_chunk *c, unsigned i) {
  return (char *)c + ((size_t)i << UNIT_SHIFT);
}

/* ---- Free runs ---- */

static void bin_insert(runs_chunk *c, unsigned i, unsigned n) {
  unit_info *u = &c->unit[i];
  c->unit[i + n - 1].len = (uint16_t)n;
  tag_set(c, i + n - 1, TAG_END);
  u->len = (uint16_t)n;
  tag_set(c, i, (uint8_t)(TAG_FREE | (n == 1 ? TAG_END : 0)));
  u->bin_prev = 0;
  u->bin_next = c->bin_head[n];
  if (c->bin_head[n]) c->unit[c->bin_head[n]].bin_prev = (uint16_t)i;
  c->bin_head[n] = (uint16_t)i;
  c->nonempty[n / 64] |= (uint64_t)1 << (n % 64);
  c->nonempty_words |= (uint64_t)1 << (n / 64);
}

static void bin_remove(runs_chunk *c, unsigned i) {
  unit_info *u = &c->unit[i];
  unsigned n = u->len;
  if (u->bin_prev)
    c->unit[u->bin_prev].bin_next = u->bin_next;
  else
    c->bin_head[n] = u->bin_next;
  if (u->bin_next) c->unit[u->bin_next].bin_prev = u->bin_prev;
  if (!c->bin_head[n]) {
    c->nonempty[n / 64] &= ~((uint64_t)1 << (n % 64));
    if (!c->nonempty[n / 64]) c->nonempty_words &= ~((uint64_t)1 << (n / 64));
  }
  tag_set(c, i, 0);
  tag_set(c, i + n - 1, 0);
}

/* The length of the shortest free run of at least n units, or 0. */
static unsigned shortest_fit(const runs_chunk *c, unsigned n) {
  unsigned w = n / 64;
  uint64_t bits = c->nonempty[w] & (~(uint64_t)0 << (n % 64));
  if (bits) return w * 64 + (unsigned)__builtin_ctzll(bits);
  uint64_t words = w + 1 < 64 ? c->nonempty_words & (~(uint64_t)0 << (w + 1)) : 0;
  if (!words) return 0;
  w = (unsigned)__builtin_ctzll(words);
  return w * 64 + (unsigned)__builtin_ctzll(c->nonempty[w]);
}

/* Frees units [i, i+n), coalescing with the free runs on both sides. */
static void release_units(runs_chunk *c, unsigned i, unsigned n) {
  c->free_units += n;
  unsigned end = i + n;
  if (end < UNITS && (tag_of(c, end) & TAG_FREE)) {
    unsigned m = c->unit[end].len;
    bin_remove(c, end);
    n += m;
  }
  if (i > FIRST_UNIT && (tag_of(c, i - 1) & TAG_END)) {
    unsigned m = c->unit[i - 1].len;
    bin_remove(c, i - m);
    i -= m;
    n += m;
  }
  bin_insert(c, i, n);
}

/* ---- Chunks ---- */

static void chunk_init(runs_arena *a, runs_chunk *c) {
  c->arena = (uint8_t)(a - arenas);
  release_units(c, FIRST_UNIT, UNITS - FIRST_UNIT);
  if (a->tail)
    a->tail->next = c;
  else
    __atomic_store_n(&a->chunks, c, __ATOMIC_RELAXED); /* read unlocked: txa_runs_alloc */
  a->tail = c;
  a->empty_committed++;
}

static bool chunk_empty(const runs_chunk *c) { return c->free_units == UNITS - FIRST_UNIT; }

static void chunk_decommit(runs_arena *a, runs_chunk *c) {
  TXALLOC_ASSERT(chunk_empty(c) && !c->decommitted);
  txa_os_decommit(unit_addr(c, FIRST_UNIT), (UNITS - FIRST_UNIT) * UNIT);
  txa_committed_add(-(int64_t)((UNITS - FIRST_UNIT) * UNIT));
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

/* Takes a run of n units from c, which has one; returns its first unit. *zeroed: the run
 * reads as zero (c was decommitted). */
static unsigned take_run(runs_arena *a, runs_chunk *c, unsigned n, unsigned fit, bool *zeroed) {
  *zeroed = false;
  if (chunk_empty(c)) {
    if (c->decommitted) {
      txa_committed_add((int64_t)((UNITS - FIRST_UNIT) * UNIT));
      c->decommitted = false;
      *zeroed = true;
    } else {
      a->empty_committed--;
    }
  }
  unsigned i = c->bin_head[fit];
  bin_remove(c, i);
  if (fit > n) bin_insert(c, i + n, fit - n);
  c->free_units -= n;
  c->unit[i].len = (uint16_t)n;
  tag_set(c, i, TAG_LIVE);
  return i;
}

/* Frees the live run at unit i of c. pre: the lock of c's arena held. */
static void release_run(runs_arena *a, runs_chunk *c, unsigned i) {
  tag_set(c, i, 0);
  release_units(c, i, c->unit[i].len);
  if (chunk_empty(c) && ++a->empty_committed > EMPTY_KEPT) decommit_newest_empty(a);
}

/* Frees the runs that other arenas' threads left on a's pending list. pre: a's lock held. */
static void drain_pending(runs_arena *a) {
  if (!atomic_load_explicit(&a->pending, memory_order_relaxed)) return;
  uintptr_t p = atomic_exchange_explicit(&a->pending, 0, memory_order_acquire);
  while (p) {
    uintptr_t next = *(uintptr_t *)p;
    release_run(a, chunk_of(p), unit_of(p));
    p = next;
  }
}

/* ---- The operations ---- */

static size_t run_usable(const runs_chunk *c, unsigned i) {
  return ((size_t)c->unit[i].len << UNIT_SHIFT) - (size_t)c->unit[i].colour * COLOUR_UNIT;
}

/* Counts `bytes` of run objects allocated (k = 0) or freed (k = 1) in the calling
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

/* The first of a's chunks with a free run of n units, its fitting length in *fit; NULL
 * when none has one. pre: a's lock held. */
static runs_chunk *find_fit(runs_arena *a, unsigned n, unsigned *fit) {
  for (runs_chunk *c = a->chunks; c; c = c->next)
    if (c->free_units >= n && (*fit = shortest_fit(c, n)) != 0) return c;
  return NULL;
}

/* Cuts an object of `size` bytes (n units) from c, whose free run of length fit has room;
 * releases a's lock. */
static void *cut_object(runs_arena *a, runs_chunk *c, unsigned n, unsigned fit, size_t size,
                        bool zero, bool fresh) {
  bool zeroed = false;
  unsigned i = take_run(a, c, n, fit, &zeroed);
  zeroed = zeroed || fresh; /* carved memory reads as zero */
  /* The colour uses the run's slack within its first unit, so it never costs a unit; it
   * changes every 16 runs, after the run lengths have visited the unit offsets (above). */
  size_t colours = (((size_t)n << UNIT_SHIFT) - size) / COLOUR_UNIT + 1;
  if (colours > UNIT / COLOUR_UNIT) colours = UNIT / COLOUR_UNIT;
  c->unit[i].colour = (uint8_t)((c->runs_cut / 16) % colours);
  c->runs_cut++;
  size_t usable = run_usable(c, i);
  txa_lock_release(&a->lock);
  char *p = unit_addr(c, i) + (size_t)c->unit[i].colour * COLOUR_UNIT;
  if (zero && !zeroed) memset(p, 0, usable);
  count(0, usable);
  return p;
}

/* Reported after the lock is released: an error hook may allocate. */
static void report_bad(const void *p, const char *op, bool double_free) {
  if (double_free)
    txa_error(TXALLOC_ERROR_DOUBLE_FREE, p, "%s(%p): double free: the run is already free", op, p);
  else
    txa_error(TXALLOC_ERROR_INVALID_FREE, p,
              "%s(%p): invalid pointer: not the start of a live object of a run", op, p);
}

/* Marks the live run at unit i of c, whose object is p, pending (freed, not yet back in
 * the map); false, after reporting a second free, when it already was. */
static bool mark_pending(runs_chunk *c, unsigned i, const void *p, const char *op) {
  if (__atomic_fetch_or(&c->unit[i].tag, TAG_PENDING, __ATOMIC_RELAXED) & TAG_PENDING) {
    report_bad(p, op, true);
    return false;
  }
  return true;
}

/* ---- The heap's cache ----
 * A thread that frees a run of at most TXA_RUN_CACHE_UNITS units keeps it (within the
 * cache's bounds) for its own next request of as many units, so that a program that
 * frees and allocates objects of a few KiB takes no lock for them. A cached run stays
 * live in its chunk's map, tagged pending: a second free of it, or a realloc, is
 * reported as for a run on an arena's pending list. */

/* The head run of h's cache of n units, if its object holds `size` bytes; NULL if not. */
static void *cache_take(txa_heap *h, unsigned n, size_t size, bool zero) {
  char *p = h->run_cache[n];
  runs_chunk *c = chunk_of((uintptr_t)p);
  unsigned i = unit_of((uintptr_t)p);
  size_t usable = run_usable(c, i); /* its colour may leave less than another size needs */
  if (usable < size) return NULL;
  h->run_cache[n] = *(void **)p;
  h->run_cache_count[n]--;
  h->run_cache_bytes -= (uint32_t)(n << UNIT_SHIFT);
  tag_set(c, i, TAG_LIVE);
  if (zero) memset(p, 0, usable);
  count(0, usable);
  return p;
}

/* Keeps the live run at unit i of c, whose object is p, in h's cache if it has room;
 * false if not. Reports a second free (and returns true). */
static bool cache_put(txa_heap *h, runs_chunk *c, unsigned i, void *p, const char *op) {
  unsigned n = c->unit[i].len;
  uint32_t bytes = (uint32_t)(n << UNIT_SHIFT);
  if (n > TXA_RUN_CACHE_UNITS || h->run_cache_count[n] >= TXA_RUN_CACHE_DEPTH ||
      h->run_cache_bytes + bytes > TXA_RUN_CACHE_BYTES)
    return false;
  size_t usable = run_usable(c, i);
  if (!mark_pending(c, i, p, op)) return true;
  *(void **)p = h->run_cache[n];
  h->run_cache[n] = p;
  h->run_cache_count[n]++;
  h->run_cache_bytes += bytes;
  count(1, usable);
  return true;
}

void txa_runs_cache_flush(txa_heap *h) {
  for (unsigned n = 0; n <= TXA_RUN_CACHE_UNITS; n++) {
    while (h->run_cache[n]) {
      char *p = h->run_cache[n];
      h->run_cache[n] = *(void **)p;
      runs_chunk *c = chunk_of((uintptr_t)p);
      runs_arena *a = &arenas[c->arena];
      txa_lock_acquire(&a->lock);
      release_run(a, c, unit_of((uintptr_t)p));
      drain_pending(a);
      txa_lock_release(&a->lock);
    }
    h->run_cache_count[n] = 0;
  }
  h->run_cache_bytes = 0;
}

void *txa_runs_alloc(size_t size, bool zero) {
  unsigned n = units_needed(size);
  /* A thread gets its heap here too, so that its arena (and counts) are its own. */
  txa_heap *h = txa_tls_heap;
  if (!h && !txa_thread_is_exiting()) h = txa_heap_get_slow();
  if (h && n <= TXA_RUN_CACHE_UNITS && h->run_cache[n]) {
    void *p = cache_take(h, n, size, zero);
    if (p) return p;
  }
  unsigned own = h ? h->runs_arena : 0;
  runs_arena *a = &arenas[own];
  unsigned fit = 0;
  txa_lock_acquire(&a->lock);
  drain_pending(a);
  runs_chunk *c = find_fit(a, n, &fit);
  if (c) return cut_object(a, c, n, fit, size, zero, false);
  /* Frees return runs to their chunk's arena, whichever thread frees: memory that other
   * threads freed into the arena of an idle one is reused here before the own arena
   * grows. Arenas that are busy are passed over. */
  for (unsigned k = 1; k < TXA_RUNS_ARENAS; k++) {
    runs_arena *other = &arenas[(own + k) % TXA_RUNS_ARENAS];
    if (!__atomic_load_n(&other->chunks, __ATOMIC_RELAXED) || !txa_lock_try(&other->lock)) continue;
    drain_pending(other);
    runs_chunk *oc = find_fit(other, n, &fit);
    if (oc) {
      txa_lock_release(&a->lock);
      return cut_object(other, oc, n, fit, size, zero, false);
    }
    txa_lock_release(&other->lock);
  }
  c = txa_region_chunk(TXA_KIND_RUNS);
  if (!c) {
    txa_lock_release(&a->lock);
    errno = ENOMEM;
    return NULL;
  }
  chunk_init(a, c);
  return cut_object(a, c, n, shortest_fit(c, n), size, zero, true);
}

/* The first unit of the live run whose object starts at p, or 0 (p is not one).
 * pre: the lock of p's arena held, or p is live (a live run's entry changes only when
 * that run is freed or resized), p in a chunk of kind RUNS. */
static unsigned live_start(const void *p) {
  uintptr_t a = (uintptr_t)p;
  const runs_chunk *c = chunk_of(a);
  unsigned i = unit_of(a);
  if (i < FIRST_UNIT || tag_of(c, i) != TAG_LIVE) return 0;
  return (a & (UNIT - 1)) == (size_t)c->unit[i].colour * COLOUR_UNIT ? i : 0;
}

/* Whether p, which starts no live run object, starts the object of a free run: a double
 * free (else an invalid pointer). pre: the lock of p's arena held. */
static bool starts_free_run(const void *p) {
  uintptr_t a = (uintptr_t)p;
  const runs_chunk *c = chunk_of(a);
  unsigned i = unit_of(a);
  return i >= FIRST_UNIT && (tag_of(c, i) & (TAG_FREE | TAG_PENDING)) &&
         (a & (UNIT - 1)) == (size_t)c->unit[i].colour * COLOUR_UNIT;
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
  runs_arena *a = &arenas[c->arena];
  txa_heap *h = txa_tls_heap;
  unsigned i = live_start(p);
  if (i && h && cache_put(h, c, i, p, op)) return;
  /* A thread of another arena does not take this one's lock (a producer-consumer would
   * fight its owner for it on every object): it marks the run pending and pushes it for
   * the lock's next holder. The mark catches a second free meanwhile. */
  if (i && h && h->runs_arena != c->arena) {
    size_t usable = run_usable(c, i);
    if (!mark_pending(c, i, p, op)) return;
    uintptr_t head = atomic_load_explicit(&a->pending, memory_order_relaxed);
    do {
      *(uintptr_t *)p = head;
    } while (!atomic_compare_exchange_weak_explicit(&a->pending, &head, (uintptr_t)p,
                                                    memory_order_release, memory_order_relaxed));
    count(1, usable);
    return;
  }
  txa_lock_acquire(&a->lock);
  i = live_start(p);
  if (!i) {
    bool double_free = starts_free_run(p);
    txa_lock_release(&a->lock);
    report_bad(p, op, double_free);
    return;
  }
  size_t usable = run_usable(c, i);
  release_run(a, c, i);
  drain_pending(a);
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

/* The units a run starting at unit i needs for `size` bytes at its colour. */
static unsigned units_for(const runs_chunk *c, unsigned i, size_t size) {
  return (unsigned)((size + (size_t)c->unit[i].colour * COLOUR_UNIT + UNIT - 1) >> UNIT_SHIFT);
}

/* Buffers grown by small steps (a string builder's realloc by a few bytes at a time):
 * a growth in place of at most an eighth of the run's units takes a quarter more than the
 * run had, as far as the free run after it reaches, and a request from a fifth below the
 * run's units up to all of them keeps the run as it is, without the lock. Such a buffer
 * then takes the arena lock once per quarter of its length instead of once per unit, and
 * keeps its headroom. Larger growths take what they need. */
#define STEP_DIVISOR 8     /* a growth of at most n / 8 units is a small step */
#define HEADROOM_DIVISOR 4 /* a small step grows a run of n units to n + n / 4 */
#define KEEP_DIVISOR 5     /* a run of n units serves requests of n - n / 5 .. n units */

void *txa_runs_resize(void *p, size_t size, size_t *usable) {
  runs_chunk *c = chunk_of((uintptr_t)p);
  unsigned live = live_start(p);
  if (live && size > TXA_RUNS_MIN) {
    unsigned have = c->unit[live].len, want = units_for(c, live, size);
    if (want <= have && want >= have - have / KEEP_DIVISOR) {
      *usable = run_usable(c, live);
      return p;
    }
  }
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
    unsigned n = c->unit[i].len;
    unsigned m = units_for(c, i, size);
    unsigned end = i + n;
    if (m < n) {
      c->unit[i].len = (uint16_t)m;
      release_units(c, i + m, n - m);
      result = p;
    } else if (m == n) {
      result = p;
    } else if (end < UNITS && (tag_of(c, end) & TAG_FREE) && c->unit[end].len >= m - n) {
      unsigned after = c->unit[end].len;
      if (m - n <= n / STEP_DIVISOR) {
        unsigned roomy = n + n / HEADROOM_DIVISOR, most = units_for(c, i, TXA_MEDIUM_MAX);
        if (roomy > most) roomy = most;
        if (roomy > n + after) roomy = n + after;
        if (roomy > m) m = roomy;
      }
      bin_remove(c, end);
      if (after > m - n) bin_insert(c, i + m, after - (m - n));
      c->free_units -= m - n;
      c->unit[i].len = (uint16_t)m;
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
    drain_pending(a);
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
