/* The allocator's locks and the fork handlers that take every one of them.
 *
 * The fast paths and the block store are lock-free; these spin locks guard only slow,
 * short sections: the first part of initialisation (txa_init_lock), the purge of empty
 * blocks (txa_purge_lock), the heap registry (txa_heap_lock), each heap's bin rings (its
 * ring_lock, heap.c) and then its cache of empty blocks (its empty_lock, empty_cache.c;
 * others only try it), the large-object cache (txa_large_lock), the arenas of runs
 * (runs.c) and region carving (txa_region_lock). Before fork the parent takes all of them, in that
 * order, so no lock is held by a thread that does not exist in the child; both sides release them
 * afterwards. Heaps of the parent's other threads stay owned (by heaps no child thread uses):
 * objects in them can still be freed in the child (remote frees), their free space is not reused.
 */
#include <sched.h>

#include "alloc/internal.h"

txa_lock txa_purge_lock, txa_init_lock;

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
  txa_lock_acquire(&txa_init_lock);
  txa_lock_acquire(&txa_purge_lock);
  txa_lock_acquire(&txa_heap_lock);
  txa_heap_lock_rings();
  txa_lock_acquire(&txa_large_lock);
  txa_runs_lock_all();
  txa_lock_acquire(&txa_region_lock);
}

static void fork_release(void) {
  txa_lock_release(&txa_region_lock);
  txa_runs_unlock_all();
  txa_lock_release(&txa_large_lock);
  txa_heap_unlock_rings();
  txa_lock_release(&txa_heap_lock);
  txa_lock_release(&txa_purge_lock);
  txa_lock_release(&txa_init_lock);
}

static _Atomic(int) fork_registered;

#ifdef __GLIBC__
/* What glibc's pthread_atfork does, called directly: pthread_atfork is a stub from
 * libc_nonshared.a that the linker places at the very end of libtxalloc.so's code, where
 * calling it would fault in a window of code a program that only mallocs never runs
 * (docs/allocator.md, "Code footprint"). __dso_handle lets glibc drop the handlers if the
 * library is unloaded. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                             void *dso_handle);
extern void *__dso_handle;
#define TXA_ATFORK(prepare, parent, child) __register_atfork(prepare, parent, child, __dso_handle)
#else
#define TXA_ATFORK(prepare, parent, child) pthread_atfork(prepare, parent, child)
#endif

/* Registers the handlers once: from the library constructor or from the initialisation,
 * whichever comes first (init.c). */
void txa_fork_register(void) {
  int expected = 0;
  if (atomic_compare_exchange_strong_explicit(&fork_registered, &expected, 1, memory_order_acq_rel,
                                              memory_order_acquire))
    TXA_ATFORK(fork_prepare, fork_release, fork_release);
}
