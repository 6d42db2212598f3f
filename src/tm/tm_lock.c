/* The lock backend: one global lock serialises every transaction (the baseline, and later
 * the recorder for the conflict analysis). Stores write memory in place and log the old
 * value (write-set entries used as an undo log: addr = byte address, mask = size), so
 * tm_restart, tm_abort and closed nesting work as with the STM. No conflicts exist: the
 * only aborts are explicit. */
#include "tm/tm_internal.h"

static struct {
  _Alignas(TM_CACHE_LINE) int held;
  char pad_[TM_CACHE_LINE - sizeof(int)];
} global_lock;

void tm_lock_begin(tm_tx *tx) {
  for (unsigned i = 0;; i++) {
    if (!__atomic_load_n(&global_lock.held, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&global_lock.held, 1, __ATOMIC_ACQUIRE))
      break;
    tm_pause_or_yield(i);
  }
  tx->mode = TM_MODE_LOCK;
  tx->wn = 0;
  tm_rset_truncate(tx, 0);
}

static void release(void) { __atomic_store_n(&global_lock.held, 0, __ATOMIC_RELEASE); }

void tm_lock_commit(tm_tx *tx) {
  tx->wn = 0;
  release();
}

static void store_sized(uintptr_t addr, unsigned size, uint64_t value) {
  switch (size) {
  case 1: __atomic_store_n((uint8_t *)addr, (uint8_t)value, __ATOMIC_RELAXED); break;
  case 2: __atomic_store_n((uint16_t *)addr, (uint16_t)value, __ATOMIC_RELAXED); break;
  case 4: __atomic_store_n((uint32_t *)addr, (uint32_t)value, __ATOMIC_RELAXED); break;
  default: __atomic_store_n((uint64_t *)addr, value, __ATOMIC_RELAXED); break;
  }
}

uint64_t tm_lock_load(tm_tx *tx, uintptr_t addr, unsigned size) {
  (void)tx;
  switch (size) {
  case 1: return __atomic_load_n((const uint8_t *)addr, __ATOMIC_RELAXED);
  case 2: return __atomic_load_n((const uint16_t *)addr, __ATOMIC_RELAXED);
  case 4: return __atomic_load_n((const uint32_t *)addr, __ATOMIC_RELAXED);
  default: return __atomic_load_n((const uint64_t *)addr, __ATOMIC_RELAXED);
  }
}

void tm_lock_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  if (TM_UNLIKELY(tx->wn >= TM_WSET_MAX)) tm_fatal("a transaction wrote more than 2^20 times");
  tm_wentry *e = &tx->wset[tx->wn++];
  e->addr = addr;
  e->mask = size;
  e->value = tm_lock_load(tx, addr, size);
  store_sized(addr, size, value);
}

void tm_lock_rollback(tm_tx *tx, unsigned level) {
  size_t mark = level == 1 ? 0 : tx->levels[level]->wset_mark;
  for (size_t i = tx->wn; i-- > mark;) {
    tm_wentry *e = &tx->wset[i];
    store_sized(e->addr, (unsigned)e->mask, e->value);
  }
  tx->wn = mark;
  if (level == 1) release();
}
