/* The heap: mapped once, at the first use (the only system call of the allocator), never
 * grown, never returned. Its free blocks outside every pool are on one list under one lock;
 * threads take it only to exchange a pool (thrifty_pool.c), never on an allocation that
 * their pool serves. The refill runs outside any transaction: txmem aborts the transaction
 * first (docs/thrifty.md, "Refill"). */
#include <pthread.h>

#include "os/os_mem.h"
#include "thrifty/thrifty_internal.h"
#include "thrifty/thrifty_options.h"
#include "util/message.h"

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static thrifty_list heap_list; /* under heap_lock */
static char *heap_base;
static size_t heap_size;
static _Atomic size_t heap_free; /* heap_list.free_bytes, for readers without the lock */
static _Atomic size_t held_peak; /* written under heap_lock; atomic for readers without it */
static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

/* fork: the child's heap lock must not be held by a thread that does not exist there. The
 * other threads' pools stay out of the child's heap (their memory is lost to it). */
static void atfork_prepare(void) { pthread_mutex_lock(&heap_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&heap_lock); }
static void atfork_child(void) { pthread_mutex_init(&heap_lock, NULL); }

static void heap_map(void) {
  size_t size = (size_t)txalloc_opt(TXALLOC_OPT_THRIFTY_HEAP_MB) << 20;
  void *base = txa_os_map(size, TXA_OS_PAGE);
  if (base) {
    heap_size = size;
    thrifty_list_put(&heap_list, base, size);
    atomic_store_explicit(&heap_free, size, memory_order_relaxed);
    /* Published last: thrifty_heap_contains reads it without the once. */
    __atomic_store_n(&heap_base, (char *)base, __ATOMIC_RELEASE);
  } else {
    txalloc_message("thrifty: cannot map a heap of %zu MiB; every allocation fails", size >> 20);
  }
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

bool thrifty_heap_init(void) {
  pthread_once(&heap_once, heap_map);
  return heap_size != 0;
}

void thrifty_heap_exchange(thrifty_list *give, thrifty_list *into, size_t want, size_t need,
                           size_t *got) {
  pthread_mutex_lock(&heap_lock);
  thrifty_list_move_all(&heap_list, give);
  void *run = want ? thrifty_list_take(&heap_list, want, got) : NULL;
  if (!run && want > need) run = thrifty_list_take(&heap_list, need, got);
  if (run)
    thrifty_list_put(into, run, *got);
  else
    *got = 0;
  atomic_store_explicit(&heap_free, heap_list.free_bytes, memory_order_relaxed);
  size_t held = heap_size - heap_list.free_bytes;
  if (held > atomic_load_explicit(&held_peak, memory_order_relaxed))
    atomic_store_explicit(&held_peak, held, memory_order_relaxed);
  pthread_mutex_unlock(&heap_lock);
}

size_t thrifty_heap_size(void) {
  return __atomic_load_n(&heap_base, __ATOMIC_ACQUIRE) ? heap_size : 0;
}

size_t thrifty_heap_free_bytes(void) {
  return atomic_load_explicit(&heap_free, memory_order_relaxed);
}

bool thrifty_heap_contains(const void *p) {
  char *base = __atomic_load_n(&heap_base, __ATOMIC_ACQUIRE);
  return base && (const char *)p >= base && (const char *)p < base + heap_size;
}

size_t thrifty_heap_held_peak(void) {
  return atomic_load_explicit(&held_peak, memory_order_relaxed);
}

void thrifty_heap_reset_held_peak(void) {
  pthread_mutex_lock(&heap_lock);
  atomic_store_explicit(&held_peak, heap_size - heap_list.free_bytes, memory_order_relaxed);
  pthread_mutex_unlock(&heap_lock);
}
