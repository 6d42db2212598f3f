/* htm-emul's line-ownership table: which attempts hold which cache lines, and requester
 * wins. It stands in for the coherence protocol of a hardware TM: a line read by an
 * attempt is in its read set, a line written in its write set, and an access that would
 * invalidate (or, a read, downgrade) another attempt's copy dooms that attempt.
 *
 * A record per hash of the line number (HTM_TABLE_LOG2 records: two lines that share a
 * record conflict as if they were one, docs/htm.md) holds the writer's slot and a bitmap of
 * the readers' slots, guarded by the record's spin lock. Protocol and invariants:
 *   - A slot is in a record (as reader or writer) only between the acquisition and the
 *     release its attempt makes of that line; every change of a record happens under its
 *     lock, and an attempt releases its lines before its status goes back to IDLE. So a
 *     doomer that sees a slot in a record, under the lock, dooms the attempt that acquired
 *     the line, never a later one (no ABA on the status word).
 *   - Conflicting holders: for a read, the writer if it is another slot; for a write, the
 *     writer and every reader other than the requester. Each is doomed (status CAS
 *     ACTIVE -> DOOMED); one already doomed stays so. A holder that is COMMITTING cannot be
 *     doomed: the requester drops the lock and retries until it has released the line (a
 *     commit waits for nothing, so this ends). For a writer that is needed: it is writing
 *     the line back. For a reader too: its commit point precedes the requester's, so once
 *     the requester commits, the program may rely on the reader's writes having landed (a
 *     transaction that unlinks a node and then uses it privately must not meet a write-back
 *     of an older commit that read the link: privatization).
 *   - A doomed attempt's buffered writes never reach memory (its commit CAS fails), and it
 *     checks its status after each read of memory, so no value it read after being doomed
 *     reaches the program.
 *   - One record lock at a time: no thread holds one while it waits or takes another. */
#include <sys/mman.h>

#include "tm/htm_emul_internal.h"

#define HTM_TABLE_LOG2 20

static htm_line_rec *table;
static htm_thread *threads[HTM_SLOTS];

void htm_lines_init(void) {
  size_t bytes = sizeof(htm_line_rec) << HTM_TABLE_LOG2;
  void *t =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t == MAP_FAILED) tm_fatal("htm-emul: cannot map the line table");
  table = t;
}

void htm_threads_register(htm_thread *t) {
  __atomic_store_n(&threads[t->slot], t, __ATOMIC_RELEASE);
}

htm_thread *htm_thread_of_slot(unsigned slot) {
  return __atomic_load_n(&threads[slot], __ATOMIC_ACQUIRE);
}

htm_line_rec *htm_line_rec_of(uintptr_t line) {
  return &table[(line * 0x9E3779B97F4A7C15ull) >> (64 - HTM_TABLE_LOG2)];
}

void htm_rec_lock(htm_line_rec *r) {
  for (unsigned i = 0;; i++) {
    if (!__atomic_load_n(&r->lock, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE))
      return;
    tm_pause_or_yield(i);
  }
}

void htm_rec_unlock(htm_line_rec *r) { __atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE); }

bool htm_doom(unsigned slot, unsigned cause) {
  htm_thread *t = htm_thread_of_slot(slot);
  uint64_t expected = HTM_ACTIVE;
  if (__atomic_compare_exchange_n(&t->status, &expected, HTM_DOOMED | (uint64_t)cause << 8, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return true;
  return HTM_STATE(expected) != HTM_COMMITTING;
}

/* Under r's lock: dooms the holders that conflict with `requester` (a slot, or HTM_SLOTS
 * for a plain store) writing (or reading) the line. False: a committing writer holds it. */
static bool doom_conflicting(htm_line_rec *r, unsigned requester, bool write) {
  bool ok = true;
  uint32_t w = __atomic_load_n(&r->writer, __ATOMIC_RELAXED);
  if (w && w - 1 != requester && !htm_doom(w - 1, HTM_DOOM_CONFLICT)) ok = false;
  if (!write) return ok;
  for (unsigned k = 0; k < HTM_READER_WORDS; k++) {
    uint64_t bits = __atomic_load_n(&r->readers[k], __ATOMIC_RELAXED);
    while (bits) {
      unsigned s = k * 64 + (unsigned)__builtin_ctzll(bits);
      bits &= bits - 1;
      if (s != requester && !htm_doom(s, HTM_DOOM_CONFLICT)) ok = false;
    }
  }
  return ok;
}

void htm_line_acquire(htm_thread *me, uintptr_t line, bool write) {
  htm_line_rec *r = htm_line_rec_of(line);
  for (unsigned i = 0;; i++) {
    htm_rec_lock(r);
    if (doom_conflicting(r, me->slot, write)) {
      if (write)
        __atomic_store_n(&r->writer, me->slot + 1, __ATOMIC_RELAXED);
      else
        __atomic_fetch_or(&r->readers[me->slot / 64], 1ull << (me->slot % 64), __ATOMIC_RELAXED);
      htm_rec_unlock(r);
      return;
    }
    htm_rec_unlock(r);
    tm_pause_or_yield(i);
  }
}

void htm_line_release(htm_thread *me, uintptr_t line) {
  htm_line_rec *r = htm_line_rec_of(line);
  htm_rec_lock(r);
  if (__atomic_load_n(&r->writer, __ATOMIC_RELAXED) == me->slot + 1)
    __atomic_store_n(&r->writer, 0, __ATOMIC_RELAXED);
  __atomic_fetch_and(&r->readers[me->slot / 64], ~(1ull << (me->slot % 64)), __ATOMIC_RELAXED);
  htm_rec_unlock(r);
}

/* One aligned piece of a plain store, within one line. */
static void plain_store_piece(uintptr_t addr, unsigned size, uint64_t value) {
  htm_line_rec *r = htm_line_rec_of(addr >> htm_cfg.line_shift);
  for (unsigned i = 0;; i++) {
    htm_rec_lock(r);
    if (doom_conflicting(r, HTM_SLOTS, true)) {
      tm_plain_store(addr, size, value);
      htm_rec_unlock(r);
      return;
    }
    htm_rec_unlock(r);
    tm_pause_or_yield(i);
  }
}

void htm_plain_store(uintptr_t addr, unsigned size, uint64_t value) {
  if ((addr & (size - 1)) == 0) {
    plain_store_piece(addr, size, value);
    return;
  }
  for (unsigned i = 0; i < size; i++) plain_store_piece(addr + i, 1, (value >> (8 * i)) & 0xff);
}
