/* Stores through barriers to the thread's own stack. GCC stores to a local through a
 * barrier when its address escapes, and may read it back with a plain load, so such a
 * store must reach memory at once (not a write set):
 *   - in a frame the transaction made (a callee's array): the plain read sees it, and the
 *     commit writes nothing into the dead frame (a write-back commit would write into the
 *     frames of the commit itself);
 *   - in the frame around the block: the plain read sees it, the commit keeps it, and a
 *     cancel puts the old value back. */
#include "check.h"
#include "itm_test.h"

void _ITM_WU8(uint64_t *, uint64_t) ITM_PURE;
void _ITM_WU4(uint32_t *, uint32_t) ITM_PURE;

static uint64_t shared[16];

/* A plain load, as GCC makes of a local (a pure function runs uninstrumented). */
__attribute__((transaction_pure, noinline)) static uint64_t peek8(const uint64_t *p) { return *p; }
__attribute__((transaction_pure, noinline)) static uint32_t peek4(const uint32_t *p) { return *p; }

/* Fills an array of its own frame through barriers and reads it back plainly. */
__attribute__((transaction_safe, noinline)) static uint64_t callee_sum(unsigned n) {
  uint64_t local[16];
  for (unsigned i = 0; i < n; i++) _ITM_WU8(&local[i], shared[i] + i);
  uint64_t sum = 0;
  for (unsigned i = 0; i < n; i++) sum += peek8(&local[i]);
  return sum;
}

static void test_callee_frames(void) {
  for (unsigned i = 0; i < 16; i++) shared[i] = i;
  for (int round = 0; round < 1000; round++) {
    uint64_t a, b;
    __transaction_atomic {
      shared[round % 16]++;
      a = callee_sum(16);
      b = callee_sum(8);
    }
    uint64_t want_a = 0, want_b = 0;
    for (unsigned i = 0; i < 16; i++) want_a += shared[i] + i;
    for (unsigned i = 0; i < 8; i++) want_b += shared[i] + i;
    CHECKF(a == want_a && b == want_b, "round %d: sums %lu %lu, want %lu %lu", round,
           (unsigned long)a, (unsigned long)b, (unsigned long)want_a, (unsigned long)want_b);
  }
}

static void test_outer_frame(void) {
  uint64_t outer[4] = {1, 2, 3, 4};
  uint32_t small = 7;
  uint64_t seen = 0;
  __transaction_atomic {
    shared[0]++;
    _ITM_WU8(&outer[1], 20);
    _ITM_WU4(&small, 70);
    seen = peek8(&outer[1]) + peek4(&small);
  }
  CHECK(seen == 90);
  CHECK(outer[1] == 20 && small == 70);
  __transaction_atomic {
    shared[0]++;
    _ITM_WU8(&outer[2], 30);
    _ITM_WU4(&small, 700);
    seen = peek8(&outer[2]);
    __transaction_cancel;
  }
  CHECK(outer[2] == 3 && small == 70); /* the cancel put them back */
  CHECK(outer[0] == 1 && outer[3] == 4);
}

int main(void) {
  test_callee_frames();
  test_outer_frame();
  return check_exit();
}
