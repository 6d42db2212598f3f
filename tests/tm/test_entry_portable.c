/* The portable half of test_entry.c: blocks in this file are entered through sigsetjmp
 * (tm_checkpoint_ / tm_begin_), whatever the machine; test_entry.c's blocks use the fast
 * entry where tm.h has one. */
#define TXALLOC_TM_PORTABLE_ENTRY 1
#include "test_entry.h"

TM_TEST_TX void entry_portable_block(entry_child_fn child, entry_state *st) {
  TM_ATOMIC {
    st->outer_runs++;
    tm_store(&st->words[0], tm_load(&st->words[0]) + 1);
    if (child) child(st);
    if (st->outer_runs < st->outer_restarts + 1) tm_restart();
  }
}
