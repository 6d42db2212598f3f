// C++ in ABI transactions: new and delete inside a block (the transactional clones of the
// global operators: a cancelled block's objects are given back, a delete takes effect at
// the commit), and an exception thrown inside a block, which commits it on the way out.
#include <cstdint>
#include <new>

#include "check.h"
#include "txalloc/txmem.h"

struct item {
  long value;
  item *next;
};

static item *list;
static long counter;

static void test_new_delete() {
  txmem_stats before, after;
  txmem_stats_get(&before);
  for (int i = 0; i < 100; i++) {
    __transaction_atomic {
      item *n = new item;
      n->value = i;
      n->next = list;
      list = n;
      long *arr = new long[4];
      arr[0] = i;
      counter += arr[0];
      delete[] arr;
      if (i % 2) __transaction_cancel;
    }
  }
  long count = 0, sum = 0;
  for (item *n = list; n; n = n->next) count++, sum += n->value;
  CHECK(count == 50);
  CHECK(sum == 2450); // 0 + 2 + ... + 98
  while (list) {
    __transaction_atomic {
      item *n = list;
      list = n->next;
      delete n;
    }
  }
  txmem_stats_get(&after);
  CHECK(after.tx_mallocs - before.tx_mallocs == 200);
  CHECK(after.aborted_allocs - before.aborted_allocs >= 50); // the cancelled blocks' items
}

struct failure {
  int code;
};

static void test_throw() {
  counter = 0;
  int caught = 0;
  try {
    __transaction_atomic {
      counter = 1;
      if (counter) throw failure{7};
      counter = 2;
    }
  } catch (const failure &f) {
    caught = f.code;
  }
  CHECK(caught == 7);
  CHECK(counter == 1); // the block committed as the exception left it
  __transaction_atomic { counter++; }
  CHECK(counter == 2); // and the thread is outside any transaction again
}

int main() {
  test_new_delete();
  test_throw();
  return check_exit();
}
