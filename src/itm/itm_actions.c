/* The undo log of _ITM_L* and the user's commit and undo actions, in one list per thread,
 * oldest first, each entry stamped with the level that made it. Every end of a level
 * passes through this layer (itm_transaction.c), which calls:
 *   - itm_actions_undo(d) when level d rolled back (its checkpoint is where the rollback
 *     lands): its entries (level >= d) are undone newest first: logged memory gets its old
 *     bytes back, undo actions run, commit actions are dropped;
 *   - itm_actions_commit_child(d) when a child d committed: its entries become its parent's;
 *   - itm_actions_commit_top once the top level committed: the commit actions run, oldest
 *     first, and the list empties.
 * Under nesting=flat a rollback lands at level 1, so everything is undone. */
#include <stdlib.h>
#include <string.h>

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

static itm_entry *entry_add(itm_thread *t, itm_entry_kind kind) {
  if (ITM_UNLIKELY(t->entry_count == t->entry_cap)) {
    size_t cap = t->entry_cap ? 2 * t->entry_cap : 16;
    itm_entry *e = realloc(t->entries, cap * sizeof *e);
    if (!e) itm_fatal("out of memory for the undo log");
    t->entries = e;
    t->entry_cap = cap;
  }
  itm_entry *e = &t->entries[t->entry_count++];
  e->kind = kind;
  e->level = tm_depth();
  return e;
}

/* A logged range's saved bytes: in the entry when they fit (the entries move as the list
 * grows, so the size decides, not a pointer). */
static inline bool saved_inline(const itm_entry *e) { return e->size <= sizeof e->inline_bytes; }
static inline void *saved_bytes(itm_entry *e) {
  return saved_inline(e) ? (void *)e->inline_bytes : e->arg;
}
static void entry_drop(itm_entry *e) {
  if (e->kind == ITM_ENTRY_LOG && !saved_inline(e)) free(e->arg);
}

static void entry_undo(itm_entry *e) {
  switch (e->kind) {
  case ITM_ENTRY_LOG:
    memcpy(e->addr, saved_bytes(e), e->size);
    entry_drop(e);
    break;
  case ITM_ENTRY_UNDO: ((itm_user_function)e->addr)(e->arg); break;
  case ITM_ENTRY_COMMIT: break;
  }
}

void itm_log_memory(const void *addr, size_t size) {
  if (!tm_in_transaction() || size == 0) return;
  itm_entry *e = entry_add(itm_thread_get(), ITM_ENTRY_LOG);
  e->addr = (void *)addr;
  e->size = size;
  if (!saved_inline(e) && !(e->arg = malloc(size))) itm_fatal("out of memory for the undo log");
  memcpy(saved_bytes(e), addr, size);
}

void _ITM_LB(const void *addr, size_t size) { itm_log_memory(addr, size); }

#define ITM_DEFINE_LOG(N, T)                                                                       \
  void _ITM_L##N(const T *addr) { itm_log_memory(addr, sizeof(T)); }
ITM_FOR_EACH_TYPE(ITM_DEFINE_LOG)

void _ITM_addUserCommitAction(itm_user_function fn, itm_transaction_id resuming, void *arg) {
  (void)resuming; /* the ABI's resuming transaction: never used by GCC */
  if (!tm_in_transaction()) {
    fn(arg);
    return;
  }
  itm_entry *e = entry_add(itm_thread_get(), ITM_ENTRY_COMMIT);
  e->addr = (void *)fn;
  e->arg = arg;
}

void _ITM_addUserUndoAction(itm_user_function fn, void *arg) {
  if (!tm_in_transaction()) return;
  itm_entry *e = entry_add(itm_thread_get(), ITM_ENTRY_UNDO);
  e->addr = (void *)fn;
  e->arg = arg;
}

void itm_actions_undo(itm_thread *t, unsigned level) {
  while (t->entry_count && t->entries[t->entry_count - 1].level >= level)
    entry_undo(&t->entries[--t->entry_count]);
}

void itm_actions_commit_child(itm_thread *t, unsigned level) {
  for (size_t i = t->entry_count; i > 0 && t->entries[i - 1].level >= level; i--)
    t->entries[i - 1].level = level - 1;
}

void itm_actions_commit_top(itm_thread *t) {
  /* The actions may begin transactions of their own: take the list off first. */
  size_t n = t->entry_count, cap = t->entry_cap;
  itm_entry *list = t->entries;
  t->entries = NULL;
  t->entry_count = t->entry_cap = 0;
  for (size_t i = 0; i < n; i++) {
    if (list[i].kind == ITM_ENTRY_COMMIT) ((itm_user_function)list[i].addr)(list[i].arg);
    entry_drop(&list[i]);
  }
  if (!t->entries) {
    t->entries = list;
    t->entry_cap = cap;
  } else {
    free(list);
  }
}
