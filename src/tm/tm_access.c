/* The public transactional loads and stores, the front-end's side: every access that the
 * STM's inline paths (stm_access.c) do not take. Outside a transaction an access is a
 * plain atomic load or store of the object's own size (memcpy when misaligned); inside
 * one it goes to the running backend's load or store operation. A backend that isolates
 * transactions from the API's plain stores makes them itself (its plain_store). */
#include <string.h>

#include "tm/tm_backend.h"
#include "tm/tm_syncchar.h"

uint64_t tm_load_slow_(tm_tx *tx, uintptr_t a, unsigned size) {
  if (tx && tx->mode != TM_MODE_NONE) {
    if (TM_UNLIKELY(tm_syncchar_self != NULL)) tm_syncchar_access(a, size, false);
    return tm_be.load(tx, a, size);
  }
  if ((a & (size - 1)) == 0) return tm_plain_load(a, size);
  uint64_t v = 0;
  memcpy(&v, (const void *)a, size); /* misaligned, outside a transaction */
  return v;
}

void tm_store_slow_(tm_tx *tx, uintptr_t a, unsigned size, uint64_t v) {
  if (tx && tx->mode != TM_MODE_NONE) {
    if (TM_UNLIKELY(tm_syncchar_self != NULL)) tm_syncchar_access(a, size, true);
    tm_be.store(tx, a, size, v);
    return;
  }
  /* tm_be is set by the runtime's initialisation: a thread with a descriptor comes after
   * it; one without makes sure of it (pthread_once's fast path). */
  if (TM_UNLIKELY(!tx)) tm_runtime_init();
  if (TM_UNLIKELY(tm_be.plain_store != NULL)) {
    tm_be.plain_store(a, size, v);
    return;
  }
  if ((a & (size - 1)) == 0)
    tm_plain_store(a, size, v);
  else
    memcpy((void *)a, &v, size);
}

uint8_t tm_load_u8(const volatile uint8_t *addr) {
  return (uint8_t)tm_load_slow_(tm_self, (uintptr_t)addr, 1);
}
uint16_t tm_load_u16(const volatile uint16_t *addr) {
  return (uint16_t)tm_load_slow_(tm_self, (uintptr_t)addr, 2);
}
uint32_t tm_load_u32(const volatile uint32_t *addr) {
  return (uint32_t)tm_load_slow_(tm_self, (uintptr_t)addr, 4);
}
float tm_load_float(const volatile float *addr) {
  uint32_t bits = tm_load_u32((const volatile uint32_t *)(const volatile void *)addr);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
void tm_store_u8(volatile uint8_t *addr, uint8_t value) {
  tm_store_slow_(tm_self, (uintptr_t)addr, 1, value);
}
void tm_store_u16(volatile uint16_t *addr, uint16_t value) {
  tm_store_slow_(tm_self, (uintptr_t)addr, 2, value);
}
void tm_store_u32(volatile uint32_t *addr, uint32_t value) {
  tm_store_slow_(tm_self, (uintptr_t)addr, 4, value);
}
void tm_store_float(volatile float *addr, float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  tm_store_u32((volatile uint32_t *)(volatile void *)addr, bits);
}
