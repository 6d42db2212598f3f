/* The ABI layer's per-thread state and the services its files share (docs/itm.md).
 *
 * An ABI transaction is a txalloc transaction: every _ITM_beginTransaction begins a level
 * of the tm front-end (tm.h) through its fast entry, so nesting, rollback, restart,
 * statistics and transactional allocation are the runtime's. This layer adds what the ABI
 * has and tm.h has not: the checkpoints of the levels it began, serial mode (the block
 * runs alone, possibly uninstrumented), the undo log of _ITM_L*, and user commit and undo
 * actions. */
#ifndef TXALLOC_ITM_INTERNAL_H
#define TXALLOC_ITM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "itm/itm_checkpoint.h"

#define ITM_LIKELY(x) __builtin_expect(!!(x), 1)
#define ITM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Checkpoints come in chunks that never move (tm keeps a pointer to each while its level
 * runs): ITM_CHUNK levels each, ITM_CHUNKS chunks at most. */
#define ITM_CHUNK 16
#define ITM_CHUNKS 64

/* One entry of the undo log: memory logged by _ITM_L* (restored when its level rolls
 * back), or a user action. `level` is the nesting depth that made it; a committed child's
 * entries become its parent's. */
typedef enum { ITM_ENTRY_LOG, ITM_ENTRY_UNDO, ITM_ENTRY_COMMIT } itm_entry_kind;
typedef struct itm_entry {
  itm_entry_kind kind;
  unsigned level;
  void *addr;  /* LOG: the memory; UNDO/COMMIT: the function */
  void *arg;   /* LOG: the saved bytes when they do not fit inline; UNDO/COMMIT: its argument */
  size_t size; /* LOG */
  uint64_t inline_bytes[4]; /* LOG: the saved bytes of a range of at most 32 */
} itm_entry;

/* The thread's record among all threads' (itm_serial.c): `active` is 1 while the thread
 * runs a transaction that is not serial; a thread entering serial mode waits until every
 * other record is inactive. Records outlive their threads (reused by later ones). */
typedef struct itm_record {
  _Alignas(64) unsigned active;
  bool in_use;
  unsigned index;
  struct itm_record *next;
} itm_record;

typedef struct itm_thread {
  itm_checkpoint *chunks[ITM_CHUNKS];
  itm_record *record;
  unsigned depth;        /* levels of ABI blocks running (tm_depth(), without the call) */
  bool serial;           /* this thread holds serial mode (until its top level ends) */
  bool want_serial;      /* the block's next top-level attempt runs in serial mode */
  uint64_t transactions; /* top-level blocks begun (transaction ids) */
  itm_entry *entries;    /* the undo log and the actions, oldest first */
  size_t entry_count, entry_cap;
} itm_thread;

extern __thread itm_thread *itm_self;

/* The thread's own stack is not shared memory, and GCC treats it so: it reads a local
 * with a plain load after storing it through a barrier. Stores to the stack therefore go
 * to memory at once, never to a write set:
 *   - below itm_stack_top (the outermost block's caller's stack pointer when the block
 *     began; set at every top-level begin, stale outside blocks) lie only frames the
 *     transaction made, dead after it: plain stores
 *     (a write-back commit would otherwise write into its own frames, a rollback restore
 *     into the rollback's);
 *   - above it, frames that outlive the block: logged (undone on rollback), then stored.
 * itm_stack_end: the end of the thread's stack (0: unknown, nothing is treated as stack). */
extern __thread uintptr_t itm_stack_top, itm_stack_end;
static inline __attribute__((always_inline)) bool itm_on_stack(const void *addr, size_t size) {
  uintptr_t sp, a = (uintptr_t)addr;
  __asm__("movq %%rsp, %0" : "=r"(sp));
  return a >= sp && a + size <= itm_stack_end;
}
/* Stores `size` bytes at addr, which itm_on_stack says is on the stack. */
void itm_stack_store(void *addr, const void *src, size_t size);

itm_thread *itm_thread_setup(void);
static inline itm_thread *itm_thread_get(void) {
  itm_thread *t = itm_self;
  return ITM_LIKELY(t != NULL) ? t : itm_thread_setup();
}

_Noreturn void itm_fatal(const char *what);
/* The checkpoint of nesting level `level` (1 = top) of the thread. */
itm_checkpoint *itm_checkpoint_grow(itm_thread *t, unsigned level);
static inline itm_checkpoint *itm_checkpoint_of(itm_thread *t, unsigned level) {
  unsigned chunk = level / ITM_CHUNK;
  if (ITM_UNLIKELY(chunk >= ITM_CHUNKS || !t->chunks[chunk])) return itm_checkpoint_grow(t, level);
  return &t->chunks[chunk][level % ITM_CHUNK];
}

/* ---- Serial mode (itm_serial.c) ---- */
itm_record *itm_record_take(void); /* a thread's record, new or reused */
void itm_record_give_back(itm_record *record);
/* A top-level block is about to begin: marks the thread active, or waits while another
 * thread is serial. The serial side's membarrier orders the mark before its reads of the
 * marks; without membarrier the mark is a sequentially consistent store. */
extern itm_record *itm_serial_owner;
extern bool itm_have_membarrier;
static inline void itm_mark_active(itm_thread *t) {
  if (ITM_LIKELY(itm_have_membarrier)) {
    __atomic_store_n(&t->record->active, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } else {
    __atomic_store_n(&t->record->active, 1, __ATOMIC_SEQ_CST);
  }
}
void itm_enter_shared_wait(itm_thread *t);
static inline void itm_enter_shared(itm_thread *t) {
  itm_mark_active(t);
  if (ITM_UNLIKELY(__atomic_load_n(&itm_serial_owner, __ATOMIC_SEQ_CST) != NULL))
    itm_enter_shared_wait(t);
}
/* The top-level block ended (commit or cancel): inactive, and out of serial mode. */
void itm_leave_serial(itm_thread *t);
static inline void itm_leave(itm_thread *t) {
  if (ITM_UNLIKELY(t->serial)) itm_leave_serial(t);
  __atomic_store_n(&t->record->active, 0, __ATOMIC_RELEASE);
}
/* Outside a transaction: wait until this thread is the only one in a transaction, and keep
 * every other thread out until itm_leave. */
void itm_enter_serial(itm_thread *t);
/* Switch the running transaction to serial mode: restarts the outermost level, which then
 * begins alone and irrevocable. Returns at once when the thread is serial already. */
void itm_go_serial(void);

/* ---- Undo log and actions (itm_actions.c) ---- */
void itm_log_memory(const void *addr, size_t size);
void itm_actions_undo(itm_thread *t, unsigned level);         /* level rolled back */
void itm_actions_commit_child(itm_thread *t, unsigned level); /* child level committed */
void itm_actions_commit_top(itm_thread *t);                   /* the top level committed */

/* The barriers of type T (suffix N) over load_N and store_N (itm_barriers.c). */
#define ITM_DEFINE_BARRIERS(N, T)                                                                  \
  T _ITM_R##N(const T *addr) { return load_##N(addr); }                                            \
  T _ITM_RaR##N(const T *addr) { return load_##N(addr); }                                          \
  T _ITM_RaW##N(const T *addr) { return load_##N(addr); }                                          \
  T _ITM_RfW##N(const T *addr) { return load_##N(addr); }                                          \
  void _ITM_W##N(T *addr, T value) { store_##N(addr, value); }                                     \
  void _ITM_WaR##N(T *addr, T value) { store_##N(addr, value); }                                   \
  void _ITM_WaW##N(T *addr, T value) { store_##N(addr, value); }

/* ---- Transactional byte ranges (itm_memops.c) ---- */
void itm_load_bytes(void *dst, const void *src, size_t size);
void itm_store_bytes(void *dst, const void *src, size_t size);

#endif
