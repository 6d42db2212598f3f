/* The ABI layer's thread state: made at a thread's first ABI call, its serial-mode record
 * given back at the thread's exit. The checkpoints of a thread's levels live here, in
 * chunks that never move while the thread lives. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "itm/itm_internal.h"
#include "util/message.h"

__thread itm_thread *itm_self;
__thread uintptr_t itm_stack_top, itm_stack_end;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;

_Noreturn void itm_fatal(const char *what) {
  txalloc_message("itm: fatal: %s", what);
  abort();
}

static void thread_exit(void *arg) {
  itm_thread *t = arg;
  itm_record_give_back(t->record);
  for (unsigned i = 0; i < ITM_CHUNKS; i++) free(t->chunks[i]);
  free(t->entries);
  free(t);
  itm_self = NULL;
}

static void make_key(void) {
  if (pthread_key_create(&thread_key, thread_exit) != 0) itm_fatal("pthread_key_create failed");
}

itm_thread *itm_thread_setup(void) {
  pthread_once(&key_once, make_key);
  itm_thread *t = calloc(1, sizeof *t);
  if (!t) itm_fatal("out of memory for a thread's state");
  t->record = itm_record_take();
  itm_checkpoint_grow(t, 1); /* chunk 0: the common begin uses level 1's without a test */
  pthread_attr_t attr;
  void *stack;
  size_t stack_size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &stack, &stack_size) == 0)
      itm_stack_end = (uintptr_t)stack + stack_size;
    pthread_attr_destroy(&attr);
  }
  itm_self = t;
  pthread_setspecific(thread_key, t);
  return t;
}

itm_checkpoint *itm_checkpoint_grow(itm_thread *t, unsigned level) {
  unsigned chunk = level / ITM_CHUNK;
  if (ITM_UNLIKELY(chunk >= ITM_CHUNKS)) itm_fatal("transactions nested too deep");
  if (ITM_UNLIKELY(!t->chunks[chunk])) {
    t->chunks[chunk] = calloc(ITM_CHUNK, sizeof(itm_checkpoint));
    if (!t->chunks[chunk]) itm_fatal("out of memory for checkpoints");
  }
  for (unsigned i = 0; i < ITM_CHUNK; i++) t->chunks[chunk][i].level = chunk * ITM_CHUNK + i;
  return &t->chunks[chunk][level % ITM_CHUNK];
}

void itm_stack_store(void *addr, const void *src, size_t size) {
  if ((uintptr_t)addr + size > itm_stack_top) itm_log_memory(addr, size);
  memcpy(addr, src, size);
}
