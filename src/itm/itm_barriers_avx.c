/* The barriers and the logging function of the 32-byte vector type: compiled with -mavx,
 * because they take and return it in AVX registers (only AVX code calls them). */
#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

static inline itm_m256 load_M256(const itm_m256 *p) {
  itm_m256 v;
  itm_load_bytes(&v, p, sizeof v);
  return v;
}
static inline void store_M256(itm_m256 *p, itm_m256 v) { itm_store_bytes(p, &v, sizeof v); }

ITM_DEFINE_BARRIERS(M256, itm_m256)
void _ITM_LM256(const itm_m256 *addr) { itm_log_memory(addr, sizeof *addr); }
