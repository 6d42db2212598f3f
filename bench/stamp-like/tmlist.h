/* A sorted singly linked list of (long key, non-NULL value) pairs, shared by transactions:
 * vacation's reservations of a customer, intruder's fragments of a flow and the map's
 * buckets. Nodes are TM_MALLOC'd and TM_FREE'd by the TM* functions, inside transactions. */
#ifndef TXALLOC_STAMP_LIKE_TMLIST_H
#define TXALLOC_STAMP_LIKE_TMLIST_H

#include <stdbool.h>

#include "tm.h"

typedef struct tmlist tmlist;

/* Inside a transaction (freed again if it aborts) or outside. */
TM_CALLABLE tmlist *TMlist_alloc(TM_ARGDECL_ALONE);
/* Frees the nodes and the list; the values are the caller's. */
TM_CALLABLE void TMlist_free(TM_ARGDECL tmlist *l);

/* False (and no change) when the key is present. */
TM_CALLABLE bool TMlist_insert(TM_ARGDECL tmlist *l, long key, void *value);
/* The key's value, NULL when absent. */
TM_CALLABLE void *TMlist_find(TM_ARGDECL tmlist *l, long key);
/* Removes the key; its value, NULL when absent. */
TM_CALLABLE void *TMlist_remove(TM_ARGDECL tmlist *l, long key);
/* Removes the smallest key (stored in *key); its value, NULL when the list is empty. */
TM_CALLABLE void *TMlist_remove_first(TM_ARGDECL tmlist *l, long *key);
TM_CALLABLE long TMlist_count(TM_ARGDECL tmlist *l);
/* Copies the first `max` values in key order into out; returns how many the list holds. */
TM_CALLABLE long TMlist_values(TM_ARGDECL tmlist *l, void **out, long max);

/* Alone: calls fn on each pair in key order; stops and returns false when fn does. */
bool list_for_each(const tmlist *l, bool (*fn)(long key, void *value, void *arg), void *arg);
/* Alone: whether the key is present. */
bool list_contains(const tmlist *l, long key);
/* Alone: true when the keys strictly increase and no value is NULL. */
bool list_is_sorted(const tmlist *l);

#endif
