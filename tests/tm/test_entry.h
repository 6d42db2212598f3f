/* Shared by test_entry.c (fast entry where available) and test_entry_portable.c (portable
 * entry): one block of each kind, nestable in either order. */
#ifndef TXALLOC_TESTS_TM_TEST_ENTRY_H
#define TXALLOC_TESTS_TM_TEST_ENTRY_H

#include "tm_test.h"

typedef struct entry_state {
  _Alignas(64) uint64_t words[4];
  volatile int outer_runs, inner_runs;
  int outer_restarts; /* tm_restart calls the outer block makes before it commits */
  int inner_restarts; /* the same for the inner block */
  int inner_cancels;  /* 1: the inner block ends with tm_abort */
  volatile int inner_after_abort;
} entry_state;

typedef void (*entry_child_fn)(entry_state *st);

/* A block that counts its runs in st->outer_runs, adds 1 to words[0], calls `child` (may be
 * NULL) and restarts until it has run outer_restarts + 1 times. */
void entry_portable_block(entry_child_fn child, entry_state *st);

#endif
