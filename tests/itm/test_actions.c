/* User commit and undo actions: a commit action runs once, after the outermost block
 * commits, in registration order; an undo action runs when its block rolls back (newest
 * first) and never after a commit; a nested block's cancel runs its own undo actions and
 * drops its own commit actions, keeping the parent's; a conflict restart drops the
 * attempt's actions too (each attempt registers them again). */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "itm_test.h"

static char trace[64];
static size_t trace_len;
static long shared;

static void note(void *arg) { trace[trace_len++] = (char)(long)arg; }
static void reset(void) {
  memset(trace, 0, sizeof trace);
  trace_len = 0;
}

static void test_commit(void) {
  reset();
  __transaction_atomic {
    shared++;
    _ITM_addUserCommitAction(note, 0, (void *)'a');
    _ITM_addUserUndoAction(note, (void *)'u');
    _ITM_addUserCommitAction(note, 0, (void *)'b');
  }
  CHECKF(strcmp(trace, "ab") == 0, "trace '%s'", trace);
}

static void test_cancel(void) {
  reset();
  __transaction_atomic {
    shared++;
    _ITM_addUserCommitAction(note, 0, (void *)'a');
    _ITM_addUserUndoAction(note, (void *)'x');
    _ITM_addUserUndoAction(note, (void *)'y');
    if (shared) __transaction_cancel;
  }
  CHECKF(strcmp(trace, "yx") == 0, "trace '%s'", trace);
}

static void test_nested(void) {
  reset();
  __transaction_atomic {
    shared++;
    _ITM_addUserCommitAction(note, 0, (void *)'p');
    __transaction_atomic {
      shared++;
      _ITM_addUserCommitAction(note, 0, (void *)'c');
      _ITM_addUserUndoAction(note, (void *)'u');
      if (shared) __transaction_cancel;
    }
    __transaction_atomic {
      shared++;
      _ITM_addUserCommitAction(note, 0, (void *)'k'); /* a committed child: kept */
    }
  }
  CHECKF(strcmp(trace, "upk") == 0, "trace '%s'", trace);
}

/* Two threads on one counter: every attempt registers an action; only committed ones run,
 * so the actions run exactly once per block. */
enum { THREADS = 4, BLOCKS = 3000 };
static long counter, committed_actions[THREADS];
static void count(void *arg) { (*(long *)arg)++; }

static void *worker(void *arg) {
  long *mine = arg;
  for (int i = 0; i < BLOCKS; i++) {
    __transaction_atomic {
      counter++;
      _ITM_addUserCommitAction(count, 0, mine);
    }
  }
  return NULL;
}

static void test_conflicts(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, &committed_actions[i]);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  CHECK(counter == THREADS * BLOCKS);
  for (int i = 0; i < THREADS; i++) CHECK(committed_actions[i] == BLOCKS);
}

int main(void) {
  test_commit();
  test_cancel();
  test_nested();
  test_conflicts();
  return check_exit();
}
