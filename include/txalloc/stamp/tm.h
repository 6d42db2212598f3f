/* STAMP's TM interface (lib/tm.h of STAMP 0.9.10) over txalloc's runtime. It stands in place
 * of STAMP's own lib/tm.h: copy it there, and build an application with STAMP's STM
 * makefile, STM=<txalloc>/include (the makefile adds -DSTM -I$(STM), which is where
 * txalloc/tm.h is found) and LIBS naming libtxalloc (docs/stamp.md has the command lines).
 * Without STM defined (STAMP's sequential build) the macros are plain C, as in STAMP.
 *
 * The mapping, and what STAMP code needs from it:
 *   - TM_BEGIN(); ... TM_END(); is one txalloc atomic block (TM_ATOMIC): TM_BEGIN opens a
 *     scope and TM_END closes it, as TinySTM's STAMP header does. So a variable declared
 *     between them is not visible after TM_END, and the code between them must not leave
 *     with return, break or goto (that would skip the commit). STAMP's code obeys both.
 *   - A restart (a conflict, or TM_RESTART) goes back to TM_BEGIN as a longjmp does: the
 *     locals of the enclosing function keep what the aborted attempt left in them when they
 *     live in memory, and are indeterminate when the compiler kept them in registers (C11
 *     7.13.2.1). That matters for a local whose value at the start of an attempt is used:
 *     one the block reads before assigning it, or assigns on some paths only and that is
 *     read after TM_END. (A local every attempt assigns before reading it holds the
 *     committed attempt's value after TM_END.) Such a local must be one of:
 *       - written with TM_LOCAL_WRITE*: logged here and restored on abort, as STAMP's TL2
 *         build does (labyrinth's `success`); the logged address keeps it in memory;
 *       - volatile, when the aborted attempt's value is what the retry should see;
 *       - re-initialised inside the block, at its top.
 *     STAMP's vacation client keeps maxPrices/maxIds/isFound across a restart with none of
 *     these: its retry starts from the aborted attempt's maxima, under TL2 as here (it may
 *     reserve less; the benchmark checks nothing that depends on it).
 *   - TM_SHARED_READ / TM_SHARED_WRITE access the object `var` (an lvalue, not its address)
 *     with a transactional load or store of its own size (txalloc's tm_load/tm_store pick
 *     the width from the type: kmeans's int and float counters are read as such, not as
 *     words). _P reads return void *, as STAMP's TL2 mapping does; _F reads and writes floats.
 *   - TM_MALLOC and TM_FREE are tm_malloc and tm_free: an allocation inside a transaction is
 *     undone if it aborts, a free takes effect when it commits; outside a transaction they
 *     allocate from the same place. P_MALLOC/P_FREE and SEQ_MALLOC/SEQ_FREE are the
 *     process's malloc and free, which they report to the allocation profile
 *     (txmem_profile_note_malloc/free: seq or par by the phase, never tx: the memory is not
 *     transactional). STAMP frees with TM_FREE some objects it allocated with
 *     P_MALLOC (yada's mesh, intruder's packets): link libtxalloc.so, so that malloc and
 *     tm_malloc share one allocator (docs/stamp.md).
 *   - TM_ARGDECL/TM_ARG pass nothing: txalloc's descriptor is thread-local.
 *     TM_ARGDECL_ALONE is `void`, so that `f(TM_ARGDECL_ALONE)` is a prototype.
 *   - TM_THREAD_ENTER/TM_THREAD_EXIT set a thread's descriptor up and release it (it may be
 *     entered again, as STAMP's thread pool does for each parallel phase). They also mark
 *     the parallel phase for the allocation profile (txmem_parallel_begin/end): every STAMP
 *     application calls them first and last in the function its threads run (thread_start's
 *     argument; the main thread runs it too), and nowhere else, so the profile's par region
 *     is open exactly while some thread runs that function, and seq before and after.
 *     TM_STARTUP only prepares TM_LOCAL_WRITE's log; the runtime starts with the first
 *     transaction.
 *   - TM_BEGIN_RO is TM_ATOMIC_RO (an attempt that stores after all restarts as an update
 *     transaction); TM_EARLY_RELEASE does nothing (txalloc's STM has no early release). */
#ifndef TXALLOC_STAMP_TM_H
#define TXALLOC_STAMP_TM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* STAMP's TL2 header brings thread.h along, and some STAMP sources count on it. */
#if defined(__has_include)
#if __has_include("thread.h")
#include "thread.h"
#endif
#endif

#define MAIN(argc, argv) int main(int argc, char **argv)
#define MAIN_RETURN(val) return val

#define GOTO_SIM()  /* nothing: no simulator */
#define GOTO_REAL() /* nothing */
#define IS_IN_SIM() (0)
#define SIM_GET_NUM_CPU(var) /* nothing */

#define TM_PRINTF printf
#define TM_PRINT0 printf
#define TM_PRINT1 printf
#define TM_PRINT2 printf
#define TM_PRINT3 printf

#define P_MEMORY_STARTUP(numThread) /* nothing */
#define P_MEMORY_SHUTDOWN()         /* nothing */

#define TM_ARG       /* nothing */
#define TM_ARG_ALONE /* nothing */
#define TM_ARGDECL   /* nothing */
#define TM_ARGDECL_ALONE void
#define TM_CALLABLE /* nothing: no compiler instrumentation to request */
#define TM_PURE     /* nothing */
#define TM_SAFE     /* nothing */

#ifdef STM

#include <stdint.h>

#include "txalloc/tm.h"
#include "txalloc/txmem.h"

#define TM_STARTUP(numThread) ((void)(numThread), tm_stamp_register_())
#define TM_SHUTDOWN() ((void)0)
/* A thread between TM_THREAD_ENTER and TM_THREAD_EXIT is in the parallel phase: the
 * allocation profile's `par` region is open while any thread is (the marks nest). */
#define TM_THREAD_ENTER() (tm_thread_init(), txmem_parallel_begin())
#define TM_THREAD_EXIT() (txmem_parallel_end(), tm_thread_exit())

/* The process's malloc and free, counted in the allocation profile as calls outside
 * transactions (seq or par by the phase they are made in). */
#define P_MALLOC(size) tm_stamp_plain_malloc_(size)
#define P_FREE(ptr) tm_stamp_plain_free_(ptr)
#define SEQ_MALLOC(size) tm_stamp_plain_malloc_(size)
#define SEQ_FREE(ptr) tm_stamp_plain_free_(ptr)
static inline void *tm_stamp_plain_malloc_(size_t size) {
  txmem_profile_note_malloc(size);
  return malloc(size);
}
static inline void tm_stamp_plain_free_(void *ptr) {
  txmem_profile_note_free(ptr);
  free(ptr);
}

#define TM_MALLOC(size) tm_malloc(size)
#define TM_FREE(ptr) tm_free(ptr)

#define TM_BEGIN() TM_ATOMIC {
#define TM_BEGIN_RO() TM_ATOMIC_RO {
#define TM_END() }
#define TM_RESTART() tm_restart()
#define TM_EARLY_RELEASE(var) ((void)0)

#define TM_SHARED_READ(var) tm_load(&(var))
#define TM_SHARED_READ_P(var)                                                                      \
  ((void *)tm_load_inline_ptr((void *const volatile *)(const volatile void *)&(var)))
#define TM_SHARED_READ_F(var) ((float)tm_load(&(var)))
#define TM_SHARED_WRITE(var, val) tm_store(&(var), (__typeof__(var))(val))
#define TM_SHARED_WRITE_P(var, val)                                                                \
  tm_store_ptr((void *volatile *)(volatile void *)&(var), (void *)(val))
#define TM_SHARED_WRITE_F(var, val) tm_store(&(var), (__typeof__(var))(val))

/* A local assigned inside a transaction gets its old value back if the transaction (the
 * level that assigned it, with closed nesting) aborts. Outside a transaction: a plain
 * assignment. `var` is a scalar of at most 8 bytes. */
#define TM_LOCAL_WRITE(var, val)                                                                   \
  (tm_stamp_log_local_((void *)&(var), sizeof(char[sizeof(var) <= 8 ? sizeof(var) : -1])),         \
   (void)((var) = (__typeof__(var))(val)))
#define TM_LOCAL_WRITE_P(var, val) TM_LOCAL_WRITE(var, val)
#define TM_LOCAL_WRITE_F(var, val) TM_LOCAL_WRITE(var, val)

/* ---- TM_LOCAL_WRITE's undo log (internal). One log per thread for the whole program: the
 * variables are weak, so every translation unit that includes this header shares one
 * definition without a library of its own; the functions are static inline copies that all
 * work on it. The log is undone by a tm_callbacks subscriber registered once. ---- */
typedef struct tm_stamp_undo_ {
  void *addr;
  unsigned char old[8];
  unsigned size;
  unsigned depth; /* the nesting level that wrote it */
} tm_stamp_undo_;
typedef struct tm_stamp_log_ {
  tm_stamp_undo_ *entries;
  size_t count, capacity;
} tm_stamp_log_;
__attribute__((weak)) __thread tm_stamp_log_ tm_stamp_log_self_;
__attribute__((weak)) int tm_stamp_registered_;

/* Undoes the writes of level `depth` and the levels inside it, newest first. */
static inline void tm_stamp_on_abort_(void *ctx, unsigned depth) {
  (void)ctx;
  tm_stamp_log_ *log = &tm_stamp_log_self_;
  while (log->count && log->entries[log->count - 1].depth >= depth) {
    tm_stamp_undo_ *u = &log->entries[--log->count];
    memcpy(u->addr, u->old, u->size);
  }
}

/* Top level: the writes stand. A child (closed nesting): its writes become its parent's. */
static inline void tm_stamp_on_commit_(void *ctx, unsigned depth) {
  (void)ctx;
  tm_stamp_log_ *log = &tm_stamp_log_self_;
  if (depth <= 1) {
    log->count = 0;
    return;
  }
  for (size_t i = log->count; i > 0 && log->entries[i - 1].depth >= depth; i--)
    log->entries[i - 1].depth = depth - 1;
}

static inline void tm_stamp_on_thread_exit_(void *ctx) {
  (void)ctx;
  tm_stamp_log_ *log = &tm_stamp_log_self_;
  free(log->entries);
  *log = (tm_stamp_log_){0};
}

static inline void tm_stamp_register_(void) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&tm_stamp_registered_, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  const tm_callbacks callbacks = {.on_commit = tm_stamp_on_commit_,
                                  .on_abort = tm_stamp_on_abort_,
                                  .on_thread_exit = tm_stamp_on_thread_exit_};
  if (tm_register_callbacks(&callbacks) != 0) {
    fprintf(stderr, "txalloc/stamp/tm.h: the TM callback table is full\n");
    abort();
  }
}

static inline void tm_stamp_log_local_(void *addr, size_t size) {
  if (!tm_in_transaction()) return;
  if (!__atomic_load_n(&tm_stamp_registered_, __ATOMIC_ACQUIRE)) tm_stamp_register_();
  tm_stamp_log_ *log = &tm_stamp_log_self_;
  if (log->count == log->capacity) {
    size_t capacity = log->capacity ? 2 * log->capacity : 16;
    tm_stamp_undo_ *grown = realloc(log->entries, capacity * sizeof *grown);
    if (!grown) {
      fprintf(stderr, "txalloc/stamp/tm.h: out of memory for TM_LOCAL_WRITE's log\n");
      abort();
    }
    log->entries = grown;
    log->capacity = capacity;
  }
  tm_stamp_undo_ *u = &log->entries[log->count++];
  u->addr = addr;
  u->size = (unsigned)size;
  u->depth = tm_depth();
  memcpy(u->old, addr, size);
}

#else /* STAMP's sequential build: no TM */

#define P_MALLOC(size) malloc(size)
#define P_FREE(ptr) free(ptr)
#define SEQ_MALLOC(size) malloc(size)
#define SEQ_FREE(ptr) free(ptr)

#define TM_STARTUP(numThread) /* nothing */
#define TM_SHUTDOWN()         /* nothing */
#define TM_THREAD_ENTER()     /* nothing */
#define TM_THREAD_EXIT()      /* nothing */

#define TM_MALLOC(size) malloc(size)
#define TM_FREE(ptr) free(ptr)

#define TM_BEGIN()    /* nothing */
#define TM_BEGIN_RO() /* nothing */
#define TM_END()      /* nothing */
#define TM_RESTART() abort()
#define TM_EARLY_RELEASE(var) /* nothing */

#define TM_SHARED_READ(var) (var)
#define TM_SHARED_READ_P(var) (var)
#define TM_SHARED_READ_F(var) (var)
#define TM_SHARED_WRITE(var, val) ((void)((var) = (val)))
#define TM_SHARED_WRITE_P(var, val) ((void)((var) = (val)))
#define TM_SHARED_WRITE_F(var, val) ((void)((var) = (val)))
#define TM_LOCAL_WRITE(var, val) ((void)((var) = (val)))
#define TM_LOCAL_WRITE_P(var, val) ((void)((var) = (val)))
#define TM_LOCAL_WRITE_F(var, val) ((void)((var) = (val)))

#endif /* STM */

/* The _L and _I spellings of later STAMP releases. */
#define TM_SHARED_READ_L(var) TM_SHARED_READ(var)
#define TM_SHARED_READ_I(var) TM_SHARED_READ(var)
#define TM_SHARED_WRITE_L(var, val) TM_SHARED_WRITE(var, val)
#define TM_SHARED_WRITE_I(var, val) TM_SHARED_WRITE(var, val)
#define TM_LOCAL_WRITE_L(var, val) TM_LOCAL_WRITE(var, val)
#define TM_LOCAL_WRITE_I(var, val) TM_LOCAL_WRITE(var, val)

#endif
