/* The interface between the TM front-end (tm_runtime.c, tm_access.c) and its backends.
 *
 * The front-end owns the blocks: the descriptor, TM_ATOMIC's entry and restart points,
 * nesting levels, the retry and escalation policy, irrevocability requests, statistics
 * and the txmem callbacks. A backend owns how an attempt runs: it begins and commits
 * attempts, runs their loads and stores, and undoes a level's writes. The front-end calls
 * a backend only through the operations below, from the copy `tm_be` of the registered
 * table chosen by TXALLOC_TM. A backend is its own files plus one line in
 * tm_backends.def.
 *
 * Contract (every operation runs on the calling thread's descriptor `tx`):
 *   - begin: start a top-level attempt (tx->depth is 1). Set tx->mode to a non-zero mode
 *     and empty the read and write sets (tx->wn = 0, tm_rset_truncate(tx, 0)). The attempt
 *     must not abort when `flags` has TM_FLAG_IRREVOCABLE or tx->want_irrevocable is set;
 *     it then sets tx->irrevocable (the statistics count it). `fresh`: the block's first
 *     attempt, not a retry (want_irrevocable is false then). The attempt may record no
 *     reads when stm-style read-only hints apply: flags has TM_FLAG_READ_ONLY and
 *     (fresh || !tx->read_only_off).
 *   - commit: make the top-level attempt's effects visible, or abort it through
 *     tm_abort_conflict (which does not return). tm_commit_ skips it for an attempt in a
 *     light mode that wrote nothing and never aborted (tm_internal.h, TM_MODE_HEAVY).
 *   - rollback: undo the writes of levels >= level (level 1: the whole attempt, releasing
 *     whatever it holds); tx->wn goes back to tx->levels[level]->wset_mark (0 at level 1).
 *   - merge_child (optional, closed nesting): the child level's writes become its parent's.
 *   - load, store: an access of `size` bytes (1, 2, 4 or 8; any alignment) inside the
 *     attempt. The front-end calls them for every access that the STM's inline paths do
 *     not answer; a backend that installs no load view (tm_fast_view_ stays
 *     TM_VIEW_OFF_) receives every access here.
 *   - become_irrevocable: turn the running attempt irrevocable in place (set
 *     tx->irrevocable) and return true, or return false: the front-end then restarts the
 *     block with want_irrevocable set.
 *   - after_abort (optional): called after an abort's rollback and statistics, before the
 *     retry (the STM's cm=wait waits there for the lock it lost on).
 *   - request_validation (optional): make every running transaction check its reads before
 *     it next reads or commits (tm_request_validation, after the allocator reused memory).
 *   - plain_store (optional): makes a store that comes through the API outside a
 *     transaction (tm_store_* with no transaction running on the thread), in place of the
 *     front-end's plain store, for a backend that isolates transactions from such stores
 *     (htm-emul dooms the transactions that hold the line, then stores). The STM and glock
 *     leave it NULL: one predictable branch on a path that is already slow.
 *   - conflict_geometry (optional): the unit over which the backend detects conflicts:
 *     *shift = log2 of its bytes (the STM's stripe, htm-emul's line), *entries = the
 *     records the units map onto (the ORT's size; 0 when they do not wrap round). Called
 *     once, after init; the front-end passes it to txmem_set_conflict_geometry
 *     (stripe-aware placement). NULL: no such unit (glock serialises everything).
 *   - print_config (optional): append the backend's own configuration to the front-end's
 *     JSON object, as `, "key": value` pairs.
 *   - init: once, at the runtime's initialisation; thread_init: once for each new
 *     descriptor, before it is published; thread_attach: whenever a thread takes a
 *     descriptor (new or reused). */
#ifndef TXALLOC_TM_BACKEND_H
#define TXALLOC_TM_BACKEND_H

#include <stdio.h>

#include "tm/tm_internal.h"

typedef struct tm_backend {
  const char *name;
  void (*init)(void);
  void (*thread_init)(tm_tx *tx);
  void (*thread_attach)(tm_tx *tx);
  void (*begin_first)(tm_tx *tx, int flags);
  void (*begin_again)(tm_tx *tx, int flags);
  void (*commit)(tm_tx *tx);
  void (*rollback)(tm_tx *tx, unsigned level);
  void (*merge_child)(tm_tx *tx, unsigned child);
  uint64_t (*load)(tm_tx *tx, uintptr_t addr, unsigned size);
  void (*store)(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value);
  bool (*become_irrevocable)(tm_tx *tx);
  void (*after_abort)(tm_tx *tx);
  void (*request_validation)(void);
  void (*plain_store)(uintptr_t addr, unsigned size, uint64_t value);
  void (*print_config)(FILE *out);
  void (*conflict_geometry)(unsigned *shift, uint64_t *entries);
} tm_backend;

/* The registry (tm_backends.c): one table per line of tm_backends.def, in TXALLOC_TM's
 * order of choices. */
#define TM_BACKEND(id, name, table) extern const tm_backend table;
#include "tm/tm_backends.def"
#undef TM_BACKEND
extern const tm_backend *const tm_backends[];
extern const unsigned tm_backend_count;

/* In-place accesses with an undo log in the write set, for attempts that run alone
 * (tm_in_place.c): any size and alignment; the undo restores entries [mark, wn), newest
 * first, and sets wn = mark. */
uint64_t tm_in_place_load(tm_tx *tx, uintptr_t addr, unsigned size);
void tm_in_place_store(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value);
void tm_in_place_undo(tm_tx *tx, size_t mark);

/* The running backend's operations (a copy, set once by the runtime's initialisation). */
extern tm_backend tm_be;

/* The front-end's access path for everything the STM's inline paths do not take
 * (tm_access.c): a plain access outside a transaction, else the backend's load/store. */
uint64_t tm_load_slow_(tm_tx *tx, uintptr_t addr, unsigned size);
void tm_store_slow_(tm_tx *tx, uintptr_t addr, unsigned size, uint64_t value);

#endif
