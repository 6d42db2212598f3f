/* Every barrier of the ABI, for every type: the seven read and write variants called by
 * name inside a transaction (a read sees the transaction's own write; after the commit the
 * memory holds it; a cancelled transaction's writes are gone), the barriers GCC emits for
 * plain C code of each type, the logging functions, and sub-word stores that must leave
 * their neighbours alone. */
#include <complex.h>
#include <string.h>

#include "check.h"
#include "itm_test.h"

typedef int m64 __attribute__((vector_size(8), may_alias));
typedef float m128 __attribute__((vector_size(16), may_alias));
typedef float m256 __attribute__((vector_size(32), may_alias));

#define DECLARE(N, T)                                                                              \
  T _ITM_R##N(const T *) ITM_PURE;                                                                 \
  T _ITM_RaR##N(const T *) ITM_PURE;                                                               \
  T _ITM_RaW##N(const T *) ITM_PURE;                                                               \
  T _ITM_RfW##N(const T *) ITM_PURE;                                                               \
  void _ITM_W##N(T *, T) ITM_PURE;                                                                 \
  void _ITM_WaR##N(T *, T) ITM_PURE;                                                               \
  void _ITM_WaW##N(T *, T) ITM_PURE;                                                               \
  void _ITM_L##N(const T *) ITM_PURE;

#define SCALAR_EQ(x, y) ((x) == (y))
#define BYTES_EQ(x, y) (memcmp(&(x), &(y), sizeof(x)) == 0)

/* For type T (suffix N), values A and B: shared[0..2] start at zero. */
#define BARRIER_TEST(N, T, A, B, EQ)                                                               \
  DECLARE(N, T)                                                                                    \
  static T shared_##N[3];                                                                          \
  static void test_##N(void) {                                                                     \
    T a = A, b = B, zero;                                                                          \
    memset(&zero, 0, sizeof zero);                                                                 \
    T r_own, r_rar, r_raw, r_rfw;                                                                  \
    __transaction_atomic {                                                                         \
      _ITM_W##N(&shared_##N[0], a);                                                                \
      r_own = _ITM_R##N(&shared_##N[0]);                                                           \
      r_rar = _ITM_RaR##N(&shared_##N[0]);                                                         \
      r_rfw = _ITM_RfW##N(&shared_##N[1]);                                                         \
      _ITM_WaR##N(&shared_##N[1], a);                                                              \
      _ITM_WaW##N(&shared_##N[1], b);                                                              \
      r_raw = _ITM_RaW##N(&shared_##N[1]);                                                         \
    }                                                                                              \
    CHECKF(EQ(r_own, a) && EQ(r_rar, a), #N ": a read sees the transaction's write");              \
    CHECKF(EQ(r_rfw, zero), #N ": read for write before the write");                               \
    CHECKF(EQ(r_raw, b), #N ": read after write after write");                                     \
    CHECKF(EQ(shared_##N[0], a) && EQ(shared_##N[1], b), #N ": committed");                        \
    CHECKF(EQ(shared_##N[2], zero), #N ": untouched neighbour");                                   \
    __transaction_atomic {                                                                         \
      _ITM_W##N(&shared_##N[0], b);                                                                \
      _ITM_WaW##N(&shared_##N[2], a);                                                              \
      __transaction_cancel;                                                                        \
    }                                                                                              \
    CHECKF(EQ(shared_##N[0], a) && EQ(shared_##N[2], zero), #N ": cancelled writes are gone");     \
    /* The barriers GCC emits for plain code of the type. */                                       \
    __transaction_atomic { shared_##N[2] = shared_##N[1]; }                                        \
    CHECKF(EQ(shared_##N[2], b), #N ": compiler-emitted barriers");                                \
    /* Logging: a logged local gets its value back when the transaction rolls back. */             \
    T local = a;                                                                                   \
    __transaction_atomic {                                                                         \
      _ITM_L##N(&local);                                                                           \
      local = b;                                                                                   \
      __transaction_cancel;                                                                        \
    }                                                                                              \
    CHECKF(EQ(local, a), #N ": a logged value is restored by the cancel");                         \
  }

BARRIER_TEST(U1, uint8_t, 0xa5, 0x5a, SCALAR_EQ)
BARRIER_TEST(U2, uint16_t, 0xa5a5, 0x5a5a, SCALAR_EQ)
BARRIER_TEST(U4, uint32_t, 0xa5a5a5a5u, 0x5a5a5a5au, SCALAR_EQ)
BARRIER_TEST(U8, uint64_t, 0xa5a5a5a5a5a5a5a5ull, 0x5a5a5a5a5a5a5a5aull, SCALAR_EQ)
BARRIER_TEST(F, float, 1.5f, -2.25f, SCALAR_EQ)
BARRIER_TEST(D, double, 1.5, -2.25, SCALAR_EQ)
BARRIER_TEST(E, long double, 1.5L, -2.25L, SCALAR_EQ)
BARRIER_TEST(CF, float _Complex, 1.5f + 2.0f * I, -3.0f - 0.5f * I, SCALAR_EQ)
BARRIER_TEST(CD, double _Complex, 1.5 + 2.0 * I, -3.0 - 0.5 * I, SCALAR_EQ)
BARRIER_TEST(CE, long double _Complex, 1.5L + 2.0L * I, -3.0L - 0.5L * I, SCALAR_EQ)
BARRIER_TEST(M64, m64, ((m64){1, -2}), ((m64){-3, 4}), BYTES_EQ)
BARRIER_TEST(M128, m128, ((m128){1, 2, 3, 4}), ((m128){-1, -2, -3, -4}), BYTES_EQ)

/* The 32-byte vectors travel in AVX registers: only on a machine with AVX. */
#pragma GCC push_options
#pragma GCC target("avx")
BARRIER_TEST(M256, m256, ((m256){1, 2, 3, 4, 5, 6, 7, 8}), ((m256){-1, -2, -3, -4, -5, -6, -7, -8}),
             BYTES_EQ)
#pragma GCC pop_options

/* Sub-word stores touch their bytes only, at every offset of a word. */
static unsigned char bytes[24];
static void test_sub_word(void) {
  for (unsigned off = 0; off < 8; off++) {
    memset(bytes, 0x11, sizeof bytes);
    __transaction_atomic {
      bytes[8 + off] = 0xee;
      if (off % 2 == 0) _ITM_WU2((uint16_t *)(void *)&bytes[off], 0xdddd);
      if (off % 4 == 0) _ITM_WU4((uint32_t *)(void *)&bytes[16], 0xcccccccc);
    }
    for (unsigned i = 0; i < sizeof bytes; i++) {
      unsigned char want = 0x11;
      if (i == 8 + off) want = 0xee;
      if (off % 2 == 0 && (i == off || i == off + 1)) want = 0xdd;
      if (off % 4 == 0 && i >= 16 && i < 20) want = 0xcc;
      CHECKF(bytes[i] == want, "offset %u: byte %u is %#x, not %#x", off, i, bytes[i], want);
    }
  }
}

/* Words that straddle two 8-byte words (packed structs). */
struct __attribute__((packed)) packed {
  char c;
  uint64_t u8;
  uint32_t u4;
  double d;
};
static struct packed packed_shared;
static void test_misaligned(void) {
  __transaction_atomic {
    packed_shared.c = 'x';
    packed_shared.u8 = 0x0102030405060708ull;
    packed_shared.u4 = 0x0a0b0c0d;
    packed_shared.d = 3.25;
  }
  uint64_t u8;
  uint32_t u4;
  double d;
  __transaction_atomic {
    u8 = packed_shared.u8;
    u4 = packed_shared.u4;
    d = packed_shared.d;
  }
  CHECK(packed_shared.c == 'x');
  CHECK(u8 == 0x0102030405060708ull);
  CHECK(u4 == 0x0a0b0c0d);
  CHECK(d == 3.25);
}

static long touched; /* a block with no shared access is no transaction at all for GCC */

int main(void) {
  CHECK(_ITM_inTransaction() == outside_transaction);
  CHECK(_ITM_versionCompatible(90));
  CHECK(_ITM_getTransactionId() == 1);
  int in = -1;
  uint64_t id = 0;
  __transaction_atomic {
    touched++;
    in = _ITM_inTransaction();
    id = _ITM_getTransactionId();
  }
  CHECK(in == in_retryable_transaction);
  CHECK(id > 1);
  test_U1();
  test_U2();
  test_U4();
  test_U8();
  test_F();
  test_D();
  test_E();
  test_CF();
  test_CD();
  test_CE();
  test_M64();
  test_M128();
  if (__builtin_cpu_supports("avx")) test_M256();
  test_sub_word();
  test_misaligned();
  return check_exit();
}
