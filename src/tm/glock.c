/* The glock backend: one global lock serialises every transaction (the baseline, and later
 * the recorder for the conflict analysis). Accesses are in place, stores logged for undo
 * (tm_in_place.c), so tm_restart, tm_abort and closed nesting work as with the STM. No conflicts
 * exist: the only aborts are explicit. */
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

static void glock_rollback(tm_tx *tx, unsigned level) {
  tm_in_place_undo(tx, level == 1 ? 0 : tx->levels[level]->wset_mark);
  if (level == 1) release();
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
    .load = tm_in_place_load,
    .store = tm_in_place_store,
    .become_irrevocable = glock_become_irrevocable,
};
