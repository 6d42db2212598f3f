/* tmlist.h: the list starts with a sentinel node that is never removed, so an insert or a
 * remove always has a predecessor to write. */
#include "tmlist.h"

typedef struct lnode {
  long key;
  void *value;
  struct lnode *next;
} lnode;

struct tmlist {
  lnode head;
};

#define NEXT(n) ((lnode *)TM_SHARED_READ_P((n)->next))

tmlist *TMlist_alloc(TM_ARGDECL_ALONE) {
  tmlist *l = TM_MALLOC(sizeof *l);
  if (!l) abort();
  l->head = (lnode){.next = NULL};
  return l;
}

void TMlist_free(TM_ARGDECL tmlist *l) {
  for (lnode *n = NEXT(&l->head), *next; n; n = next) {
    next = NEXT(n);
    TM_FREE(n);
  }
  TM_FREE(l);
}

/* The last node whose key is below `key` (the sentinel when none is). */
static lnode *predecessor(TM_ARGDECL tmlist *l, long key) {
  lnode *prev = &l->head;
  for (lnode *n; (n = NEXT(prev)) && TM_SHARED_READ(n->key) < key;) prev = n;
  return prev;
}

bool TMlist_insert(TM_ARGDECL tmlist *l, long key, void *value) {
  lnode *prev = predecessor(TM_ARG l, key);
  lnode *next = NEXT(prev);
  if (next && TM_SHARED_READ(next->key) == key) return false;
  lnode *n = TM_MALLOC(sizeof *n);
  if (!n) abort();
  *n = (lnode){.key = key, .value = value, .next = next}; /* not yet published */
  TM_SHARED_WRITE_P(prev->next, n);
  return true;
}

void *TMlist_find(TM_ARGDECL tmlist *l, long key) {
  lnode *n = NEXT(predecessor(TM_ARG l, key));
  return n && TM_SHARED_READ(n->key) == key ? TM_SHARED_READ_P(n->value) : NULL;
}

static void *unlink_next(TM_ARGDECL lnode *prev, lnode *n) {
  void *value = TM_SHARED_READ_P(n->value);
  TM_SHARED_WRITE_P(prev->next, NEXT(n));
  TM_FREE(n);
  return value;
}

void *TMlist_remove(TM_ARGDECL tmlist *l, long key) {
  lnode *prev = predecessor(TM_ARG l, key);
  lnode *n = NEXT(prev);
  if (!n || TM_SHARED_READ(n->key) != key) return NULL;
  return unlink_next(TM_ARG prev, n);
}

void *TMlist_remove_first(TM_ARGDECL tmlist *l, long *key) {
  lnode *n = NEXT(&l->head);
  if (!n) return NULL;
  *key = TM_SHARED_READ(n->key);
  return unlink_next(TM_ARG & l->head, n);
}

long TMlist_count(TM_ARGDECL tmlist *l) {
  long count = 0;
  for (lnode *n = NEXT(&l->head); n; n = NEXT(n)) count++;
  return count;
}

long TMlist_values(TM_ARGDECL tmlist *l, void **out, long max) {
  long count = 0;
  for (lnode *n = NEXT(&l->head); n; n = NEXT(n), count++)
    if (count < max) out[count] = TM_SHARED_READ_P(n->value);
  return count;
}

bool list_contains(const tmlist *l, long key) {
  for (const lnode *n = l->head.next; n && n->key <= key; n = n->next)
    if (n->key == key) return true;
  return false;
}

bool list_for_each(const tmlist *l, bool (*fn)(long key, void *value, void *arg), void *arg) {
  for (const lnode *n = l->head.next; n; n = n->next)
    if (!fn(n->key, n->value, arg)) return false;
  return true;
}

bool list_is_sorted(const tmlist *l) {
  for (const lnode *n = l->head.next; n; n = n->next)
    if (!n->value || (n->next && n->next->key <= n->key)) return false;
  return true;
}
