/* The glock backend: one global lock serialises every transaction (the baseline, and later
 * the recorder for the conflict analysis). Stores write memory in place and log the old
 * value (write-set entries used as an undo log: addr = byte address, mask = size), so
 * tm_restart, tm_abort and closed nesting work as with the STM. No conflicts exist: the
 * only aborts are explicit. */
#include "tm/tm_backend.h"

/* Every attempt runs in this mode: heavy, so every commit reaches glock_commit. */
enum { GLOCK_MODE = TM_MODE_HEAVY + 1 };

static struct {
  _Alignas(TM_CACHE_LINE) int held;
  char pad_[TM_CACHE_LINE - sizeof(int)];
} global_lock;

static void glock_begin(tm_tx *tx, int flags) {
  for (unsigned i = 0;; i++) {
    if (!__atomic_load_n(&global_lock.held, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&global_lock.held, 1, __ATOMIC_ACQUIRE))
      break;
    tm_pause_or_yield(i);
  }
  tx->mode = GLOCK_MODE;
  /* Serial already: an irrevocable attempt is one that counts as such. */
  tx->irrevocable = (flags & TM_FLAG_IRREVOCABLE) || tx->want_irrevocable;
  tx->wn = 0;
  tm_rset_truncate(tx, 0);
}

static void release(void) { __atomic_store_n(&global_lock.held, 0, __ATOMIC_RELEASE); }

static void glock_commit(tm_tx *tx) {
  tx->wn = 0;
  release();
}

static void store_logged(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  if (TM_UNLIKELY(tx->wn >= TM_WSET_MAX)) tm_fatal("a transaction wrote more than 2^20 times");
  tm_wentry *e = &tx->wset[tx->wn++];
  e->addr = addr;
  e->mask = size;
  e->value = tm_plain_load(addr, size);
  tm_plain_store(addr, size, value);
}

static void glock_rollback(tm_tx *tx, unsigned level) {
  size_t mark = level == 1 ? 0 : tx->levels[level]->wset_mark;
  for (size_t i = tx->wn; i-- > mark;) {
    tm_wentry *e = &tx->wset[i];
    tm_plain_store(e->addr, (unsigned)e->mask, e->value);
  }
  tx->wn = mark;
  if (level == 1) release();
}

/* Accesses of any alignment: an aligned one in one piece, else byte by byte. */
static uint64_t glock_load(tm_tx *tx, uintptr_t addr, unsigned size) {
  (void)tx;
  if ((addr & (size - 1)) == 0) return tm_plain_load(addr, size);
  uint64_t v = 0;
  for (unsigned i = 0; i < size; i++) v |= tm_plain_load(addr + i, 1) << (8 * i);
  return v;
}

static void glock_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  if ((addr & (size - 1)) == 0) {
    store_logged(tx, addr, size, value);
    return;
  }
  for (unsigned i = 0; i < size; i++) store_logged(tx, addr + i, 1, (value >> (8 * i)) & 0xff);
}

/* The attempt holds the lock and never aborts by itself: it is irrevocable as it is. */
static bool glock_become_irrevocable(tm_tx *tx) {
  tx->irrevocable = true;
  return true;
}

const tm_backend glock_backend = {
    .name = "glock",
    .begin_first = glock_begin,
    .begin_again = glock_begin,
    .commit = glock_commit,
    .rollback = glock_rollback,
    .load = glock_load,
    .store = glock_store,
    .become_irrevocable = glock_become_irrevocable,
};
