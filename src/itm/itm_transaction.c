/* Transactions of the ABI: begin (with itm_begin_x86_64.S), commit, cancel, the switch to
 * serial mode, and the queries. Each _ITM_beginTransaction begins one level of the tm
 * front-end, so the runtime's nesting option decides what a nested block is: closed
 * (default: its own level, rolled back alone by a conflict or __transaction_cancel) or
 * flat (one transaction, which a conflict restarts whole; a __transaction_cancel in a
 * nested block is then an error, since GCC's code around it does not expect the outer
 * blocks to end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txalloc/options.h"

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"
#include "util/message.h"

itm_checkpoint *itm_begin_prepare(uint32_t properties, uintptr_t caller_sp);
uint32_t itm_begin_result(itm_checkpoint *cp, int started);

/* A block with no instrumented path, or one the compiler knows goes irrevocable, runs in
 * serial mode from its start. */
static inline bool needs_serial(uint32_t properties) {
  return (properties & itm_pr_doesGoIrrevocable) || !(properties & itm_pr_instrumentedCode);
}

/* Which code runs: the uninstrumented path only in serial mode (alone), when there is one. */
static inline uint32_t answer(const itm_thread *t, uint32_t properties) {
  return t->serial && (properties & itm_pr_uninstrumentedCode) ? itm_a_runUninstrumentedCode
                                                               : itm_a_runInstrumentedCode;
}

/* The level's checkpoint as its first entry finds it. */
static inline itm_checkpoint *checkpoint_begun(itm_checkpoint *cp, int flags, uint32_t properties,
                                               uint32_t run_code) {
  cp->flags = flags;
  cp->properties = properties;
  cp->entered = 0;
  cp->first_code = run_code | itm_a_saveLiveVariables;
  return cp;
}

/* itm_begin_prepare's general case: a thread's first block, a nested block, serial mode
 * (asked for, wanted, or another thread's). */
static __attribute__((noinline)) itm_checkpoint *
begin_prepare_other(itm_thread *t, uint32_t properties, uintptr_t caller_sp) {
  if (!t) t = itm_thread_setup();
  unsigned depth = t->depth;
  int flags = TM_FLAG_NONE;
  if (ITM_LIKELY(depth == 0)) {
    if (ITM_UNLIKELY(needs_serial(properties) || t->want_serial))
      itm_enter_serial(t);
    else
      itm_enter_shared(t);
    if (t->serial)
      flags = TM_FLAG_IRREVOCABLE;
    else if (properties & itm_pr_readOnly)
      flags = TM_FLAG_READ_ONLY;
    t->transactions++;
    itm_stack_top = caller_sp;
  } else if (needs_serial(properties) && !t->serial) {
    itm_go_serial(); /* restarts the outermost block, alone */
  }
  itm_checkpoint *cp = itm_checkpoint_of(t, depth + 1);
  t->depth = depth + 1; /* tm_start_ begins the level next */
  return checkpoint_begun(cp, flags, properties, answer(t, properties));
}

/* Called by _ITM_beginTransaction before tm_start_: the level's checkpoint and flags.
 * `caller_sp`: the caller's stack pointer after the return. The common case, a top-level
 * block of a set-up thread that runs instrumented while no thread is serial, makes no call
 * (itm_enter_shared's test inline; its wait is the general case's). */
itm_checkpoint *itm_begin_prepare(uint32_t properties, uintptr_t caller_sp) {
  itm_thread *t = itm_self;
  if (ITM_LIKELY(t != NULL) && ITM_LIKELY(t->depth == 0) &&
      ITM_LIKELY(!needs_serial(properties) && !t->want_serial)) {
    itm_mark_active(t);
    if (ITM_LIKELY(__atomic_load_n(&itm_serial_owner, __ATOMIC_SEQ_CST) == NULL)) {
      t->transactions++;
      itm_stack_top = caller_sp;
      t->depth = 1;
      /* Level 1's checkpoint: chunk 0 is made with the thread (itm_thread_setup). */
      return checkpoint_begun(&t->chunks[0][1],
                              (properties & itm_pr_readOnly) ? TM_FLAG_READ_ONLY : TM_FLAG_NONE,
                              properties, itm_a_runInstrumentedCode);
    }
  }
  return begin_prepare_other(t, properties, caller_sp);
}

/* Called by _ITM_beginTransaction when tm_start_ returns again after a rollback
 * (`started`: 1, the level begins again; 0, it was cancelled): the ABI's answer, or 0 to
 * begin again (the switch to serial mode). */
uint32_t itm_begin_result(itm_checkpoint *cp, int started) {
  itm_thread *t = itm_self;
  if (!started) {
    t->depth = cp->level - 1;
    if (t->entry_count) itm_actions_undo(t, cp->level);
    if (cp->level == 1) { /* the top level is over */
      itm_leave(t);
      if (t->want_serial) { /* not a cancel: the switch to serial mode (itm_go_serial) */
        itm_enter_serial(t);
        cp->flags = TM_FLAG_IRREVOCABLE;
        return 0;
      }
    }
    return itm_a_abortTransaction | itm_a_restoreLiveVariables;
  }
  t->depth = cp->level;
  if (t->entry_count) itm_actions_undo(t, cp->level);
  return answer(t, cp->properties) | itm_a_restoreLiveVariables;
}

void _ITM_commitTransaction(void) {
  itm_thread *t = itm_self;
  unsigned level = t->depth;
  tm_commit_(); /* or a rollback to a checkpoint */
  t->depth = level - 1;
  if (level > 1) {
    if (t->entry_count) itm_actions_commit_child(t, level);
    return;
  }
  itm_leave(t);
  if (t->entry_count) itm_actions_commit_top(t);
}

/* An exception leaves the block: GCC commits it (exceptions commit, as in C++ TM). */
void _ITM_commitTransactionEH(void *exception) {
  (void)exception;
  _ITM_commitTransaction();
}

static bool nesting_is_flat(void) {
  int i = txalloc_option_find("nesting");
  char value[16];
  return i >= 0 && txalloc_option_format((size_t)i, value, sizeof value) > 0 &&
         strcmp(value, "flat") == 0;
}

void _ITM_abortTransaction(itm_abort_reason reason) {
  if (!tm_in_transaction()) itm_fatal("_ITM_abortTransaction outside a transaction");
  if (tm_is_irrevocable()) itm_fatal("an irrevocable transaction cannot be cancelled");
  /* GCC's code expects a cancel to end the innermost block only: the blocks around it do
   * not test for it. Flat nesting cannot undo a child alone. */
  if (!(reason & itm_outerAbort) && tm_depth() > 1 && nesting_is_flat())
    itm_fatal("__transaction_cancel in a nested block needs TXALLOC_NESTING=closed");
  if (reason & itm_outerAbort) tm_abort_outermost();
  if (reason & itm_userAbort) tm_abort();
  if (reason & itm_userRetry) tm_restart();
  itm_fatal("_ITM_abortTransaction: unsupported reason");
}

void _ITM_changeTransactionMode(int mode) {
  if (mode != itm_modeSerialIrrevocable) itm_fatal("_ITM_changeTransactionMode: unknown mode");
  if (!tm_in_transaction()) return;
  itm_go_serial();
}

int _ITM_inTransaction(void) {
  if (!tm_in_transaction()) return itm_outsideTransaction;
  return tm_is_irrevocable() ? itm_inIrrevocableTransaction : itm_inRetryableTransaction;
}

/* Unique per top-level block: the thread's record index above the thread's block count. */
itm_transaction_id _ITM_getTransactionId(void) {
  itm_thread *t = itm_self;
  if (!t || !tm_in_transaction()) return ITM_NO_TRANSACTION_ID;
  return ((itm_transaction_id)(t->record->index + 1) << 40) + t->transactions;
}

int _ITM_versionCompatible(int version) { return version == ITM_VERSION_NUMBER; }

const char *_ITM_libraryVersion(void) { return "txalloc-itm (TM ABI " ITM_VERSION_STRING ")"; }

void _ITM_error(const itm_src_location *where, int code) {
  txalloc_message("itm: error %d at %s", code, where && where->psource ? where->psource : "?");
  abort();
}
