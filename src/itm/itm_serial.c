/* Serial mode: a block that runs uninstrumented code, or calls code that must not be rolled
 * back, runs alone (libitm's serial-irrevocable mode). txalloc's irrevocable mode keeps
 * other transactions from committing writes but not from running, which uninstrumented
 * code (plain loads and stores) needs; so this layer adds a reader-writer exclusion around
 * top-level blocks:
 *   - a thread entering a block sets its record's `active` and then reads `itm_serial_owner`;
 *     if a serial thread is there it clears `active` and waits;
 *   - a thread entering serial mode takes `itm_serial_owner` and then waits until every other
 *     record is inactive.
 * Each side writes its own word and then reads the other's (Dekker): a block entry pays a
 * plain store and a load, because the serial side issues membarrier(2), a full barrier on
 * every thread of the process, between its store and its reads. Without membarrier, the
 * entry's store is sequentially consistent instead. ThreadSanitizer models neither
 * membarrier nor fences, so its build takes the second way, whose sequentially consistent
 * accesses order both sides by themselves. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "itm/itm_internal.h"

static itm_record *records; /* every record ever made, newest first (atomic head) */
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned record_count;
itm_record *itm_serial_owner;
bool itm_have_membarrier;

static void register_membarrier(void) {
#if defined(SYS_membarrier) && !defined(__SANITIZE_THREAD__)
  itm_have_membarrier =
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

itm_record *itm_record_take(void) {
  pthread_mutex_lock(&records_lock);
  itm_record *r = records;
  while (r && r->in_use) r = r->next;
  if (!r) {
    r = aligned_alloc(64, sizeof *r);
    if (!r) itm_fatal("out of memory for a thread record");
    r->active = 0;
    r->index = record_count++;
    r->next = records;
    __atomic_store_n(&records, r, __ATOMIC_RELEASE);
  }
  r->in_use = true;
  pthread_mutex_unlock(&records_lock);
  return r;
}

void itm_record_give_back(itm_record *r) {
  __atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
  pthread_mutex_lock(&records_lock);
  r->in_use = false;
  pthread_mutex_unlock(&records_lock);
}

static void full_barrier_everywhere(void) {
#if defined(SYS_membarrier) && !defined(__SANITIZE_THREAD__)
  if (itm_have_membarrier && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return;
#endif
#ifndef __SANITIZE_THREAD__
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the entries fence themselves (itm_enter_shared) */
#endif
}

static void wait_no_owner(void) {
  for (unsigned i = 0; __atomic_load_n(&itm_serial_owner, __ATOMIC_ACQUIRE); i++)
    if (i > 64) sched_yield();
}

/* Another thread is serial: step back, wait, and mark again. */
void itm_enter_shared_wait(itm_thread *t) {
  for (;;) {
    __atomic_store_n(&t->record->active, 0, __ATOMIC_RELEASE);
    wait_no_owner();
    itm_mark_active(t);
    if (__atomic_load_n(&itm_serial_owner, __ATOMIC_SEQ_CST) == NULL) return;
  }
}

/* Takes itm_serial_owner for `me` and waits until every other record is out of its block;
 * other threads then wait at their next top-level begin until the owner is cleared. */
static void exclude_others(itm_record *me) {
  for (;;) {
    itm_record *expected = NULL;
    if (__atomic_compare_exchange_n(&itm_serial_owner, &expected, me, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      break;
    wait_no_owner();
  }
  full_barrier_everywhere();
  for (itm_record *r = __atomic_load_n(&records, __ATOMIC_ACQUIRE); r; r = r->next)
    for (unsigned i = 0; r != me && __atomic_load_n(&r->active, __ATOMIC_SEQ_CST); i++)
      if (i > 64) sched_yield();
}

static int fork_pending; /* a fork waits for the exclusion: serial entries give way */

void itm_enter_serial(itm_thread *t) {
  itm_record *me = t->record;
  __atomic_store_n(&me->active, 0, __ATOMIC_RELEASE);
  for (unsigned i = 0; __atomic_load_n(&fork_pending, __ATOMIC_ACQUIRE); i++)
    if (i > 64) sched_yield();
  exclude_others(me);
  t->serial = true;
  t->want_serial = false;
}

void itm_leave_serial(itm_thread *t) {
  t->serial = false;
  __atomic_store_n(&itm_serial_owner, NULL, __ATOMIC_RELEASE);
}

void itm_go_serial(void) {
  itm_thread *t = itm_thread_get();
  if (t->serial) return;
  t->want_serial = true;
  tm_abort_outermost(); /* itm_begin_result enters serial mode and begins the block again */
}

/* fork: a thread inside a block in the parent would be missing from the child, with its
 * record marked active (a serial block would wait for it forever), serial mode held, or its
 * transaction's locks held in the runtime. So a fork waits, as for serial mode, until no
 * other thread is inside a block and keeps them out until it is done (the forking thread
 * is outside every block unless it is serial itself, which already excludes the others).
 * The child has only the forking thread: every other record is free there. It registers
 * for membarrier again (its new address space may not inherit the registration).
 * The handlers are registered when the library is loaded, after the runtime's, txmem's and
 * the allocator's: prepare handlers run in reverse order, so this wait comes before they
 * take their locks, which a thread inside a block may need. (A handler registered while
 * another thread forks does not run for that fork; at load no thread is in a block.) */
static itm_record fork_owner; /* the owner while a fork excludes the blocks; in no list */
static bool fork_excluded;

static void fork_prepare(void) {
  itm_thread *t = itm_self;
  fork_excluded = !(t && t->serial);
  if (fork_excluded) {
    __atomic_store_n(&fork_pending, 1, __ATOMIC_RELEASE);
    exclude_others(&fork_owner);
  }
  pthread_mutex_lock(&records_lock);
}

static void fork_parent(void) {
  pthread_mutex_unlock(&records_lock);
  if (fork_excluded) {
    __atomic_store_n(&fork_pending, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&itm_serial_owner, NULL, __ATOMIC_RELEASE);
  }
}

static void fork_child(void) {
  itm_record *mine = itm_self ? itm_self->record : NULL;
  for (itm_record *r = records; r; r = r->next) {
    if (r == mine) continue;
    r->active = 0;
    r->in_use = false;
  }
  pthread_mutex_unlock(&records_lock);
  if (fork_excluded) {
    fork_pending = 0;
    itm_serial_owner = NULL;
  }
  register_membarrier();
}

/* At load: membarrier; then setting this thread up in the runtime and allocating through
 * txmem registers the runtime's, txmem's and the allocator's fork handlers, and then this
 * layer's. */
__attribute__((constructor)) static void serial_init(void) {
  register_membarrier();
  tm_thread_init();
  tm_free(tm_malloc(1));
  if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
    itm_fatal("pthread_atfork failed");
}
