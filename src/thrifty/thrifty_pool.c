/* The threads' private pools: allocation and free without a lock or an atomic read-modify-
 * write on the pool (the pressure counters are relaxed atomic adds, thrifty_stats.c), and
 * the refill (Carle et al. §3.3): the rest of the pool goes back to the heap and a pool of
 * max(pool size, 2 x request) comes out. A thread's first allocation carves its first
 * pool; its exit gives the pool back. A free puts the block in the freeing thread's pool,
 * as in the paper: no synchronisation, at the price that a thread that frees more than it
 * allocates gathers free memory. With TXALLOC_THRIFTY_RETURN=owner a remote free pushes
 * the block onto the return stack of the pool that served it (thrifty_returns.c), which
 * its owner drains into its list on its next allocation or refill, and at its exit
 * (docs/thrifty.md compares the two). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "thrifty/thrifty.h"
#include "thrifty/thrifty_internal.h"
#include "thrifty/thrifty_options.h"
#include "util/message.h"

typedef struct thrifty_pool {
  thrifty_list list;
  size_t size;   /* bytes of the pool when it was last filled (the refill's "current size") */
  uint32_t id;   /* serial * THRIFTY_RECORDS + slot, never 0; 0: not set up */
  uint32_t slot; /* its return stack (owner variant); 0: none */
} thrifty_pool;

enum { RETURN_FREER, RETURN_OWNER };

static __thread thrifty_pool my_pool __attribute__((tls_model("initial-exec")));
static _Atomic uint32_t pool_ids;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static size_t first_pool_size;
static int return_to; /* RETURN_FREER or RETURN_OWNER, read once */

static void exit_destructor(void *arg) {
  (void)arg;
  thrifty_thread_exit();
}

static void exit_key_create(void) {
  size_t bytes = (size_t)txalloc_opt(TXALLOC_OPT_THRIFTY_POOL_BYTES);
  first_pool_size = bytes ? bytes : (size_t)txalloc_opt(TXALLOC_OPT_THRIFTY_POOL_KB) << 10;
  first_pool_size = (first_pool_size + THRIFTY_ALIGN - 1) & ~(THRIFTY_ALIGN - 1);
  if (first_pool_size < THRIFTY_MIN_BLOCK) first_pool_size = THRIFTY_MIN_BLOCK;
  return_to = (int)txalloc_opt(TXALLOC_OPT_THRIFTY_RETURN);
  if (pthread_key_create(&exit_key, exit_destructor) != 0)
    txalloc_message("thrifty: no thread-exit key; threads must call thrifty_thread_exit");
}

/* The pool's first fill: no lock until the thread allocates. */
static __attribute__((noinline)) bool pool_setup(thrifty_pool *p) {
  if (!thrifty_heap_init()) return false;
  pthread_once(&exit_key_once, exit_key_create);
  /* The serial wraps (only the remote_frees count could then miss a free); the slot
   * (low bits) is what a remote free returns the block by. */
  uint32_t serial = atomic_fetch_add_explicit(&pool_ids, 1, memory_order_relaxed);
  p->slot = return_to == RETURN_OWNER ? thrifty_returns_claim() : 0;
  p->id = (serial % (UINT32_MAX / THRIFTY_RECORDS) + 1) * THRIFTY_RECORDS + p->slot;
  p->size = 0;
  pthread_setspecific(exit_key, p);
  return true;
}

/* Blocks other threads gave back to this pool (owner-returns), into its list. */
static inline void collect_returns(thrifty_pool *p) {
  if (p->slot && thrifty_returns_pending(p->slot)) thrifty_returns_drain(p->slot, &p->list);
}

static inline void *block_init(thrifty_pool *p, void *block, size_t bytes) {
  thrifty_header *h = block;
  h->size = bytes;
  h->pool = p->id;
  h->magic = THRIFTY_MAGIC;
  thrifty_pressure_add(bytes);
  return (char *)block + THRIFTY_HEADER;
}

void *thrifty_pool_take(size_t size, bool *hopeless) {
  thrifty_pool *p = &my_pool;
  size_t need = thrifty_block_size(size);
  *hopeless = false;
  if (__builtin_expect(p->id == 0, 0) && !pool_setup(p)) need = 0;
  if (need == 0 || need > thrifty_heap_size()) {
    *hopeless = true;
    thrifty_count(THRIFTY_C_enomem, 1);
    errno = ENOMEM;
    return NULL;
  }
  collect_returns(p);
  size_t got;
  void *block = thrifty_list_take(&p->list, need, &got);
  return block ? block_init(p, block, got) : NULL;
}

bool thrifty_pool_refill(size_t size, bool grow) {
  thrifty_pool *p = &my_pool;
  if (p->id == 0 && !pool_setup(p)) return false;
  size_t need = thrifty_block_size(size);
  if (need == 0) return false;
  collect_returns(p);
  bool first = p->size == 0;
  size_t want = first ? first_pool_size : p->size;
  if (grow) want *= 2;
  if (want < 2 * need) want = 2 * need;
  size_t got;
  thrifty_heap_exchange(&p->list, &p->list, want, need, &got);
  if (got == 0) {
    thrifty_count(THRIFTY_C_refill_failures, 1);
    return false;
  }
  p->size = got;
  thrifty_count(first ? THRIFTY_C_pool_fills : THRIFTY_C_refills, 1);
  return true;
}

void *thrifty_malloc(size_t size) {
  bool hopeless;
  void *ptr = thrifty_pool_take(size, &hopeless);
  if (__builtin_expect(ptr != NULL, 1) || hopeless) return ptr;
  if (thrifty_pool_refill(size, false) && (ptr = thrifty_pool_take(size, &hopeless))) return ptr;
  thrifty_count(THRIFTY_C_enomem, 1);
  errno = ENOMEM;
  return NULL;
}

static _Noreturn void bad_free(const void *ptr, const char *what) {
  txalloc_message("thrifty: free(%p): %s", ptr, what);
  abort();
}

static inline thrifty_header *header_of(const void *ptr) {
  thrifty_header *h = (thrifty_header *)((char *)ptr - THRIFTY_HEADER);
  if (__builtin_expect(!thrifty_heap_contains(h) || ((uintptr_t)ptr & (THRIFTY_ALIGN - 1)), 0))
    bad_free(ptr, "not an object of the thrifty heap");
  if (__builtin_expect(h->magic != THRIFTY_MAGIC, 0))
    bad_free(ptr, "double free, or not the start of an object");
  return h;
}

void thrifty_free(void *ptr) {
  if (!ptr) return;
  thrifty_header *h = header_of(ptr);
  thrifty_pool *p = &my_pool;
  size_t bytes = h->size;
  /* The pressure drops first: once pushed or put, the block may be allocated again at once. */
  thrifty_pressure_sub(bytes);
  if (h->pool != p->id) {
    thrifty_count(THRIFTY_C_remote_frees, 1);
    uint32_t slot = h->pool % THRIFTY_RECORDS;
    if (slot && thrifty_returns_push(slot, h, bytes)) {
      thrifty_count(THRIFTY_C_owner_returns, 1);
      return;
    }
  }
  if (__builtin_expect(p->id == 0, 0)) pool_setup(p); /* the heap exists: it cannot fail */
  thrifty_list_put(&p->list, h, bytes);
}

size_t thrifty_usable_size(const void *ptr) {
  return ptr ? header_of(ptr)->size - THRIFTY_HEADER : 0;
}

int thrifty_owns(const void *ptr) { return thrifty_heap_contains(ptr); }

static void shape_of(const thrifty_list *l, thrifty_pool_shape *out) {
  out->free_bytes = l->free_bytes;
  out->extents = thrifty_list_count(l);
  out->largest = thrifty_list_largest(l);
}

void thrifty_pool_shape_get(thrifty_pool_shape *out) {
  thrifty_pool *p = &my_pool;
  collect_returns(p);
  shape_of(&p->list, out);
}

void thrifty_thread_exit(void) {
  thrifty_pool *p = &my_pool;
  if (p->id == 0) return;
  /* Closed first: a remote free from now on keeps its block, and none is left behind. */
  if (p->slot) thrifty_returns_close(p->slot, &p->list);
  thrifty_pool_shape shape;
  shape_of(&p->list, &shape);
  thrifty_count(THRIFTY_C_retired_pools, 1);
  thrifty_count(THRIFTY_C_retired_free_bytes, shape.free_bytes);
  thrifty_count(THRIFTY_C_retired_extents, shape.extents);
  thrifty_count(THRIFTY_C_retired_largest_bytes, shape.largest);
  size_t got;
  thrifty_list none = {0};
  if (p->list.head) thrifty_heap_exchange(&p->list, &none, 0, 0, &got);
  p->id = 0;
  p->slot = 0;
  p->size = 0;
}
