/* htm-emul's fallback lock: where an attempt that cannot succeed as hardware runs (alone,
 * irrevocably), as lock elision falls back to the lock it elides. Every hardware attempt
 * reads the lock into its read set at its begin, so acquiring the lock dooms every running
 * attempt, as the lock's store would in hardware.
 *
 * The subscription is a record of its own (not in the line table: no user line shares it),
 * and `held` is read and written under that record's lock:
 *   - a subscriber (status already ACTIVE) takes the lock, and if `held` is clear sets its
 *     reader bit; else it lets go and waits until `held` clears;
 *   - the acquirer takes the lock, sets `held` (if clear; else it waits), dooms every
 *     subscriber, notes those that are committing, lets go, and waits until each of those
 *     has unsubscribed: a committing attempt is writing back, which the fallback's in-place
 *     writes must not interleave with. Doomed attempts are not waited for: their writes
 *     never reach memory, and they abort at their next access or commit.
 * Invariant: while `held` is set, no hardware attempt writes memory (none commits). */
#include "tm/htm_emul_internal.h"

static struct {
  htm_line_rec rec;
  _Alignas(TM_CACHE_LINE) uint32_t held;
} fallback;

static void wait_free(void) {
  for (unsigned i = 0; __atomic_load_n(&fallback.held, __ATOMIC_ACQUIRE); i++) tm_pause_or_yield(i);
}

void htm_fallback_subscribe(htm_thread *me) {
  for (;;) {
    htm_rec_lock(&fallback.rec);
    if (!__atomic_load_n(&fallback.held, __ATOMIC_ACQUIRE)) {
      __atomic_fetch_or(&fallback.rec.readers[me->slot / 64], 1ull << (me->slot % 64),
                        __ATOMIC_RELAXED);
      htm_rec_unlock(&fallback.rec);
      return;
    }
    htm_rec_unlock(&fallback.rec);
    wait_free();
  }
}

void htm_fallback_unsubscribe(htm_thread *me) {
  htm_rec_lock(&fallback.rec);
  __atomic_fetch_and(&fallback.rec.readers[me->slot / 64], ~(1ull << (me->slot % 64)),
                     __ATOMIC_RELEASE);
  htm_rec_unlock(&fallback.rec);
}

void htm_fallback_acquire(void) {
  uint64_t committing[HTM_READER_WORDS];
  for (;;) {
    htm_rec_lock(&fallback.rec);
    if (!__atomic_load_n(&fallback.held, __ATOMIC_ACQUIRE)) break;
    htm_rec_unlock(&fallback.rec);
    wait_free();
  }
  /* Sequentially consistent: a real hardware attempt (rtm) subscribes by reading `held`,
   * and the holder's loads of the data must not pass this store (x86 lets a load pass an
   * earlier store). Otherwise an attempt that read `held` clear could commit a write to
   * what the holder has already read, and the holder's write would lose it. */
  __atomic_store_n(&fallback.held, 1, __ATOMIC_SEQ_CST);
  for (unsigned k = 0; k < HTM_READER_WORDS; k++) {
    uint64_t bits = __atomic_load_n(&fallback.rec.readers[k], __ATOMIC_RELAXED);
    committing[k] = 0;
    while (bits) {
      unsigned b = (unsigned)__builtin_ctzll(bits);
      bits &= bits - 1;
      if (!htm_doom(k * 64 + b, HTM_DOOM_CONFLICT)) committing[k] |= 1ull << b;
    }
  }
  htm_rec_unlock(&fallback.rec);
  /* No new subscriber while held: the committing ones only leave. */
  for (unsigned k = 0; k < HTM_READER_WORDS; k++)
    for (unsigned i = 0;
         __atomic_load_n(&fallback.rec.readers[k], __ATOMIC_ACQUIRE) & committing[k]; i++)
      tm_pause_or_yield(i);
}

bool htm_fallback_held(void) { return __atomic_load_n(&fallback.held, __ATOMIC_ACQUIRE) != 0; }

void htm_fallback_release(void) { __atomic_store_n(&fallback.held, 0, __ATOMIC_RELEASE); }
