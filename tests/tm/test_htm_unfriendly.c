/* htm-emul's unfriendly aborts: an allocation inside a transaction that reaches the OS
 * (a large tm_malloc maps memory) dooms the attempt through the OS layer's observer; the
 * allocation itself completes, the attempt aborts at its next access with cause unfriendly
 * (status 0, as RTM reports a system call), txmem frees what it allocated, and the block
 * completes on the fallback at once. An allocation served without a system call does not
 * abort. The allocator's state stays consistent: the memory is allocated and freed again
 * many times afterwards. */
#include "tm_test.h"

#define LARGE ((size_t)8 << 20)

static _Alignas(64) uint64_t shared;
static volatile int runs;
static void *volatile kept;

static TM_TEST_TX void allocate_large(void) {
  runs = 0;
  TM_ATOMIC {
    runs++;
    char *p = tm_malloc(LARGE);
    p[0] = 1;
    p[LARGE - 1] = 2;
    tm_store(&shared, tm_load(&shared) + 1); /* the next access: the doomed attempt aborts */
    kept = p;
  }
}

static TM_TEST_TX void allocate_small(void) {
  runs = 0;
  TM_ATOMIC {
    runs++;
    void *p = tm_malloc(48);
    tm_store(&shared, tm_load(&shared) + 1);
    tm_free(p);
  }
}

int main(void) {
  tm_test_watchdog(120);
  tm_test_print_config("htm_unfriendly");
  /* The thread's allocator is set up before the measurements. */
  free(malloc(48));
  allocate_small();

  tm_stats s = tm_test_measure("large", allocate_large);
  CHECK(s.aborts == 1 && tm_test_cause(&s, TM_ABORT_UNFRIENDLY) == 1);
  CHECK(tm_last_abort_status() == 0);
  CHECK(runs == 2 && s.commits == 1 && s.commits_irrevocable == 1);
  CHECK(shared == 2);
  CHECK(((char *)kept)[LARGE - 1] == 2);
  tm_free(kept);

  s = tm_test_measure("small", allocate_small);
  CHECK(s.aborts == 0 && runs == 1 && s.commits_irrevocable == 0);
  CHECK(shared == 3);

  /* Allocate and free large blocks again, outside and inside transactions. */
  for (int i = 0; i < 20; i++) {
    allocate_large();
    CHECK(((char *)kept)[0] == 1);
    tm_free(kept);
  }
  CHECK(shared == 23);
  return check_exit();
}
