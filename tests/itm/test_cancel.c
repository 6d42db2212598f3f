/* __transaction_cancel and nesting. Under the default closed nesting a cancel in a nested
 * block undoes that block alone and the outer one goes on, at any depth. Under
 * TXALLOC_NESTING=flat (this program again, as itm_cancel_flat) a nested block cannot be
 * undone alone: its cancel stops the program with a message (checked in a child).
 * __transaction_cancel [[outer]] undoes the outermost block either way. Locals the block
 * modified get their values back (a_restoreLiveVariables), and the allocations of a
 * cancelled block are given back. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "itm_test.h"

static long a, b, c;
static bool flat;

static void test_top_cancel(void) {
  a = 1;
  int local = 10;
  __transaction_atomic {
    a = 2;
    local = 20;
    if (a == 2) __transaction_cancel;
    a = 3;
  }
  CHECK(a == 1);
  CHECK(local == 10);
}

static void test_nested_cancel(void) {
  a = b = c = 0;
  __transaction_atomic {
    a = 1;
    __transaction_atomic {
      b = 1;
      if (b) __transaction_cancel;
    }
    c = 1;
  }
  CHECK(a == 1 && b == 0 && c == 1); /* the child alone */
}

static void test_outer_cancel(void) {
  a = b = c = 0;
  __transaction_atomic [[outer]] {
    a = 1;
    __transaction_atomic {
      b = 1;
      if (b) __transaction_cancel [[outer]];
    }
    c = 1;
  }
  CHECK(a == 0 && b == 0 && c == 0);
}

/* Deep nesting: more levels than one chunk of checkpoints; the innermost cancels. */
__attribute__((transaction_safe)) static void nest(int depth) {
  __transaction_atomic {
    a++;
    if (depth > 0) nest(depth - 1);
    if (depth == 0) __transaction_cancel;
  }
}

static void test_deep(void) {
  a = 0;
  __transaction_atomic { nest(40); }
  CHECK(a == 40);
}

/* A cancel after allocating gives the memory back; a committed child's allocation stays. */
static long *kept;
static void test_alloc(void) {
  kept = NULL;
  __transaction_atomic {
    kept = malloc(sizeof *kept);
    *kept = 5;
    __transaction_atomic {
      long *lost = malloc(64);
      lost[0] = 1;
      a = (long)lost;
      __transaction_cancel;
    }
  }
  CHECK(kept != NULL && *kept == 5);
  free(kept);
}

/* Flat nesting: the nested cancel ends the program (in a child) instead of going on wrong. */
static void test_flat_refuses(void) {
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(2); /* the expected message */
    test_nested_cancel();
    _exit(0);
  }
  CHECK(!check_wait_child(pid, "nested cancel under flat nesting (expected to abort)"));
}

int main(void) {
  const char *nesting = getenv("TXALLOC_NESTING");
  flat = nesting && strcmp(nesting, "flat") == 0;
  test_top_cancel();
  test_outer_cancel();
  if (flat) {
    test_flat_refuses();
  } else {
    test_nested_cancel();
    test_deep();
    test_alloc();
  }
  return check_exit();
}
