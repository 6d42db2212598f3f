/* The allocator's locks and the fork handlers that take every one of them.
 *
 * The fast paths and the block store are lock-free; these spin locks guard only slow,
 * short sections: carving regions (txa_region_lock), the large-object cache
 * (txa_large_lock), the heap registry (txa_heap_lock) and the purge of empty blocks
 * (txa_purge_lock). Before fork the parent takes all of them in this order, so no lock is
 * held by a thread that does not exist in the child; both sides release them afterwards.
 * Heaps of the parent's other threads stay owned (by heaps no child thread uses): objects
 * in them can still be freed in the child (remote frees), their free space is not reused. */
#include <sched.h>

#include "alloc/internal.h"

txa_lock txa_purge_lock;

void txa_lock_acquire(txa_lock *l) {
  for (unsigned spins = 0;; spins++) {
    if (atomic_load_explicit(&l->held, memory_order_relaxed) == 0) {
      int expected = 0;
      if (atomic_compare_exchange_weak_explicit(&l->held, &expected, 1, memory_order_acquire,
                                                memory_order_relaxed))
        return;
    }
    if (spins < 64)
      __builtin_ia32_pause();
    else
      sched_yield();
  }
}

static void fork_prepare(void) {
  txa_lock_acquire(&txa_purge_lock);
  txa_lock_acquire(&txa_heap_lock);
  txa_lock_acquire(&txa_large_lock);
  txa_lock_acquire(&txa_region_lock);
}

static void fork_release(void) {
  txa_lock_release(&txa_region_lock);
  txa_lock_release(&txa_large_lock);
  txa_lock_release(&txa_heap_lock);
  txa_lock_release(&txa_purge_lock);
}

/* Called once, by the initialising thread (init.c). */
void txa_fork_register(void) { pthread_atfork(fork_prepare, fork_release, fork_release); }
