/* A red-black tree mapping long keys (above LONG_MIN, below LONG_MAX) to non-NULL values, shared by
 * transactions: the tables of vacation. The TM* functions run inside a transaction (STAMP's
 * TM_ARGDECL convention); a node is TM_MALLOC'd by an insert and TM_FREE'd by a remove, inside the
 * transaction. The rbtree_* functions without TM run alone (set-up, checks, tear-down). */
#ifndef TXALLOC_STAMP_LIKE_TMRBTREE_H
#define TXALLOC_STAMP_LIKE_TMRBTREE_H

#include <stdbool.h>

#include "tm.h"

typedef struct rbtree rbtree;

rbtree *rbtree_alloc(void);
/* Frees every node and the tree; free_value (may be NULL) is called on each value first. */
void rbtree_free(rbtree *t, void (*free_value)(void *value));

/* False (and no change) when the key is present. */
TM_CALLABLE bool TMrbtree_insert(TM_ARGDECL rbtree *t, long key, void *value);
/* The key's value, NULL when absent. */
TM_CALLABLE void *TMrbtree_get(TM_ARGDECL rbtree *t, long key);
/* Removes the key; its value, NULL when absent. */
TM_CALLABLE void *TMrbtree_remove(TM_ARGDECL rbtree *t, long key);

/* Calls fn on each pair in key order; stops and returns false when fn does. */
bool rbtree_for_each(const rbtree *t, bool (*fn)(long key, void *value, void *arg), void *arg);
/* Checks order, parent links, no red node with a red child and equal black heights; returns
 * the number of nodes, or -1 with the first problem in `err`. */
long rbtree_verify(const rbtree *t, char *err, size_t err_len);

#endif
