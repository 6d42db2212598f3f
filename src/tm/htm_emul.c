/* htm-emul: a best-effort hardware TM emulated in software (docs/htm.md), behind the
 * tm_backend interface. A hardware-style attempt tracks the cache lines it reads and
 * writes (htm_emul_capacity.c), holds them in the line-ownership table where a conflicting
 * access dooms it (htm_emul_lines.c), buffers its stores (htm_emul_wbuf.c) and publishes
 * them at its commit point. It aborts with cause conflict, capacity or unfriendly (a system
 * call reported by the OS layer's observer), and records RTM's status bits for each abort.
 *
 * Best effort needs a fallback: after htm_retries conflict aborts of a block, or at once
 * after a capacity or unfriendly abort (which a retry would meet again), and whenever the
 * program asks for irrevocability, the attempt runs alone under the fallback lock
 * (htm_emul_fallback.c): in place, with an undo log (write-set entries: addr = the byte
 * address, mask = the size, value = the old bytes), never aborting by itself. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "os/os_mem.h"
#include "tm/htm_emul_internal.h"

htm_config htm_cfg;

/* Blocks still to take the lock without eliding it (htm_cfg.skip after a capacity or
 * unfriendly abort; one counter for the one lock, as glibc's adapt_count is the lock's). */
static unsigned skip_left;
/* When this thread's attempt took the fallback lock (the statistics' lock_held_ns). */
static __thread uint64_t fallback_since;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- Aborts ---- */

/* The coming abort's RTM status (tm_last_abort_status), read by the rollback. */
static void pend_status(htm_thread *me, unsigned status) {
  me->pending_status = status;
  me->status_pending = true;
}

static _Noreturn void abort_hw(tm_tx *tx, htm_thread *me, tm_abort_cause cause) {
  switch (cause) {
  case TM_ABORT_CONFLICT:
    pend_status(me, TM_XABORT_CONFLICT | TM_XABORT_RETRY);
    me->conflicts++;
    tm_abort_conflict(tx, 1, cause, TM_CLASS_UNKNOWN);
  case TM_ABORT_EXPLICIT: /* the lock was held at the begin: elision's explicit 0xff */
    pend_status(me, TM_XABORT_EXPLICIT | 0xffu << 24);
    me->conflicts++;
    tm_abort_conflict(tx, 1, cause, TM_CLASS_NONE);
  case TM_ABORT_CAPACITY: pend_status(me, TM_XABORT_CAPACITY); break;
  default: pend_status(me, 0); break; /* unfriendly: RTM reports a system call with no bit */
  }
  me->fallback_next = true;
  if (htm_cfg.skip) __atomic_store_n(&skip_left, htm_cfg.skip, __ATOMIC_RELAXED);
  tm_abort_conflict(tx, 1, cause, TM_CLASS_NONE);
}

static __attribute__((noinline)) _Noreturn void abort_doomed(tm_tx *tx, htm_thread *me,
                                                             uint64_t status) {
  unsigned cause = HTM_DOOM_CAUSE(status);
  abort_hw(tx, me,
           cause == HTM_DOOM_UNFRIENDLY  ? TM_ABORT_UNFRIENDLY
           : cause == HTM_DOOM_LOCK_BUSY ? TM_ABORT_EXPLICIT
                                         : TM_ABORT_CONFLICT);
}

/* An invalidation takes effect at the attempt's next access or commit. */
static inline void check_doomed(tm_tx *tx, htm_thread *me) {
  uint64_t s = __atomic_load_n(&me->status, __ATOMIC_ACQUIRE);
  if (TM_UNLIKELY(s != HTM_ACTIVE)) abort_doomed(tx, me, s);
}

static inline void track_or_abort(tm_tx *tx, htm_thread *me, uintptr_t addr, unsigned how) {
  if (TM_UNLIKELY(!htm_track(me, addr >> htm_cfg.line_shift, how)))
    abort_hw(tx, me, TM_ABORT_CAPACITY);
}

/* The OS layer is about to make a system call: inside a hardware attempt, that attempt is
 * doomed (cause unfriendly). It is not aborted here: the allocator that called is in the
 * middle of its work and must finish it; the attempt aborts at its next access or its
 * commit, and txmem's abort hook then frees what it allocated. */
static void observe_syscall(const char *call) {
  (void)call;
  tm_tx *tx = tm_self;
  if (!tx || tx->mode != HTM_MODE_HW) return;
  htm_thread *me = htm_me(tx);
  uint64_t expected = HTM_ACTIVE;
  __atomic_compare_exchange_n(&me->status, &expected,
                              HTM_DOOMED | (uint64_t)HTM_DOOM_UNFRIENDLY << 8, false,
                              __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* ---- Set-up ---- */

void htm_emul_init_geometry(void) {
  unsigned line = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_LINE);
  htm_cfg.line_shift = 3;
  while ((2u << htm_cfg.line_shift) <= line) htm_cfg.line_shift++;
  htm_cfg.l1_sets = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_L1_SETS);
  htm_cfg.l1_ways = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_L1_WAYS);
  htm_cfg.read_sets = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_READ_SETS);
  htm_cfg.read_ways = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_READ_WAYS);
  htm_cfg.max_lines =
      (size_t)htm_cfg.l1_sets * htm_cfg.l1_ways + (size_t)htm_cfg.read_sets * htm_cfg.read_ways + 1;
  if (htm_cfg.max_lines > ((size_t)1 << 24))
    tm_fatal("htm-emul: the geometry allows more than 2^24 tracked lines");
  htm_lines_init();
  txa_os_set_observer(observe_syscall);
}

static void htm_init(void) {
  htm_emul_init_geometry();
  htm_cfg.retries = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_RETRIES);
  htm_cfg.skip = 0;
  htm_cfg.wait = true;
}

/* Slots beyond HTM_SLOTS get no state: their attempts all take the fallback. */
void htm_emul_thread_init(tm_tx *tx) {
  if (tx->id > HTM_SLOTS) return;
  htm_thread *t = aligned_alloc(TM_CACHE_LINE, sizeof(htm_thread));
  if (!t) tm_fatal("htm-emul: cannot allocate a descriptor's state");
  memset(t, 0, sizeof *t);
  t->slot = tx->id - 1;
  htm_capacity_thread_init(t);
  htm_wbuf_thread_init(t);
  htm_threads_register(t);
}

/* ---- Attempts ---- */

/* One of the blocks that skip elision after a capacity or unfriendly abort. */
static bool take_skip(void) {
  unsigned n = __atomic_load_n(&skip_left, __ATOMIC_RELAXED);
  while (n && !__atomic_compare_exchange_n(&skip_left, &n, n - 1, true, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED)) {
  }
  return n != 0;
}

static void begin(tm_tx *tx, int flags, bool fresh) {
  htm_thread *me = htm_me(tx);
  tx->wn = 0;
  tm_rset_truncate(tx, 0);
  if (me && fresh) {
    me->conflicts = 0;
    me->fallback_next = false;
  }
  /* The fallback after htm_retries conflict aborts of the block (at least one). */
  if (!me || (flags & TM_FLAG_IRREVOCABLE) || tx->want_irrevocable || me->fallback_next ||
      (me->conflicts > 0 && me->conflicts >= htm_cfg.retries) || (fresh && take_skip())) {
    htm_fallback_acquire();
    fallback_since = now_ns();
    tx->mode = HTM_MODE_FALLBACK;
    tx->irrevocable = true;
    return;
  }
  tx->mode = HTM_MODE_HW;
  tx->irrevocable = false;
  if (!htm_cfg.wait && htm_fallback_held()) { /* it aborts at its first access or commit */
    __atomic_store_n(&me->status, HTM_DOOMED | (uint64_t)HTM_DOOM_LOCK_BUSY << 8, __ATOMIC_SEQ_CST);
    return;
  }
  /* Active before subscribing: the fallback's acquirer dooms only active attempts. */
  __atomic_store_n(&me->status, HTM_ACTIVE, __ATOMIC_SEQ_CST);
  htm_fallback_subscribe(me);
}
void htm_emul_begin_first(tm_tx *tx, int flags) { begin(tx, flags, true); }
void htm_emul_begin_again(tm_tx *tx, int flags) { begin(tx, flags, false); }

static void release_fallback(tm_tx *tx) {
  tm_stat_add(&tx->stats.lock_held_ns, now_ns() - fallback_since);
  htm_fallback_release();
}

/* The hardware attempt ends: its lines, then its subscription, then its status. */
static void end_hw(htm_thread *me) {
  htm_track_release_all(me);
  htm_fallback_unsubscribe(me);
  __atomic_store_n(&me->status, HTM_IDLE, __ATOMIC_RELEASE);
}

void htm_emul_commit(tm_tx *tx) {
  if (tx->mode == HTM_MODE_FALLBACK) {
    tx->wn = 0;
    release_fallback(tx);
    return;
  }
  htm_thread *me = htm_me(tx);
  uint64_t expected = HTM_ACTIVE;
  if (!__atomic_compare_exchange_n(&me->status, &expected, HTM_COMMITTING, false, __ATOMIC_SEQ_CST,
                                   __ATOMIC_ACQUIRE))
    abort_doomed(tx, me, expected);
  /* The commit point: no one can doom this attempt now, and every line it wrote stays
   * held until the write-back is done. */
  htm_wbuf_write_back(tx);
  tx->wn = 0;
  htm_wbuf_truncate(tx, me, 0);
  end_hw(me);
}

void htm_emul_rollback(tm_tx *tx, unsigned level) {
  size_t mark = level == 1 ? 0 : tx->levels[level]->wset_mark;
  htm_thread *me = htm_me(tx);
  unsigned status = TM_XABORT_EXPLICIT;
  if (me && me->status_pending) status = me->pending_status;
  if (me) me->status_pending = false;
  tx->abort_status = status | (tx->depth > 1 ? TM_XABORT_NESTED : 0);
  if (tx->mode == HTM_MODE_FALLBACK) {
    tm_in_place_undo(tx, mark);
    if (level == 1) release_fallback(tx);
    return;
  }
  htm_wbuf_truncate(tx, me, mark);
  if (level == 1) end_hw(me);
}

/* ---- Accesses ---- */

static uint64_t size_mask(unsigned size) {
  return size == 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
}

/* An aligned access within one word: track the line, read memory, check that no one
 * doomed the attempt meanwhile, then lay the attempt's own buffered bytes over it. */
static uint64_t load_aligned(tm_tx *tx, htm_thread *me, uintptr_t addr, unsigned size) {
  check_doomed(tx, me);
  track_or_abort(tx, me, addr, HTM_TRACK_READ);
  uint64_t v = tm_plain_load(addr, size);
  check_doomed(tx, me);
  tm_wentry *e = htm_wbuf_find(tx, me, addr & ~(uintptr_t)7);
  if (e) {
    unsigned shift = 8 * (unsigned)(addr & 7);
    uint64_t m = (e->mask >> shift) & size_mask(size);
    v = (v & ~m) | ((e->value >> shift) & m);
  }
  return v;
}

static void store_aligned(tm_tx *tx, htm_thread *me, uintptr_t addr, unsigned size,
                          uint64_t value) {
  check_doomed(tx, me);
  track_or_abort(tx, me, addr, HTM_TRACK_WRITE);
  unsigned shift = 8 * (unsigned)(addr & 7);
  htm_wbuf_put(tx, me, addr & ~(uintptr_t)7, size_mask(size) << shift,
               (value & size_mask(size)) << shift);
}

/* Misaligned accesses go byte by byte (each byte may lie in another line). */
uint64_t htm_emul_load(tm_tx *tx, uintptr_t addr, unsigned size) {
  bool aligned = (addr & (size - 1)) == 0;
  if (tx->mode == HTM_MODE_FALLBACK) return tm_in_place_load(tx, addr, size);
  htm_thread *me = htm_me(tx);
  if (aligned) return load_aligned(tx, me, addr, size);
  uint64_t v = 0;
  for (unsigned i = 0; i < size; i++) v |= load_aligned(tx, me, addr + i, 1) << (8 * i);
  return v;
}

void htm_emul_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  bool aligned = (addr & (size - 1)) == 0;
  if (tx->mode == HTM_MODE_FALLBACK) {
    tm_in_place_store(tx, addr, size, value);
    return;
  }
  htm_thread *me = htm_me(tx);
  if (aligned) {
    store_aligned(tx, me, addr, size, value);
    return;
  }
  for (unsigned i = 0; i < size; i++) store_aligned(tx, me, addr + i, 1, (value >> (8 * i)) & 0xff);
}

/* Hardware cannot turn a running attempt irrevocable: it aborts (explicitly, code 0xff, as
 * lock elision aborts when it finds the lock taken) and the front-end restarts it on the
 * fallback. */
bool htm_emul_become_irrevocable(tm_tx *tx) {
  htm_thread *me = htm_me(tx);
  if (me) pend_status(me, TM_XABORT_EXPLICIT | 0xffu << 24);
  return false;
}

void htm_emul_print_geometry(FILE *out) {
  fprintf(out,
          ", \"htm_line\": %u, \"htm_l1_sets\": %u, \"htm_l1_ways\": %u, \"htm_read_sets\": %u, "
          "\"htm_read_ways\": %u",
          1u << htm_cfg.line_shift, htm_cfg.l1_sets, htm_cfg.l1_ways, htm_cfg.read_sets,
          htm_cfg.read_ways);
}

/* Conflicts are per line, tracked exactly: the lines do not wrap round onto records. */
void htm_emul_conflict_geometry(unsigned *shift, uint64_t *entries) {
  *shift = htm_cfg.line_shift;
  *entries = 0;
}

static void htm_print_config(FILE *out) {
  htm_emul_print_geometry(out);
  fprintf(out, ", \"htm_retries\": %u", htm_cfg.retries);
}

const tm_backend htm_emul_backend = {
    .name = "htm-emul",
    .init = htm_init,
    .thread_init = htm_emul_thread_init,
    .begin_first = htm_emul_begin_first,
    .begin_again = htm_emul_begin_again,
    .commit = htm_emul_commit,
    .rollback = htm_emul_rollback,
    .load = htm_emul_load,
    .store = htm_emul_store,
    .become_irrevocable = htm_emul_become_irrevocable,
    .plain_store = htm_plain_store,
    .print_config = htm_print_config,
    .conflict_geometry = htm_emul_conflict_geometry,
};
