/* htm-emul, the emulated best-effort hardware TM (docs/htm.md): what its files share.
 *
 *   htm_emul.c          the backend table: attempts, accesses, commit, rollback, the
 *                       fallback policy, the system-call observer
 *   htm_emul_lines.c    the line-ownership table: visible readers and writers per cache
 *                       line, requester wins (dooming), the attempt status protocol
 *   htm_emul_fallback.c the fallback lock every hardware attempt subscribes to
 *   htm_emul_capacity.c the lines an attempt tracks and the cache geometry that bounds them
 *   htm_emul_wbuf.c     the write buffer: a redo log of words with a word index
 *   tle.c               lock elision: the same attempts under elision's fallback policy
 *
 * Every hardware-style attempt has a slot (its descriptor's id - 1) and a status word that
 * other threads read and change (dooming). Slots at or beyond HTM_SLOTS have no status:
 * their descriptors run every attempt on the fallback lock. */
#ifndef TXALLOC_TM_HTM_EMUL_INTERNAL_H
#define TXALLOC_TM_HTM_EMUL_INTERNAL_H

#include "tm/tm_backend.h"

#define HTM_SLOTS 128
#define HTM_READER_WORDS (HTM_SLOTS / 64)

/* Modes (heavy: every commit reaches the backend, which must release the lines). */
enum { HTM_MODE_HW = TM_MODE_HEAVY + 1, HTM_MODE_FALLBACK = TM_MODE_HEAVY + 2 };

/* The status word of a slot: the state in the low byte, the doom cause above it.
 *   IDLE -> ACTIVE        the owner, at a hardware attempt's begin
 *   ACTIVE -> DOOMED|c    anyone, by CAS (a conflicting access, a plain store, the fallback
 *                         lock's acquirer, or the owner's own system call)
 *   ACTIVE -> COMMITTING  the owner, by CAS: the commit point. A committing attempt is never
 *                         doomed: a requester that needs its line waits until it is released
 *   * -> IDLE             the owner, after it released every line of the attempt */
enum { HTM_IDLE = 0, HTM_ACTIVE = 1, HTM_DOOMED = 2, HTM_COMMITTING = 3 };
enum { HTM_DOOM_CONFLICT = 1, HTM_DOOM_UNFRIENDLY = 2, HTM_DOOM_LOCK_BUSY = 3 };
#define HTM_STATE(status) ((status)&0xffu)
#define HTM_DOOM_CAUSE(status) ((unsigned)((status) >> 8))

/* The geometry, and the fallback policy: htm-emul's options, or lock elision's (tle.c). */
typedef struct htm_config {
  unsigned line_shift; /* log2 of htm_line */
  unsigned l1_sets, l1_ways, read_sets, read_ways;
  unsigned retries; /* conflict (and lock-busy) aborts of a block before the fallback */
  unsigned skip;    /* after a capacity or unfriendly abort, the next `skip` blocks (of any
                       thread) take the lock without trying to elide it */
  bool wait;        /* an attempt that finds the lock held waits (else it aborts, 0xff) */
  size_t max_lines; /* lines an attempt may track: both bounds together, plus one */
} htm_config;
extern htm_config htm_cfg;

/* A line the attempt tracks: its line number and whether it read and/or wrote it. */
enum { HTM_TRACK_READ = 1, HTM_TRACK_WRITE = 2 };
typedef struct htm_track_slot {
  uintptr_t line;
  uint32_t epoch;
  uint32_t how;
} htm_track_slot;

/* A buffered word's index in the write set. */
typedef struct htm_word_slot {
  uintptr_t word;
  uint32_t epoch;
  uint32_t index;
} htm_word_slot;

/* A slot's state. `status` is shared; everything else is its owner's. */
typedef struct htm_thread {
  _Alignas(TM_CACHE_LINE) uint64_t status;
  _Alignas(TM_CACHE_LINE) unsigned slot;
  /* capacity (htm_emul_capacity.c) */
  htm_track_slot *track;
  size_t track_mask;
  uint32_t epoch;
  uintptr_t *lines; /* the tracked lines in order, for the release */
  size_t nlines;
  uint32_t *write_ways, *read_ways; /* lines used per L1 set / per read-structure set */
  /* write buffer (htm_emul_wbuf.c) */
  htm_word_slot *words;
  size_t words_mask;
  uint32_t words_epoch;
  /* fallback policy and abort status (htm_emul.c) */
  unsigned conflicts;  /* conflict aborts of the current block */
  bool fallback_next;  /* the block's next attempt runs on the fallback lock */
  bool status_pending; /* abort_status below is the coming abort's */
  unsigned pending_status;
} htm_thread;

/* The state of a slot (set at its descriptor's creation, never changed), or NULL. */
htm_thread *htm_thread_of_slot(unsigned slot);
static inline htm_thread *htm_me(const tm_tx *tx) {
  return tx->id <= HTM_SLOTS ? htm_thread_of_slot(tx->id - 1) : NULL;
}

/* ---- Line records (htm_emul_lines.c) ---- */
typedef struct htm_line_rec {
  _Alignas(32) uint32_t lock;
  uint32_t writer; /* slot + 1, or 0 */
  uint64_t readers[HTM_READER_WORDS];
} htm_line_rec;

void htm_lines_init(void);
void htm_threads_register(htm_thread *t);
htm_line_rec *htm_line_rec_of(uintptr_t line);
void htm_rec_lock(htm_line_rec *r);
void htm_rec_unlock(htm_line_rec *r);
/* Dooms the attempt of `slot` for `cause` if it is active. Returns false when it is
 * committing (it cannot be doomed any more), true otherwise. */
bool htm_doom(unsigned slot, unsigned cause);
/* The attempt of `me` reads (write: false) or writes the line; every conflicting holder is
 * doomed (requester wins), after a committing one has released the line. */
void htm_line_acquire(htm_thread *me, uintptr_t line, bool write);
/* The attempt of `me` gives the line up. */
void htm_line_release(htm_thread *me, uintptr_t line);
/* A store outside any transaction: every holder of the address's line is doomed, then the
 * store is made while no transaction can take the line. */
void htm_plain_store(uintptr_t addr, unsigned size, uint64_t value);

/* ---- Fallback lock (htm_emul_fallback.c) ---- */
/* A hardware attempt subscribes at its begin (waiting while the lock is held) and
 * unsubscribes when it ends; acquiring the lock dooms every subscriber and waits for the
 * committing ones to finish. */
void htm_fallback_subscribe(htm_thread *me);
void htm_fallback_unsubscribe(htm_thread *me);
void htm_fallback_acquire(void);
void htm_fallback_release(void);
bool htm_fallback_held(void);

/* ---- Capacity (htm_emul_capacity.c) ---- */
void htm_capacity_thread_init(htm_thread *t);
/* Tracks the line for reading or writing. Returns false when the modelled cache has no way
 * left for it in its set (the attempt must abort with cause capacity), true once the line
 * is tracked and acquired in the line table. */
bool htm_track(htm_thread *me, uintptr_t line, unsigned how);
/* Releases every tracked line and forgets them (the attempt ended). */
void htm_track_release_all(htm_thread *me);

/* ---- Write buffer (htm_emul_wbuf.c) ---- */
void htm_wbuf_thread_init(htm_thread *t);
/* The newest entry of the word, or NULL. */
tm_wentry *htm_wbuf_find(tm_tx *tx, htm_thread *me, uintptr_t word);
/* Buffers bytes `mask` of the word (value already shifted into place) at the current level. */
void htm_wbuf_put(tm_tx *tx, htm_thread *me, uintptr_t word, uint64_t mask, uint64_t value);
/* Keeps entries [0, mark) (a level rolled back) and re-indexes them. */
void htm_wbuf_truncate(tm_tx *tx, htm_thread *me, size_t mark);
/* Writes the buffered bytes to memory, oldest entry first. */
void htm_wbuf_write_back(const tm_tx *tx);

/* ---- The backend's operations (htm_emul.c), shared with lock elision (tle.c) ---- */
void htm_emul_init_geometry(void);
void htm_emul_thread_init(tm_tx *tx);
void htm_emul_begin_first(tm_tx *tx, int flags);
void htm_emul_begin_again(tm_tx *tx, int flags);
void htm_emul_commit(tm_tx *tx);
void htm_emul_rollback(tm_tx *tx, unsigned level);
uint64_t htm_emul_load(tm_tx *tx, uintptr_t addr, unsigned size);
void htm_emul_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value);
bool htm_emul_become_irrevocable(tm_tx *tx);
void htm_emul_print_geometry(FILE *out);
void htm_emul_conflict_geometry(unsigned *shift, uint64_t *entries);

#endif
