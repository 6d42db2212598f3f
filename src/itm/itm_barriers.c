/* The read and write barriers, one set per type of ITM_FOR_EACH_TYPE. Words of 1 to 8
 * bytes and floats are one tm_load/tm_store (an aligned 8-byte read takes tm.h's inline
 * path); the wider types (long double, the complex types, the vectors) are byte ranges
 * (itm_memops.c). */
#include <string.h>

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

static inline uint8_t load_U1(const uint8_t *p) { return tm_load_u8(p); }
static inline uint16_t load_U2(const uint16_t *p) { return tm_load_u16(p); }
static inline uint32_t load_U4(const uint32_t *p) { return tm_load_u32(p); }
static inline uint64_t load_U8(const uint64_t *p) { return tm_load_inline_u64(p); }
static inline float load_F(const float *p) { return tm_load_float(p); }
static inline double load_D(const double *p) { return tm_load_inline_double(p); }
/* Stores to the thread's stack go to memory (itm_on_stack). */
#define ITM_STORE(N, T, tm_store_fn)                                                               \
  static inline void store_##N(T *p, T v) {                                                        \
    if (ITM_UNLIKELY(itm_on_stack(p, sizeof v)))                                                   \
      itm_stack_store(p, &v, sizeof v);                                                            \
    else                                                                                           \
      tm_store_fn(p, v);                                                                           \
  }
ITM_STORE(U1, uint8_t, tm_store_u8)
ITM_STORE(U2, uint16_t, tm_store_u16)
ITM_STORE(U4, uint32_t, tm_store_u32)
ITM_STORE(U8, uint64_t, tm_store_u64)
ITM_STORE(F, float, tm_store_float)
ITM_STORE(D, double, tm_store_double)

#define ITM_WIDE(N, T)                                                                             \
  static inline T load_##N(const T *p) {                                                           \
    T v;                                                                                           \
    itm_load_bytes(&v, p, sizeof v);                                                               \
    return v;                                                                                      \
  }                                                                                                \
  static inline void store_##N(T *p, T v) { itm_store_bytes(p, &v, sizeof v); }
ITM_WIDE(E, long double)
ITM_WIDE(CF, float _Complex)
ITM_WIDE(CD, double _Complex)
ITM_WIDE(CE, long double _Complex)
ITM_WIDE(M64, itm_m64)
ITM_WIDE(M128, itm_m128)

ITM_FOR_EACH_TYPE(ITM_DEFINE_BARRIERS)
