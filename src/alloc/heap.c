/* Thread heaps: per-thread bins of blocks (McRT §3, §3.3).
 *
 * A heap is reached through one initial-exec TLS pointer. Everything in it, and every
 * field of line 0 of the blocks it owns, is touched by the owning thread only, so the
 * fast paths (alloc.c) use no lock and no atomic read-modify-write.
 *
 * Bin policy (§3.3): a bin's blocks form a ring with a distinguished head. When the
 * current block has no free object, malloc first repatriates the current block's public
 * list (one atomic exchange), then walks the ring, repatriating each block's public list
 * and counting the free objects it finds on arrival. Passing the head ends a traversal:
 * if fewer than bin_grow_percent % of the objects seen were free, the next refill adds a
 * block instead of searching. A search inspects at most bin_search blocks before adding a
 * block, which bounds the time of one malloc. A block that becomes empty by a local free
 * (and is not the current block) goes to the heap's cache of empty blocks (empty_cache.c) or
 * to the block store.
 *
 * Colour (no ORT aliasing between threads): a word-based STM maps address a to lock
 * (a >> shift) mod 2^n, which repeats every P = 2^(shift + n) bytes (32 MiB by default, up
 * to 2^36 for 2^24 locks of 4 KiB). Blocks are 16 KiB aligned, so for P >= 16 KiB two
 * blocks whose addresses are congruent modulo P (always, for P = 16 KiB; every P apart
 * otherwise, and a long-running heap spans many P) map object i of one onto the locks of
 * object i of the other. Bumping both from their first object would make two threads that
 * allocate at the same pace take the same locks in lockstep (glibc's 64 MiB-aligned
 * arenas do exactly that, Baldassin et al. §5.2). So each heap has a colour c in [0, 1)
 * and bumps a block it initialises from object floor(c * capacity), wrapping round to
 * object 0 after the last one. The colours are the van der Corput sequence over heap
 * acquisitions (0, 1/2, 1/4, 3/4, 1/8, ...): the heaps of two threads that start one
 * after the other are half a block apart, and any two of the first 2^k are at least
 * 2^-k of a block apart. Then the k-th objects two threads take from any two of their
 * blocks (congruent or not) lie D apart modulo P, with D an odd multiple of the colour
 * distance times the block span, give or take one object: at 1/2 apart, D is about 8 KiB
 * modulo every P >= 16 KiB, more than a 4 KiB stripe plus an object, so they never share
 * a lock (tests/alloc/test_ort_colour.c checks every geometry with P >= 16 KiB). Below 16
 * KiB an ORT is smaller than a block and aliasing within it cannot be avoided; medium
 * spans (1 MiB) get the same argument for P >= 1 MiB. A single-threaded program keeps
 * colour 0: the classic layout.
 *
 * The colour costs memory: a block with few objects touches its header's page and the
 * page where its bump starts (prodcons-batch at 1 thread, whose worker has colour 1/2:
 * 320 KiB of small blocks instead of 196 KiB). So by default (option heap_colour = 2) it is
 * off until a TM runtime reports an ORT whose period is at least a block
 * (txa_colour_for_period, called by txmem); blocks initialised after that use it.
 *
 * Lifecycle: the heap is created on a thread's first call, registered with a pthread key
 * whose destructor abandons it at thread exit: empty blocks go to the store, part-used
 * ones to the abandoned stacks (owner NULL), where remote frees keep landing on their
 * public lists until another thread adopts them. The heap structure is then recycled. */
#include <errno.h>
#include <string.h>

#include "alloc/internal.h"
#include "util/message.h"

txa_block txa_empty_block; /* all zero: no free object, bump == bump_end == NULL */
__thread txa_heap *txa_tls_heap;
/* Set once the thread's key destructor ran: the thread is exiting. */
static __thread bool tls_exiting;

txa_lock txa_heap_lock;
static txa_heap *all_heaps; /* written under txa_heap_lock; txa_heap_registry reads it */
static txa_heap *heap_pool; /* guarded by txa_heap_lock */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

/* The van der Corput sequence: i with its 32 bits reversed, as a fraction of 2^32. */
static uint32_t colour_of(uint32_t i) {
  i = ((i >> 1) & 0x55555555u) | ((i & 0x55555555u) << 1);
  i = ((i >> 2) & 0x33333333u) | ((i & 0x33333333u) << 2);
  i = ((i >> 4) & 0x0f0f0f0fu) | ((i & 0x0f0f0f0fu) << 4);
  i = ((i >> 8) & 0x00ff00ffu) | ((i & 0x00ff00ffu) << 8);
  return (i >> 16) | (i << 16);
}

void txa_colour_for_period(uint64_t period) {
  txa_init();
  if (period >= TXA_BLOCK_SIZE && txalloc_opt(TXALLOC_OPT_HEAP_COLOUR) == 2)
    atomic_store_explicit(&txa_g.heap_colour, true, memory_order_relaxed);
}

bool txa_heap_colour(void) {
  return atomic_load_explicit(&txa_g.heap_colour, memory_order_relaxed);
}

void txa_block_init(txa_block *b, txa_heap *h, unsigned c, bool zero) {
  const txa_class_info *ci = &txa_classes[c];
  /* A fresh key for every block lifetime (process-wide counter), so that links left in a
   * reused block's bump area by an earlier lifetime never decode as valid links. */
  static _Atomic(uint64_t) key_counter;
  uint64_t n = atomic_fetch_add_explicit(&key_counter, 1, memory_order_relaxed);
  uintptr_t key = mix64(txa_g.secret ^ mix64((uintptr_t)b + n * UINT64_C(0x9e3779b97f4a7c15))) |
                  (UINT64_C(1) << 63); /* encoded NULL is never an address */
  /* Consecutive blocks of a bin take consecutive colours (size_class.c), all within the
   * class's unused tail: the capacity stays the class's. */
  uint32_t colour = ci->colour_step * (h->bins[c].colour++ % ci->colours);
  uint32_t first = ci->first_offset + colour;
  b->span_kind = (uint8_t)txa_class_kind(c);
  b->key_shared = key;
  b->inverse = ci->inverse;
  b->first_offset = first;
  b->size = ci->size;
  b->class_shared = (uint16_t)c;
  b->capacity = ci->capacity;
  txa_block_set_start_test(b);
  b->free = NULL;
  /* The heap's colour: bump [start, end) first, then [first object, start). */
  uint32_t heap_colour = txa_heap_colour() ? h->colour : 0;
  uint32_t start = (uint32_t)(((uint64_t)ci->capacity * heap_colour) >> 32);
  b->wrap_objects = start;
  b->bump = (char *)b + first + (size_t)start * ci->size;
  b->bump_end = (char *)b + first + (size_t)ci->capacity * ci->size;
  b->key = key;
  b->next = b->prev = NULL;
  txa_used_set(b, 0);
  b->obj_size = ci->size;
  b->class_id = (uint16_t)c;
  b->zero_bump = zero;
  TXALLOC_ASSERT(b->capacity > 0 && b->bump_end <= (char *)b + txa_span_size(b->span_kind));
  atomic_store_explicit(&b->current_hint, 0, memory_order_relaxed);
  atomic_store_explicit(&b->public_free, 0, memory_order_relaxed);
  atomic_store_explicit(&b->owner, h, memory_order_relaxed);
}

/* The block's second bump area, when the first is used up: the objects its colour
 * skipped. */
static bool block_wrap(txa_block *b) {
  if (b->bump != b->bump_end || b->wrap_objects == 0) return false;
  b->bump = (char *)b + b->first_offset;
  b->bump_end = b->bump + (size_t)b->wrap_objects * b->obj_size;
  b->wrap_objects = 0;
  return true;
}

/* txa_block_take_from for the slow paths, which also open the second bump area. */
static void *block_take_slow(txa_block *b) {
  void *p = txa_block_take_from(b, false);
  if (!p && block_wrap(b)) p = txa_block_take_from(b, false);
  return p;
}

bool txa_block_never_used(const txa_block *b, const void *p) {
  const char *o = p, *first = (const char *)b + b->first_offset;
  return (o >= b->bump && o < b->bump_end) || o < first + (size_t)b->wrap_objects * b->obj_size;
}

uint32_t txa_block_repatriate(txa_block *b) {
  if (atomic_load_explicit(&b->public_free, memory_order_relaxed) == 0) return 0;
  uint64_t w = atomic_exchange_explicit(&b->public_free, 0, memory_order_acquire);
  void *list = txa_public_head(w);
  uint32_t n = txa_public_count(w);
  if (!list) return 0;
  if (b->free) { /* append the private list after the public one's tail */
    uintptr_t key = b->key, lo = (uintptr_t)b, span = txa_span_size(b->span_kind);
    void *tail = list;
    for (uint32_t i = 1;; i++) {
      void *next = txa_decode(*(uintptr_t *)tail, key);
      if (!next) break;
      if ((uintptr_t)next - lo >= span || i >= n) {
        txa_error(TXALLOC_ERROR_CORRUPTION, tail,
                  "heap corruption: object %p on the public free list of block %p has a "
                  "bad link (written after free?)",
                  tail, (void *)b);
        break;
      }
      tail = next;
    }
    *(uintptr_t *)tail = txa_encode(b->free, key);
  }
  b->free = list;
  uint32_t used = txa_used(b);
  txa_used_set(b, used - (n < used ? n : used));
  return n;
}

/* ---- The ring of a bin (changed only under the heap's ring lock) ---- */
static void set_hint(txa_block *b, bool current) {
  if (b != &txa_empty_block) atomic_store_explicit(&b->current_hint, current, memory_order_relaxed);
}

static void bin_set_current(txa_heap *h, unsigned c, txa_block *b) {
  set_hint(h->current[c], false);
  h->current[c] = b;
  set_hint(b, true);
}

static void bin_insert(txa_heap *h, unsigned c, txa_block *b) {
  txa_bin *bn = &h->bins[c];
  if (!bn->head) {
    b->next = b->prev = b;
    bn->head = b;
  } else {
    txa_block *x = h->current[c] != &txa_empty_block ? h->current[c] : bn->head;
    b->next = x->next;
    b->prev = x;
    x->next->prev = b;
    x->next = b;
  }
  bn->blocks++;
}

static void bin_remove(txa_heap *h, unsigned c, txa_block *b) {
  txa_bin *bn = &h->bins[c];
  TXALLOC_ASSERT(bn->blocks > 0 && b != &txa_empty_block);
  if (b->next == b) {
    bn->head = NULL;
    bin_set_current(h, c, &txa_empty_block);
  } else {
    b->prev->next = b->next;
    b->next->prev = b->prev;
    if (bn->head == b) bn->head = b->next;
    if (h->current[c] == b) bin_set_current(h, c, b->next);
  }
  b->next = b->prev = NULL;
  bn->blocks--;
}

/* pre: ring lock held, b empty (used == 0 and nothing on its public list) and owned by h.
 * `keep`: the owner's own free emptied it, so a small block may stay in the heap's empty
 * blocks while there is room; else it goes to the store. */
static void release_block_locked(txa_heap *h, txa_block *b, bool keep) {
  TXALLOC_ASSERT(atomic_load_explicit(&b->owner, memory_order_relaxed) == h);
  bin_remove(h, b->class_id, b);
  atomic_store_explicit(&b->owner, NULL, memory_order_relaxed);
  atomic_fetch_sub_explicit(&txa_blocks_in_use, 1, memory_order_relaxed);
  if (keep && b->span_kind == TXA_KIND_SMALL && txa_empty_cache_put(h, b)) return;
  txa_store_push_empty(b);
}

/* ---- Release of blocks that other threads' frees emptied ----
 *
 * A block whose objects were all freed by other threads still counts them as used until its
 * owner repatriates its public list, which an idle owner never does: its memory would stay
 * committed for as long as the owner lives. So the remote free that brings the public count
 * up to `used` (every object out of the block is on its public list) offers the block to the
 * owner's heap: it puts it in one of the heap's release slots and tries the heap's ring
 * lock. Whoever holds the ring lock (that thread, or the owner on a slow path, which drains
 * the slots before it lets go) checks each offered block again and, if it is still not the
 * current block of its bin and its public list still holds exactly `used` objects, empties
 * the public list with one CAS, takes the block out of the ring and returns it to the store.
 *
 * Why the owner cannot interfere without the lock: its fast paths allocate only from the
 * current block of a bin, which the release skips, and free only live objects, of which the
 * block has none (public count == used; used only decreases and the public count only
 * increases while the lock is held, so equality read in either order holds at some instant).
 * A block alone in its ring is always its bin's current one. The owner's last writes to the
 * block are ordered before the release by used's release store and the acquire load here.
 * Offers are hints: a slot may hold a block that has since changed hands; the checks under
 * the lock (owner, current, counts) decide. */
static void release_if_empty(txa_heap *h, txa_block *b) {
  if (atomic_load_explicit(&b->owner, memory_order_relaxed) != h) return;
  if (b == h->current[b->class_id] || b->next == b) return;
  uint64_t w = atomic_load_explicit(&b->public_free, memory_order_acquire);
  uint32_t used = txa_used_acquire(b);
  /* used == 0: the owner is releasing it itself (txa_owner_free). */
  if (used == 0 || txa_public_count(w) != used) return;
  if (!atomic_compare_exchange_strong_explicit(&b->public_free, &w, 0, memory_order_acq_rel,
                                               memory_order_relaxed))
    return;
  txa_used_set(b, 0);
  TXA_GCOUNT(blocks_released_remote, 1);
  release_block_locked(h, b, false);
}

/* pre: ring lock held. */
static void drain_releases(txa_heap *h) {
  if (!atomic_exchange_explicit(&h->release_pending, 0, memory_order_seq_cst)) return;
  for (unsigned i = 0; i < TXA_RELEASE_SLOTS; i++) {
    txa_block *b = atomic_exchange_explicit(&h->release_slots[i], NULL, memory_order_acquire);
    if (b) release_if_empty(h, b);
  }
  if (!atomic_exchange_explicit(&h->release_scan, 0, memory_order_acquire)) return;
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    txa_bin *bn = &h->bins[c];
    txa_block *b = bn->head;
    for (uint32_t i = 0, n = bn->blocks; b && i < n; i++) {
      txa_block *next = b->next;
      release_if_empty(h, b);
      b = next;
    }
  }
}

static void ring_lock(txa_heap *h) { txa_lock_acquire(&h->ring_lock); }

/* Lets go of the ring lock, then drains offers that arrived while it was held: an offering
 * thread publishes its offer before it tries the lock, and this thread lets go before it
 * looks for offers (both sequentially consistent), so one of the two sees the other. */
static void ring_unlock(txa_heap *h) {
  for (;;) {
    drain_releases(h);
    atomic_store_explicit(&h->ring_lock.held, 0, memory_order_seq_cst);
    if (!atomic_load_explicit(&h->release_pending, memory_order_seq_cst) ||
        !txa_lock_try(&h->ring_lock))
      return;
  }
}

void txa_heap_offer_release(txa_block *b) {
  txa_heap *h = atomic_load_explicit(&b->owner, memory_order_acquire);
  if (!h) return;
  unsigned i = 0;
  for (; i < TXA_RELEASE_SLOTS; i++) {
    txa_block *expected = NULL;
    if (atomic_load_explicit(&h->release_slots[i], memory_order_relaxed) == NULL &&
        atomic_compare_exchange_strong_explicit(&h->release_slots[i], &expected, b,
                                                memory_order_release, memory_order_relaxed))
      break;
  }
  if (i == TXA_RELEASE_SLOTS) atomic_store_explicit(&h->release_scan, 1, memory_order_release);
  atomic_store_explicit(&h->release_pending, 1, memory_order_seq_cst);
  if (txa_lock_try(&h->ring_lock)) ring_unlock(h);
}

void txa_heap_release_block(txa_heap *h, txa_block *b) {
  ring_lock(h);
  /* Only the owner frees its live objects, and the block has none: still empty. */
  release_block_locked(h, b, true);
  ring_unlock(h);
}

/* A block for class c owned by h and already in its bin: an abandoned one, else an empty
 * one from the store, else fresh memory. NULL when out of memory. */
static txa_block *acquire_block(txa_heap *h, unsigned c) {
  for (int tries = 0; tries < 4; tries++) {
    txa_block *b = txa_store_pop_abandoned(c);
    if (!b) break;
    TXALLOC_ASSERT(atomic_load_explicit(&b->owner, memory_order_relaxed) == NULL);
    atomic_store_explicit(&b->owner, h, memory_order_relaxed);
    txa_block_repatriate(b);
    TXA_COUNT(h, blocks_adopted, 1);
    atomic_fetch_add_explicit(&txa_blocks_in_use, 1, memory_order_relaxed);
    bin_insert(h, c, b);
    if (txa_used(b) < b->capacity) return b;
  }
  unsigned kind = txa_class_kind(c);
  bool small = kind == TXA_KIND_SMALL, zero = false;
  txa_block *b = small ? txa_empty_cache_take(h) : NULL;
  /* A refill is also the moment to age the empty blocks of the store and of idle heaps'
   * caches, so that memory other threads stopped using is decommitted while this one runs.
   * When its own cache serves it, one refill in 16 looks at the clock. */
  if (!b || (++h->refills & 15) == 0) txa_store_maybe_purge();
  if (!b) b = txa_store_pop_committed(kind);
  /* Memory another heap keeps unused comes before memory to commit. */
  if (!b && small) b = txa_empty_cache_steal(h);
  if (!b) {
    b = txa_store_pop_clean(kind);
    if (!b) b = txa_region_fresh_block(kind);
    if (!b) return NULL;
    zero = true;
  }
  txa_block_init(b, h, c, zero);
  atomic_fetch_add_explicit(&txa_blocks_in_use, 1, memory_order_relaxed);
  bin_insert(h, c, b);
  return b;
}

/* Traversal bookkeeping when the search passes the bin head (§3.3). */
static void end_traversal(txa_bin *bn) {
  if (bn->cap_seen) bn->grow = bn->free_seen * 100 < bn->cap_seen * txa_g.bin_grow_percent;
  bn->visited = 0;
  bn->free_seen = bn->cap_seen = 0;
}

/* pre: ring lock held. */
static void *alloc_slow_locked(txa_heap *h, unsigned c) {
  txa_bin *bn = &h->bins[c];
  txa_block *cur = h->current[c];
  void *p;
  if (cur != &txa_empty_block) {
    if (txa_block_repatriate(cur)) TXA_COUNT(h, public_repatriations, 1);
    if ((p = block_take_slow(cur)) != NULL) return p;
    if (bn->skip && !bn->grow) {
      bn->skip--;
    } else if (!bn->grow) {
      txa_block *x = cur->next, *last = cur;
      for (uint32_t i = 0; i < txa_g.bin_search && x != cur; i++) {
        if (x == bn->head) end_traversal(bn);
        /* Only blocks without private objects: repatriating then needs no list walk. */
        if (!x->free && txa_block_repatriate(x)) TXA_COUNT(h, public_repatriations, 1);
        uint32_t avail = x->capacity - txa_used(x);
        bn->visited++;
        bn->free_seen += avail;
        bn->cap_seen += x->capacity;
        if (avail) {
          bn->backoff = 0;
          bin_set_current(h, c, x);
          return block_take_slow(x);
        }
        last = x;
        x = x->next;
      }
      /* Every header a search reads is a likely cache miss: a bin that keeps adding
       * blocks to a ring of full ones (a growing heap) would pay bin_search misses per
       * block. So after a search that found only full blocks, the next refills add blocks
       * without searching: twice as many as after the previous failed search, up to a
       * sixteenth of the ring, which bounds the blocks added past free objects. */
      uint32_t doubled = bn->backoff ? 2 * bn->backoff : 1, most = bn->blocks / 16;
      bn->backoff = bn->skip = doubled < most ? doubled : most;
      /* The new block goes after the last block inspected, so that the next search
       * starts with blocks this one did not look at. */
      bin_set_current(h, c, last);
    }
  }
  bn->grow = false;
  txa_block *b = acquire_block(h, c);
  if (!b) {
    errno = ENOMEM;
    return NULL;
  }
  bin_set_current(h, c, b);
  p = block_take_slow(b);
  if (!p) { /* an adopted block that is still full: try once more with a fresh one */
    b = acquire_block(h, c);
    if (!b) {
      errno = ENOMEM;
      return NULL;
    }
    bin_set_current(h, c, b);
    p = block_take_slow(b);
  }
  return p;
}

void *txa_heap_alloc_slow(txa_heap *h, unsigned c) {
  ring_lock(h);
  void *p = alloc_slow_locked(h, c);
  int saved = errno;
  ring_unlock(h);
  errno = saved;
  return p;
}

/* ---- Heap lifecycle ---- */
static void heap_reset(txa_heap *h) {
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    memset(&h->bins[c], 0, sizeof h->bins[c]);
    h->current[c] = &txa_empty_block;
  }
  txa_foreign_reset(h);
}

void txa_heap_tls_destructor(void *arg) {
  txa_heap *h = arg;
  tls_exiting = true;
  if (h && h == txa_tls_heap) txa_heap_abandon(h);
}

txa_heap *txa_heap_get_slow(void) {
  txa_init();
  txa_heap *h = txa_tls_heap;
  if (h) return h;
  txa_lock_acquire(&txa_heap_lock);
  h = heap_pool;
  if (h) heap_pool = h->pool_next;
  txa_lock_release(&txa_heap_lock);
  if (!h) {
    h = txa_region_meta(sizeof *h);
    if (!h) return NULL;
    txa_lock_acquire(&txa_heap_lock);
    h->all_next = all_heaps;
    __atomic_store_n(&all_heaps, h, __ATOMIC_RELEASE); /* txa_heap_registry reads it */
    static uint32_t heaps_made;                        /* under txa_heap_lock */
    h->runs_arena = heaps_made++ % TXA_RUNS_ARENAS;
    txa_lock_release(&txa_heap_lock);
  }
  ring_lock(h); /* a stale release offer may still be drained on it */
  heap_reset(h);
  ring_unlock(h);
  static _Atomic(uint32_t) acquisitions;
  h->colour = colour_of(atomic_fetch_add_explicit(&acquisitions, 1, memory_order_relaxed));
  h->pool_next = NULL;
  __atomic_store_n(&h->in_use, true, __ATOMIC_RELAXED);
  /* Publish before pthread_setspecific, which may call malloc (glibc allocates the
   * second-level key table): that call then finds this heap. */
  txa_tls_heap = h;
  pthread_setspecific(txa_g.tls_key, h);
  return h;
}

bool txa_thread_is_exiting(void) { return tls_exiting; }

void txa_heap_abandon(txa_heap *h) {
  int64_t released = 0;
  /* First, so that objects of blocks this heap owns reach their public lists, which the
   * loop below takes back. */
  txa_foreign_flush(h);
  txa_runs_cache_flush(h);
  ring_lock(h);
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    txa_bin *bn = &h->bins[c];
    txa_block *b = bn->head;
    for (uint32_t i = 0; b && i < bn->blocks; i++) {
      txa_block *next = b->next;
      txa_block_repatriate(b);
      b->next = b->prev = NULL;
      atomic_store_explicit(&b->owner, NULL, memory_order_relaxed);
      released++;
      if (txa_used(b) == 0) {
        txa_store_push_empty(b);
      } else {
        TXA_COUNT(h, blocks_abandoned, 1);
        txa_store_push_abandoned(b);
      }
      b = next;
    }
  }
  atomic_fetch_sub_explicit(&txa_blocks_in_use, released, memory_order_relaxed);
  txa_empty_cache_flush(h);
  heap_reset(h);
  ring_unlock(h);
  if (txa_tls_heap == h) txa_tls_heap = NULL;
  txa_lock_acquire(&txa_heap_lock);
  txa_stats_fold_heap(h);
  __atomic_store_n(&h->in_use, false, __ATOMIC_RELAXED);
  h->pool_next = heap_pool;
  heap_pool = h;
  txa_lock_release(&txa_heap_lock);
}

void txalloc_thread_exit(void) {
  txa_heap *h = txa_tls_heap;
  if (!h) return;
  pthread_setspecific(txa_g.tls_key, NULL);
  txa_heap_abandon(h);
}

txa_heap *txa_heap_registry(void) { return __atomic_load_n(&all_heaps, __ATOMIC_ACQUIRE); }

/* Returns the calling thread's empty non-current blocks to the store (collect). */
void txa_heap_trim(txa_heap *h) {
  ring_lock(h);
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    txa_bin *bn = &h->bins[c];
    txa_block *b = bn->head;
    uint32_t n = bn->blocks;
    for (uint32_t i = 0; b && i < n; i++) {
      txa_block *next = b->next;
      txa_block_repatriate(b);
      if (txa_used(b) == 0 && b != h->current[c]) release_block_locked(h, b, false);
      b = next;
    }
  }
  txa_empty_cache_flush(h);
  ring_unlock(h);
}

void txa_heap_lock_rings(void) {
  for (txa_heap *h = all_heaps; h; h = h->all_next) {
    ring_lock(h);
    txa_lock_acquire(&h->empty_lock);
  }
}

void txa_heap_unlock_rings(void) {
  for (txa_heap *h = all_heaps; h; h = h->all_next) {
    txa_lock_release(&h->empty_lock);
    txa_lock_release(&h->ring_lock);
  }
}
