/* memcpy, memmove and memset inside transactions: every variant by name (transactional or
 * plain source and destination), the calls GCC emits for struct copies and string
 * functions, ranges of every length and alignment around a word, overlapping moves both
 * ways, and a cancel that undoes them all. */
#include <string.h>

#include "check.h"
#include "itm_test.h"

#define DECLARE_COPY(V)                                                                            \
  void _ITM_memcpy##V(void *, const void *, size_t) ITM_PURE;                                      \
  void _ITM_memmove##V(void *, const void *, size_t) ITM_PURE;
DECLARE_COPY(RnWt)
DECLARE_COPY(RnWtaR)
DECLARE_COPY(RnWtaW)
DECLARE_COPY(RtWn)
DECLARE_COPY(RtWt)
DECLARE_COPY(RtWtaR)
DECLARE_COPY(RtWtaW)
DECLARE_COPY(RtaRWn)
DECLARE_COPY(RtaRWt)
DECLARE_COPY(RtaRWtaR)
DECLARE_COPY(RtaRWtaW)
DECLARE_COPY(RtaWWn)
DECLARE_COPY(RtaWWt)
DECLARE_COPY(RtaWWtaR)
DECLARE_COPY(RtaWWtaW)
void _ITM_memsetW(void *, int, size_t) ITM_PURE;
void _ITM_memsetWaR(void *, int, size_t) ITM_PURE;
void _ITM_memsetWaW(void *, int, size_t) ITM_PURE;

/* The entry points are called through pointers: their type says they are pure. */
typedef void copy_type(void *, const void *, size_t) ITM_PURE;
typedef void set_type(void *, int, size_t) ITM_PURE;
typedef copy_type *copy_fn;
typedef set_type *set_fn;

#define SIZE 1400 /* more than the library's copy chunk, so chunks meet */
static unsigned char src[SIZE], dst[SIZE], want[SIZE];
static long copies; /* each block updates it: a block with no shared access is no transaction */

static void pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + seed);
}

/* Copies [off, off + len) of src to dst + doff through `fn` inside a transaction. */
static void check_copy(const char *name, copy_fn fn, size_t off, size_t doff, size_t len) {
  pattern(src, SIZE, 3);
  pattern(dst, SIZE, 100);
  memcpy(want, dst, SIZE);
  memcpy(want + doff, src + off, len);
  __transaction_atomic {
    copies++;
    fn(dst + doff, src + off, len);
  }
  CHECKF(memcmp(dst, want, SIZE) == 0, "%s: off %zu doff %zu len %zu", name, off, doff, len);
}

static void check_move(const char *name, copy_fn fn, size_t from, size_t to, size_t len) {
  pattern(dst, SIZE, 5);
  memcpy(want, dst, SIZE);
  memmove(want + to, want + from, len);
  __transaction_atomic {
    copies++;
    fn(dst + to, dst + from, len);
  }
  CHECKF(memcmp(dst, want, SIZE) == 0, "%s: from %zu to %zu len %zu", name, from, to, len);
}

static void check_set(const char *name, set_fn fn, size_t off, size_t len) {
  pattern(dst, SIZE, 9);
  memcpy(want, dst, SIZE);
  memset(want + off, 0xab, len);
  __transaction_atomic {
    copies++;
    fn(dst + off, 0xab, len);
  }
  CHECKF(memcmp(dst, want, SIZE) == 0, "%s: off %zu len %zu", name, off, len);
}

static const size_t lengths[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 64, 511, 512, 513, 1300};

static void test_variants(void) {
  struct {
    const char *name;
    copy_fn copy, move;
  } variants[] = {
#define ENTRY(V) {#V, _ITM_memcpy##V, _ITM_memmove##V},
      ENTRY(RnWt) ENTRY(RnWtaR) ENTRY(RnWtaW) ENTRY(RtWn) ENTRY(RtWt) ENTRY(RtWtaR) ENTRY(RtWtaW)
          ENTRY(RtaRWn) ENTRY(RtaRWt) ENTRY(RtaRWtaR) ENTRY(RtaRWtaW) ENTRY(RtaWWn) ENTRY(RtaWWt)
              ENTRY(RtaWWtaR) ENTRY(RtaWWtaW)
#undef ENTRY
  };
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
      for (size_t a = 0; a < 8; a += 3) {
        size_t len = lengths[l];
        if (len + a + 8 > SIZE) continue;
        check_copy(variants[v].name, variants[v].copy, a, 8 - a, len);
        check_copy(variants[v].name, variants[v].move, a, a, len);
        if (len + 40 <= SIZE) {
          check_move(variants[v].name, variants[v].move, a, a + 5, len);  /* forwards overlap */
          check_move(variants[v].name, variants[v].move, a + 37, a, len); /* backwards */
        }
      }
  set_fn sets[] = {_ITM_memsetW, _ITM_memsetWaR, _ITM_memsetWaW};
  for (size_t s = 0; s < 3; s++)
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
      for (size_t a = 0; a < 8; a++)
        if (lengths[l] + a <= SIZE) check_set("memset", sets[s], a, lengths[l]);
}

/* What GCC emits for plain code: struct assignment, memcpy, memset, memmove. */
struct record {
  long id;
  char name[40];
  double values[5];
};
static struct record table[4];

static void test_compiled(void) {
  struct record r = {.id = 7, .name = "seven", .values = {1, 2, 3, 4, 5}};
  __transaction_atomic {
    table[0] = r;
    memcpy(&table[1], &table[0], sizeof table[1]);
    memset(table[2].name, 'z', 10);
    memmove(table[3].name, table[1].name, 6);
  }
  CHECK(table[1].id == 7 && strcmp(table[1].name, "seven") == 0 && table[1].values[4] == 5);
  CHECK(memcmp(table[2].name, "zzzzzzzzzz", 10) == 0);
  CHECK(strcmp(table[3].name, "seven") == 0);

  struct record local;
  __transaction_atomic { local = table[1]; }
  CHECK(local.id == 7 && local.values[2] == 3);

  /* A cancel undoes copies and sets. */
  __transaction_atomic {
    memset(&table[0], 0, sizeof table[0]);
    table[1] = table[2];
    __transaction_cancel;
  }
  CHECK(table[0].id == 7 && strcmp(table[1].name, "seven") == 0);
}

int main(void) {
  test_variants();
  test_compiled();
  return check_exit();
}
