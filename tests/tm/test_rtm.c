/* The rtm backend on real hardware (src/tm/rtm.c; ctest runs it through rtm_or_skip, which
 * skips it where the CPU cannot run RTM). One thread, so no conflict aborts; the hardware
 * may still abort any attempt for a cause of its own (an interrupt: cause unfriendly), which
 * adds aborts and sends the block to the fallback lock, so each check asserts what holds
 * whichever attempt ran the block:
 *   commit      a block that stores commits once and counts as a write commit
 *   restart     tm_restart ends a hardware attempt (explicit abort) and the block reruns
 *               on the fallback lock, where it completes (the block restarts only when it
 *               is not irrevocable: a store in hardware would be discarded with the abort)
 *   child       tm_abort in a nested block undoes the child only, and the parent's store
 *               stays (on the fallback: hardware cannot roll back part of a transaction);
 *               under nesting=flat it cancels the whole block, which then never commits
 *   irrevocable tm_become_irrevocable leaves the block irrevocable, committed on the lock
 *   syscall     a system call aborts the hardware attempt (not a crash): the block commits
 *               on the lock
 *   capacity    a write set of 4 MiB never commits in hardware: the block commits on the
 *               lock
 *   status      tm_last_abort_status after the hardware's explicit abort of tm_restart
 *               is explicit, with the backend's code 0xfe (not under AddressSanitizer,
 *               whose call before tm_restart aborts the attempt first) */
#include <sys/syscall.h>

#include "tm_test.h"

static uint64_t a, b;
static bool irrevocable_inside;
static unsigned status_seen;

static TM_TEST_TX void store_block(void) {
  TM_ATOMIC { tm_store(&a, tm_load(&a) + 1); }
}

static void test_commit(void) {
  a = 0;
  tm_stats s = tm_test_measure("commit", store_block);
  CHECK(a == 1);
  CHECK(s.commits == 1 && s.commits_read_only == 0);
}

/* tm_restart in hardware attempts only: the rerun on the fallback lock commits. */
static TM_TEST_TX void restart_block(void) {
  TM_ATOMIC {
    tm_store(&a, tm_load(&a) + 1);
    if (!tm_is_irrevocable()) tm_restart();
    status_seen = tm_last_abort_status();
  }
}

static void test_restart(void) {
  a = 0;
  tm_stats s = tm_test_measure("restart", restart_block);
  CHECK(a == 1);
  CHECK(s.commits == 1 && s.commits_irrevocable == 1 && s.aborts >= 1);
}

/* Runs the restart block until its only abort was the explicit one of its tm_restart (the
 * hardware did not abort the attempt before it got there): the fallback attempt then saw
 * the xabort's status. */
static void test_status(void) {
#ifdef __SANITIZE_ADDRESS__
  /* AddressSanitizer calls __asan_handle_no_return before every call of a no-return
   * function, tm_restart here. Inside a hardware attempt that call aborts it (status 0)
   * before tm_restart's xabort, so no attempt ends with the status this checks. */
  fprintf(stderr, "status: not checked under AddressSanitizer\n");
  return;
#endif
  for (int i = 0; i < 100; i++) {
    status_seen = 0;
    tm_stats s = tm_test_measure(NULL, restart_block);
    if (s.aborts == 1 && tm_test_cause(&s, TM_ABORT_EXPLICIT) == 1) {
      CHECKF(status_seen == (TM_XABORT_EXPLICIT | 0xfeu << 24), "status 0x%x", status_seen);
      return;
    }
  }
  CHECKF(false, "no run of 100 aborted only by its tm_restart");
}

static TM_TEST_TX void child_block(void) {
  TM_ATOMIC {
    tm_store(&a, 1);
    TM_ATOMIC {
      tm_store(&b, 1);
      tm_abort();
    }
  }
}

static void test_child(void) {
  a = b = 0;
  tm_stats s = tm_test_measure("child", child_block);
  if (tm_test_option_is("nesting", "flat")) {
    CHECK(a == 0 && b == 0);
    CHECK(s.commits == 0 && tm_test_cause(&s, TM_ABORT_EXPLICIT) >= 1);
  } else {
    CHECK(a == 1 && b == 0);
    CHECK(s.commits == 1 && s.commits_irrevocable == 1);
  }
}

static TM_TEST_TX void irrevocable_block(void) {
  TM_ATOMIC {
    tm_store(&a, tm_load(&a) + 1);
    tm_become_irrevocable();
    irrevocable_inside = tm_is_irrevocable();
  }
}

static void test_irrevocable(void) {
  a = 0;
  tm_stats s = tm_test_measure("irrevocable", irrevocable_block);
  CHECK(a == 1 && irrevocable_inside);
  CHECK(s.commits == 1 && s.commits_irrevocable == 1);
}

static TM_TEST_TX void syscall_block(void) {
  TM_ATOMIC { tm_store(&a, (uint64_t)syscall(SYS_getppid)); }
}

static void test_syscall(void) {
  a = 0;
  tm_stats s = tm_test_measure("syscall", syscall_block);
  CHECK(a == (uint64_t)getppid());
  CHECK(s.aborts >= 1 && s.commits_irrevocable == 1);
}

enum { BIG = 4 << 20 };
static char *big;

static TM_TEST_TX void capacity_block(void) {
  TM_ATOMIC {
    for (size_t i = 0; i < BIG; i += 64) tm_store((uint64_t *)(void *)(big + i), i);
  }
}

static void test_capacity(void) {
  big = aligned_alloc(64, BIG);
  CHECK(big != NULL);
  memset(big, 0, BIG); /* no page faults inside the attempts */
  tm_stats s = tm_test_measure("capacity", capacity_block);
  CHECK(*(uint64_t *)(void *)(big + BIG - 64) == BIG - 64);
  CHECK(s.commits == 1 && s.commits_irrevocable == 1 && s.aborts >= 1);
  free(big);
}

int main(void) {
  tm_test_watchdog(120);
  CHECKF(tm_test_option_is("tm", "rtm"), "run it with TXALLOC_TM=rtm");
  test_commit();
  test_restart();
  test_status();
  test_child();
  test_irrevocable();
  test_syscall();
  test_capacity();
  return check_exit();
}
