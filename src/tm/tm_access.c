/* The public transactional loads and stores, the front-end's side: every access that the
 * STM's inline paths (stm_access.c) do not take. Outside a transaction an access is a
 * plain atomic load or store of the object's own size (memcpy when misaligned); inside
 * one it goes to the running backend's load or store operation. */
#include <string.h>

#include "tm/tm_backend.h"

/* Exactly the object's bytes; excluded from AddressSanitizer like the STM's word reads. */
__attribute__((no_sanitize("address"))) static uint64_t plain_load(uintptr_t a, unsigned size) {
  switch (size) {
  case 1: return __atomic_load_n((const uint8_t *)a, __ATOMIC_ACQUIRE);
  case 2: return __atomic_load_n((const uint16_t *)a, __ATOMIC_ACQUIRE);
  case 4: return __atomic_load_n((const uint32_t *)a, __ATOMIC_ACQUIRE);
  default: return __atomic_load_n((const uint64_t *)a, __ATOMIC_ACQUIRE);
  }
}

static void plain_store(uintptr_t a, unsigned size, uint64_t v) {
  switch (size) {
  case 1: __atomic_store_n((uint8_t *)a, (uint8_t)v, __ATOMIC_RELEASE); break;
  case 2: __atomic_store_n((uint16_t *)a, (uint16_t)v, __ATOMIC_RELEASE); break;
  case 4: __atomic_store_n((uint32_t *)a, (uint32_t)v, __ATOMIC_RELEASE); break;
  default: __atomic_store_n((uint64_t *)a, v, __ATOMIC_RELEASE); break;
  }
}

uint64_t tm_load_slow_(tm_tx *tx, uintptr_t a, unsigned size) {
  if (tx && tx->mode != TM_MODE_NONE) return tm_be.load(tx, a, size);
  if ((a & (size - 1)) == 0) return plain_load(a, size);
  uint64_t v = 0;
  memcpy(&v, (const void *)a, size); /* misaligned, outside a transaction */
  return v;
}

void tm_store_slow_(tm_tx *tx, uintptr_t a, unsigned size, uint64_t v) {
  if (tx && tx->mode != TM_MODE_NONE) {
    tm_be.store(tx, a, size, v);
    return;
  }
  if ((a & (size - 1)) == 0)
    plain_store(a, size, v);
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
