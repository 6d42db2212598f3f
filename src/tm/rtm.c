/* rtm: transactions on Intel's RTM (docs/htm.md, "rtm"), behind the tm_backend interface.
 * A hardware attempt begins with xbegin in the backend's begin and ends with xend in its
 * commit; between them the program's loads and stores are plain ones, tracked by the
 * processor. The backend exists only where rtm_unusable_reason() is NULL (rtm_init).
 *
 * Aborts. When the processor aborts an attempt (a conflict, its caches overflowing, a
 * system call, an interrupt, an xabort), it discards every store of the attempt and
 * resumes in begin, after the xbegin, with memory as it was there: the front-end's state
 * is that of a begin in progress again. begin then returns as if the attempt had begun, in
 * mode ABORTED, keeping the status word; the block's first access (or its commit) finds the
 * mode and reports the abort to the front-end (tm_abort_conflict, cause decoded from the
 * status), which retries. htm-emul's doomed attempts end the same way.
 *
 * What hardware cannot do, the fallback does: a hardware attempt cannot roll back one
 * level (closed nesting's tm_restart or tm_abort in a child), nor be cancelled with its
 * effects committed, nor become irrevocable. Each of these ends it with an xabort whose
 * code says which (RTM_CODE_*), and the block reruns on the fallback lock, in place with
 * an undo log (tm_in_place.c), where they have their exact meaning.
 *
 * The fallback lock is htm-emul's (htm_emul_fallback.c): a hardware attempt reads its
 * word right after xbegin, so that its acquisition (a store) aborts every running
 * attempt, as lock elision subscribes to the lock it elides. The policy is htm-emul's
 * (htm_cfg: retries, skip, wait), set by rtm_init from htm_retries, or by lock elision
 * (tle.c, rtm_install) from its own options. */
#include <time.h>

#include "tm/htm_emul_internal.h"
#include "tm/rtm.h"
#include "tm/rtm_insn.h"
#include "util/debug_assert.h"

/* Modes; heavy: every commit reaches rtm_commit (xend, or the abort of an ABORTED one). */
enum {
  RTM_MODE_HW = TM_MODE_HEAVY + 1,       /* a hardware transaction runs the attempt */
  RTM_MODE_FALLBACK = TM_MODE_HEAVY + 2, /* the attempt holds the fallback lock */
  RTM_MODE_ABORTED = TM_MODE_HEAVY + 3,  /* the hardware aborted the attempt: report it */
};

/* Codes of the backend's own xaborts (status bits 31:24). */
enum {
  RTM_CODE_RERUN = 0xfe,       /* an explicit abort the hardware cannot make: rerun on the lock */
  RTM_CODE_IRREVOCABLE = 0xfd, /* the attempt must become irrevocable: rerun on the lock */
  RTM_CODE_LOCK_BUSY = 0xff,   /* the fallback lock was held at the begin (glibc's code) */
};

/* The thread's policy state; written only outside hardware transactions. */
static __thread struct {
  unsigned status;    /* the hardware abort's status word, while the mode is ABORTED */
  unsigned conflicts; /* conflict (and lock-busy) aborts of the current block */
  bool fallback_next; /* the block's next attempts run on the fallback lock */
  uint64_t fallback_since;
} me;

/* Blocks still to take the lock without eliding it (htm_cfg.skip after a capacity or
 * unfriendly abort), one counter for the one lock, as in htm-emul. */
static unsigned skip_left;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool take_skip(void) {
  unsigned n = __atomic_load_n(&skip_left, __ATOMIC_RELAXED);
  while (n && !__atomic_compare_exchange_n(&skip_left, &n, n - 1, true, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED)) {
  }
  return n != 0;
}

/* ---- Aborts ---- */

/* Reports the hardware's abort of the running attempt (mode ABORTED) to the front-end,
 * and chooses what the next attempt is:
 *   explicit, lock busy          a retry, counted with the conflicts (cause explicit)
 *   explicit, RERUN/IRREVOCABLE  the fallback (cause explicit / irrevocable)
 *   capacity                     the fallback, and `skip` blocks after it (cause capacity)
 *   conflict, or the retry hint  a retry, until `retries` of them (cause conflict)
 *   anything else                the fallback, and `skip` blocks after it (cause unfriendly:
 *                                a system call, an interrupt, a fault, an instruction that
 *                                RTM does not run; the status is 0 or has only DEBUG) */
static __attribute__((noinline)) _Noreturn void abort_aborted(tm_tx *tx) {
  unsigned s = me.status;
  tm_abort_cause cause = TM_ABORT_UNFRIENDLY;
  if (s & TM_XABORT_EXPLICIT) {
    unsigned code = TM_XABORT_CODE(s);
    if (code == RTM_CODE_LOCK_BUSY) {
      me.conflicts++;
      tm_abort_conflict(tx, 1, TM_ABORT_EXPLICIT, TM_CLASS_NONE);
    }
    me.fallback_next = true;
    tm_abort_conflict(tx, 1,
                      code == RTM_CODE_IRREVOCABLE ? TM_ABORT_IRREVOCABLE : TM_ABORT_EXPLICIT,
                      TM_CLASS_NONE);
  }
  if (s & TM_XABORT_CAPACITY) {
    cause = TM_ABORT_CAPACITY;
  } else if (s & (TM_XABORT_CONFLICT | TM_XABORT_RETRY)) {
    me.conflicts++;
    tm_abort_conflict(tx, 1, TM_ABORT_CONFLICT, TM_CLASS_UNKNOWN);
  }
  me.fallback_next = true;
  if (htm_cfg.skip) __atomic_store_n(&skip_left, htm_cfg.skip, __ATOMIC_RELAXED);
  tm_abort_conflict(tx, 1, cause, TM_CLASS_NONE);
}

/* Ends the running hardware attempt with an xabort (it never returns: the processor
 * resumes in begin). */
#define ABORT_HW(code)                                                                             \
  do {                                                                                             \
    RTM_ABORT(code);                                                                               \
    tm_fatal("rtm: an attempt in hardware mode ran outside a hardware transaction");               \
  } while (0)

/* ---- Set-up ---- */

static void rtm_init(void) {
  rtm_require("TXALLOC_TM=rtm", "TXALLOC_TM=htm-emul (the emulated HTM) or TXALLOC_TM=tle");
  htm_cfg.retries = (unsigned)txalloc_opt(TXALLOC_OPT_HTM_RETRIES);
  htm_cfg.skip = 0;
  htm_cfg.wait = true;
}

/* ---- Attempts ---- */

static void begin(tm_tx *tx, int flags, bool fresh) {
  tx->wn = 0;
  tm_rset_truncate(tx, 0);
  if (fresh) {
    me.conflicts = 0;
    me.fallback_next = false;
  }
  /* The fallback after htm_retries conflict aborts of the block (at least one). */
  if ((flags & TM_FLAG_IRREVOCABLE) || tx->want_irrevocable || me.fallback_next ||
      (me.conflicts > 0 && me.conflicts >= htm_cfg.retries) || (fresh && take_skip())) {
    htm_fallback_acquire();
    me.fallback_since = now_ns();
    tx->mode = RTM_MODE_FALLBACK;
    tx->irrevocable = true;
    return;
  }
  tx->irrevocable = false;
  if (htm_cfg.wait)
    for (unsigned i = 0; htm_fallback_held(); i++) tm_pause_or_yield(i);
  /* What the attempt is if the hardware aborts it: an abort restores memory as it is here. */
  tx->mode = RTM_MODE_ABORTED;
  unsigned status = rtm_begin();
  if (status == RTM_STARTED) {
    if (htm_fallback_held()) RTM_ABORT(RTM_CODE_LOCK_BUSY);
    tx->mode = RTM_MODE_HW;
    return;
  }
  me.status = status;
}
static void rtm_begin_first(tm_tx *tx, int flags) { begin(tx, flags, true); }
static void rtm_begin_again(tm_tx *tx, int flags) { begin(tx, flags, false); }

static void release_fallback(tm_tx *tx) {
  tm_stat_add(&tx->stats.lock_held_ns, now_ns() - me.fallback_since);
  htm_fallback_release();
}

static void rtm_commit(tm_tx *tx) {
  switch (tx->mode) {
  case RTM_MODE_HW:
    TXALLOC_ASSERT(rtm_test()); /* the mode is HW exactly while the transaction runs */
    rtm_end();
    tx->wn = 0;
    return;
  case RTM_MODE_FALLBACK:
    tx->wn = 0;
    release_fallback(tx);
    return;
  default: abort_aborted(tx);
  }
}

/* A hardware attempt ends in an xabort (whatever the level: see the top); an aborted one
 * has nothing to undo (the hardware discarded its stores); one on the fallback undoes its
 * log down to the level's mark. */
static void rtm_rollback(tm_tx *tx, unsigned level) {
  if (tx->mode == RTM_MODE_HW) ABORT_HW(RTM_CODE_RERUN);
  if (tx->mode == RTM_MODE_ABORTED) {
    tx->abort_status = me.status;
    return;
  }
  tx->abort_status = TM_XABORT_EXPLICIT | (tx->depth > 1 ? TM_XABORT_NESTED : 0);
  tm_in_place_undo(tx, level == 1 ? 0 : tx->levels[level]->wset_mark);
  if (level == 1) release_fallback(tx);
}

/* ---- Accesses ---- */

static uint64_t rtm_load(tm_tx *tx, uintptr_t addr, unsigned size) {
  if (TM_UNLIKELY(tx->mode == RTM_MODE_ABORTED)) abort_aborted(tx);
  return tm_in_place_load(tx, addr, size);
}

/* In hardware, a store is a plain store; wn = 1 records that the attempt wrote (its commit
 * counts as a write commit) without an entry: the processor holds the old values. */
static void rtm_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value) {
  switch (tx->mode) {
  case RTM_MODE_HW:
    if ((addr & (size - 1)) == 0) {
      tm_plain_store(addr, size, value);
    } else {
      for (unsigned i = 0; i < size; i++) tm_plain_store(addr + i, 1, (value >> (8 * i)) & 0xff);
    }
    tx->wn = 1;
    return;
  case RTM_MODE_FALLBACK: tm_in_place_store(tx, addr, size, value); return;
  default: abort_aborted(tx);
  }
}

static bool rtm_become_irrevocable(tm_tx *tx) {
  if (tx->mode == RTM_MODE_HW) ABORT_HW(RTM_CODE_IRREVOCABLE);
  if (tx->mode == RTM_MODE_ABORTED) abort_aborted(tx);
  tx->irrevocable = true; /* on the fallback: it is already */
  return true;
}

static void rtm_print_config(FILE *out) { fprintf(out, ", \"htm_retries\": %u", htm_cfg.retries); }

const tm_backend rtm_backend = {
    .name = "rtm",
    .init = rtm_init,
    .begin_first = rtm_begin_first,
    .begin_again = rtm_begin_again,
    .commit = rtm_commit,
    .rollback = rtm_rollback,
    .load = rtm_load,
    .store = rtm_store,
    .become_irrevocable = rtm_become_irrevocable,
    .print_config = rtm_print_config,
};

void rtm_install(const char *name, void (*print_config)(FILE *out)) {
  tm_backend t = rtm_backend;
  t.name = name;
  t.init = NULL;
  t.print_config = print_config;
  tm_be = t;
}
