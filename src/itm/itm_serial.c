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

__attribute__((constructor)) static void serial_init(void) {
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

void itm_enter_serial(itm_thread *t) {
  itm_record *me = t->record;
  __atomic_store_n(&me->active, 0, __ATOMIC_RELEASE);
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
