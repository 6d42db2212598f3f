/* include/txalloc/tm.h from C++ (g++, gnu++17): the header compiles (tm_restart and
 * tm_abort are [[noreturn]] there, not _Noreturn), and blocks behave as in C on both entries
 * (built twice, the second time with TXALLOC_TM_PORTABLE_ENTRY): a restart runs the body
 * again, a child's tm_abort keeps the parent's stores, a top-level tm_abort discards the
 * block's stores, tm_malloc and tm_free commit. C++ has no _Generic:
 * tm_load / tm_store are C-only, C++ code calls the sized functions. */
#include <txalloc/tm.h>

#include "check.h"

namespace {

struct alignas(64) words {
  uint64_t x = 0, y = 0;
  void *p = nullptr;
};
words m;

void restart_runs_again() {
  volatile int runs = 0;
  TM_ATOMIC {
    tm_store_u64(&m.x, tm_load_u64(&m.x) + 1);
    if (++runs < 3) tm_restart();
  }
  CHECK(runs == 3);
  CHECK(m.x == 1); /* the stores of the two restarted attempts are gone */
}

void child_abort_keeps_parent() {
  m.x = 10;
  m.y = 20;
  volatile int after_child = 0;
  TM_ATOMIC {
    tm_store_u64(&m.x, 11);
    TM_ATOMIC {
      tm_store_u64(&m.y, 21);
      tm_abort();
    }
    after_child = 1;
  }
  CHECK(after_child == 1);
  CHECK(m.x == 11 && m.y == 20);
}

void top_abort_discards_block() {
  m.x = 5;
  TM_ATOMIC {
    void *block = tm_malloc(64);
    tm_store_ptr(&m.p, block);
    tm_store_u64(&m.x, 6);
    tm_abort();
  }
  CHECK(m.x == 5 && m.p == nullptr);
  CHECK(!tm_in_transaction());
}

void committed_malloc_and_free() {
  TM_ATOMIC { tm_store_ptr(&m.p, tm_malloc(128)); }
  CHECK(m.p != nullptr);
  TM_ATOMIC {
    tm_free(tm_load_ptr(&m.p));
    tm_store_ptr(&m.p, nullptr);
  }
  CHECK(m.p == nullptr);
}

} // namespace

int main() {
  restart_runs_again();
  child_abort_keeps_parent();
  top_abort_discards_block();
  committed_malloc_and_free();
  return check_exit();
}
