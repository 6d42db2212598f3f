/* In-place accesses with an undo log, for the attempts that run alone (the glock backend,
 * htm-emul's fallback): loads read memory, stores write it at once and log the bytes they
 * replaced in the write set (addr = the byte address, mask = the access size), so a
 * rollback of a level writes them back, newest first. Misaligned accesses go byte by
 * byte. */
#include "tm/tm_backend.h"

uint64_t tm_in_place_load(tm_tx *tx, uintptr_t addr, unsigned size) {
  (void)tx;
  if ((addr & (size - 1)) == 0) return tm_plain_load(addr, size);
  uint64_t v = 0;
  for (unsigned i = 0; i < size; i++) v |= tm_plain_load(addr + i, 1) << (8 * i);
  return v;
}

static void store_logged(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  if (TM_UNLIKELY(tx->wn >= TM_WSET_MAX)) tm_fatal("a transaction wrote more than 2^20 times");
  tm_wentry *e = &tx->wset[tx->wn++];
  e->addr = addr;
  e->mask = size;
  e->value = tm_plain_load(addr, size);
  tm_plain_store(addr, size, value);
}

void tm_in_place_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  if ((addr & (size - 1)) == 0) {
    store_logged(tx, addr, size, value);
    return;
  }
  for (unsigned i = 0; i < size; i++) store_logged(tx, addr + i, 1, (value >> (8 * i)) & 0xff);
}

void tm_in_place_undo(tm_tx *tx, size_t mark) {
  for (size_t i = tx->wn; i-- > mark;) {
    tm_wentry *e = &tx->wset[i];
    tm_plain_store(e->addr, (unsigned)e->mask, e->value);
  }
  tx->wn = mark;
}
