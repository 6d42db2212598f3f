/* The clone tables: each object compiled with -fgnu-tm registers (from its start-up code) a
 * table of pairs (function, its transactional clone). A transaction that calls through a
 * function pointer asks for the clone: _ITM_getTMCloneSafe must find one,
 * _ITM_getTMCloneOrIrrevocable goes serial when there is none and calls the original.
 * Each registered table is kept as a sorted copy; lookups are rare (indirect calls inside
 * transactions), so one lock guards the list. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "itm/itm_abi.h"
#include "itm/itm_internal.h"

typedef struct clone_pair {
  void *function, *clone;
} clone_pair;

typedef struct clone_table {
  void *registered; /* the table as registered (the key of deregistration) */
  clone_pair *pairs;
  size_t count;
  struct clone_table *next;
} clone_table;

static clone_table *tables;
static pthread_rwlock_t tables_lock = PTHREAD_RWLOCK_INITIALIZER;

static int pair_order(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const clone_pair *)a)->function;
  uintptr_t y = (uintptr_t)((const clone_pair *)b)->function;
  return x < y ? -1 : x > y;
}

void _ITM_registerTMCloneTable(void *table, size_t entries) {
  clone_table *t = malloc(sizeof *t);
  clone_pair *pairs = malloc((entries ? entries : 1) * sizeof *pairs);
  if (!t || !pairs) itm_fatal("out of memory for a clone table");
  memcpy(pairs, table, entries * sizeof *pairs);
  qsort(pairs, entries, sizeof *pairs, pair_order);
  t->registered = table;
  t->pairs = pairs;
  t->count = entries;
  pthread_rwlock_wrlock(&tables_lock);
  t->next = tables;
  tables = t;
  pthread_rwlock_unlock(&tables_lock);
}

void _ITM_deregisterTMCloneTable(void *table) {
  pthread_rwlock_wrlock(&tables_lock);
  for (clone_table **p = &tables; *p; p = &(*p)->next) {
    if ((*p)->registered == table) {
      clone_table *t = *p;
      *p = t->next;
      free(t->pairs);
      free(t);
      break;
    }
  }
  pthread_rwlock_unlock(&tables_lock);
}

static void *find_clone(void *function) {
  void *clone = NULL;
  clone_pair key = {function, NULL};
  pthread_rwlock_rdlock(&tables_lock);
  for (clone_table *t = tables; t && !clone; t = t->next) {
    clone_pair *hit = bsearch(&key, t->pairs, t->count, sizeof key, pair_order);
    if (hit) clone = hit->clone;
  }
  pthread_rwlock_unlock(&tables_lock);
  return clone;
}

void *_ITM_getTMCloneSafe(void *function) {
  void *clone = find_clone(function);
  if (!clone) itm_fatal("no transactional clone of a function called in a transaction");
  return clone;
}

void *_ITM_getTMCloneOrIrrevocable(void *function) {
  void *clone = find_clone(function);
  if (clone) return clone;
  itm_go_serial();
  return function;
}
