/* The inline load path's "off" view (tm.h: tm_fast_view_ is never NULL; outside a
 * transaction, in an irrevocable one, under ctl-wb, the mixing hash or the glock backend it
 * is tm_view_off_, whose lock check always fails, so the load goes to the library). Checks
 * that tm_load gives the right value everywhere the view is off or changes:
 *   - in a new thread that never ran a transaction, and in the main thread before its first;
 *   - outside a transaction after a commit, a top-level tm_abort and a restart;
 *   - inside a block: its own stores (ctl-wb keeps them in the write set, unlocked, so an
 *     inline load would miss them), also after tm_become_irrevocable;
 *   - a misaligned 8-byte load, inside and outside (never the inline path);
 * that the view is off again after each block (a view left on returns right values here but
 * logs reads outside any transaction), and that tm_view_off_ itself is never written (it is
 * shared by every thread).
 * Every design and the glock backend. */
#include "tm_test.h"

static struct {
  _Alignas(64) uint64_t x;
  _Alignas(64) unsigned char bytes[24];
} m;

#define CHECK_VIEW_OFF()                                                                           \
  CHECKF(tm_fast_view_ == &tm_view_off_, "the view is on at line %d", __LINE__)

static uint64_t misaligned(void) { return tm_load((const uint64_t *)(const void *)(m.bytes + 3)); }

static void *fresh_thread(void *arg) {
  (void)arg;
  uint64_t *seen = malloc(sizeof *seen);
  if (seen) *seen = tm_load(&m.x);
  return seen;
}

static void check_fresh_thread(uint64_t expected) {
  pthread_t t;
  void *seen = NULL;
  if (pthread_create(&t, NULL, fresh_thread, NULL) != 0 || pthread_join(t, &seen) != 0) {
    CHECKF(0, "cannot run a thread");
    return;
  }
  CHECK(seen != NULL && *(uint64_t *)seen == expected);
  free(seen);
}

static TM_TEST_TX void commit_store(uint64_t v) {
  TM_ATOMIC { tm_store(&m.x, v); }
}

static TM_TEST_TX void abort_store(uint64_t v) {
  TM_ATOMIC {
    tm_store(&m.x, v);
    tm_abort();
  }
}

static TM_TEST_TX uint64_t restart_then_store(uint64_t v) {
  volatile int runs = 0;
  TM_ATOMIC {
    tm_store(&m.x, v + (uint64_t)runs);
    if (++runs == 1) tm_restart();
  }
  return (uint64_t)runs;
}

/* Loads of the block's own stores (ctl-wb keeps them in the write set until its commit). */
static TM_TEST_TX void own_stores(uint64_t v, volatile uint64_t *seen, volatile uint64_t *odd) {
  TM_ATOMIC {
    tm_store(&m.x, v);
    *seen = tm_load(&m.x);
    *odd = misaligned();
  }
}

/* The same once irrevocable (which may restart the block first: a write set, under ctl-wb). */
static TM_TEST_TX void irrevocable_own_stores(uint64_t v, volatile uint64_t *seen) {
  TM_ATOMIC {
    tm_become_irrevocable();
    tm_store(&m.x, v);
    *seen = tm_load(&m.x);
  }
}

int main(void) {
  tm_test_watchdog(60);
  tm_test_print_config("load_view");
  m.x = 41;
  for (int i = 0; i < 24; i++) m.bytes[i] = (unsigned char)i;
  uint64_t expected_odd = 0;
  for (int i = 7; i >= 0; i--) expected_odd = expected_odd << 8 | (uint64_t)(3 + i);

  CHECK_VIEW_OFF();
  CHECK(tm_load(&m.x) == 41); /* before this thread's first transaction */
  check_fresh_thread(41);
  CHECK(misaligned() == expected_odd);

  commit_store(42);
  CHECK_VIEW_OFF();
  CHECK(tm_load(&m.x) == 42 && m.x == 42);
  abort_store(99);
  CHECK_VIEW_OFF();
  CHECK(tm_load(&m.x) == 42 && m.x == 42);
  CHECK(restart_then_store(50) == 2);
  CHECK_VIEW_OFF();
  CHECK(tm_load(&m.x) == 51 && m.x == 51);
  check_fresh_thread(51);

  volatile uint64_t seen = 0, odd = 0;
  own_stores(60, &seen, &odd);
  CHECK_VIEW_OFF();
  CHECK(seen == 60 && m.x == 60);
  CHECK(odd == expected_odd);
  irrevocable_own_stores(61, &seen);
  CHECK_VIEW_OFF();
  CHECK(seen == 61 && m.x == 61);
  CHECK(tm_load(&m.x) == 61);

  CHECK(tm_view_off_.end == 0 && tm_view_off_.ort_amask == 0 && tm_view_off_.rset == NULL &&
        tm_view_off_.rlast == NULL && tm_view_off_.rlimit == NULL);
  return check_exit();
}
