/* Skip list (Pugh) with head and tail sentinels. A node of level L (1..SKIP_MAX_LEVEL)
 * is linked into lists 0..L-1; its size is 16 + 8 L bytes. The level comes from the
 * random word the caller draws outside the transaction: P(level > l) = 2^-l.
 * Invariants: every list i is strictly increasing from head (LONG_MIN) to tail
 * (LONG_MAX); a node in list i has level > i and is also in list 0. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "intset.h"
#include "tx_api.h"

#define SKIP_MAX_LEVEL 16

typedef struct skip_node {
  long key;
  long level; /* fixed at creation */
  struct skip_node *next[];
} skip_node;

typedef struct intset_skiplist {
  skip_node *head, *tail;
  size_t min_node_size;
} intset_skiplist;

static size_t skip_node_bytes(long level) {
  return sizeof(skip_node) + (size_t)level * sizeof(skip_node *);
}

static void *skip_create(const intset_config *config) {
  intset_skiplist *s = malloc(sizeof *s);
  skip_node *head = calloc(1, skip_node_bytes(SKIP_MAX_LEVEL));
  skip_node *tail = calloc(1, skip_node_bytes(SKIP_MAX_LEVEL));
  if (!s || !head || !tail) {
    fprintf(stderr, "intset: out of memory\n");
    exit(1);
  }
  head->key = LONG_MIN;
  tail->key = LONG_MAX;
  head->level = tail->level = SKIP_MAX_LEVEL;
  for (int i = 0; i < SKIP_MAX_LEVEL; i++) head->next[i] = tail;
  s->head = head;
  s->tail = tail;
  s->min_node_size = config->node_size;
  return s;
}

/* Fills preds[i] (last node with key < key in list i) and succs[i] (its successor), for
 * every level; returns the key of succs[0]. */
TX_SAFE static long skip_find(skip_node *head, long key, skip_node **preds, skip_node **succs) {
  skip_node *x = head;
  long k = LONG_MAX;
  for (int i = SKIP_MAX_LEVEL - 1; i >= 0; i--) {
    skip_node *next = TX_LOAD(&x->next[i]);
    while ((k = TX_LOAD(&next->key)) < key) {
      x = next;
      next = TX_LOAD(&x->next[i]);
    }
    preds[i] = x;
    succs[i] = next;
  }
  return k;
}

TX_SAFE static bool skip_insert_tx(skip_node *head, size_t size, long level, long key) {
  skip_node *preds[SKIP_MAX_LEVEL], *succs[SKIP_MAX_LEVEL];
  if (skip_find(head, key, preds, succs) == key) return false;
  skip_node *n = TX_MALLOC(size);
  TX_INIT(&n->key, key);
  TX_INIT(&n->level, level);
  for (long i = 0; i < level; i++) {
    TX_INIT(&n->next[i], succs[i]);
    TX_STORE(&preds[i]->next[i], n);
  }
  return true;
}

TX_SAFE static bool skip_remove_tx(skip_node *head, long key) {
  skip_node *preds[SKIP_MAX_LEVEL], *succs[SKIP_MAX_LEVEL];
  if (skip_find(head, key, preds, succs) != key) return false;
  skip_node *victim = succs[0];
  long level = TX_LOAD(&victim->level);
  for (long i = 0; i < level; i++) TX_STORE(&preds[i]->next[i], TX_LOAD(&victim->next[i]));
  TX_FREE(victim);
  return true;
}

TX_SAFE static bool skip_contains_tx(skip_node *head, long key) {
  skip_node *x = head;
  for (int i = SKIP_MAX_LEVEL - 1; i >= 0; i--) {
    skip_node *next = TX_LOAD(&x->next[i]);
    long k;
    while ((k = TX_LOAD(&next->key)) < key) {
      x = next;
      next = TX_LOAD(&x->next[i]);
    }
    if (k == key) return true;
  }
  return false;
}

static bool skip_insert(void *set, long key, uint64_t random) {
  intset_skiplist *s = set;
  long level = 1;
  while (level < SKIP_MAX_LEVEL && (random & 1)) {
    level++;
    random >>= 1;
  }
  size_t size = skip_node_bytes(level);
  if (size < s->min_node_size) size = s->min_node_size;
  skip_node *head = s->head;
  TX_LOCAL bool done = false;
  TX_BEGIN done = skip_insert_tx(head, size, level, key);
  TX_END
  return done;
}

static bool skip_remove(void *set, long key) {
  skip_node *head = ((intset_skiplist *)set)->head;
  TX_LOCAL bool done = false;
  TX_BEGIN done = skip_remove_tx(head, key);
  TX_END
  return done;
}

static bool skip_contains(void *set, long key) {
  skip_node *head = ((intset_skiplist *)set)->head;
  TX_LOCAL bool found = false;
  TX_BEGIN_RO found = skip_contains_tx(head, key);
  TX_END
  return found;
}

static long skip_check(void *set, long *keys, long cap, char *err, size_t err_len) {
  intset_skiplist *s = set;
  /* List 0 gives the keys; its nodes are remembered to check membership of upper lists. */
  long count = 0;
  skip_node **nodes = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *nodes);
  if (!nodes) {
    snprintf(err, err_len, "skiplist: out of memory for the check");
    return -1;
  }
  long result = -1;
  for (int i = 0; i < SKIP_MAX_LEVEL; i++) {
    long position = 0; /* in list 0: nodes[position] is the next candidate */
    skip_node *prev = s->head;
    for (skip_node *n = prev->next[i]; n != s->tail; prev = n, n = n->next[i]) {
      if (!n) {
        snprintf(err, err_len, "skiplist: list %d does not reach the tail", i);
        goto out;
      }
      if (n->key <= prev->key) {
        snprintf(err, err_len, "skiplist: list %d: key %ld follows %ld", i, n->key, prev->key);
        goto out;
      }
      if (n->level <= i || n->level > SKIP_MAX_LEVEL) {
        snprintf(err, err_len, "skiplist: node %ld of level %ld in list %d", n->key, n->level, i);
        goto out;
      }
      if (i == 0) {
        if (count == cap) {
          snprintf(err, err_len, "skiplist: more than %ld keys", cap);
          goto out;
        }
        nodes[count] = n;
        keys[count++] = n->key;
      } else {
        while (position < count && nodes[position]->key < n->key) position++;
        if (position == count || nodes[position] != n) {
          snprintf(err, err_len, "skiplist: node %ld of list %d is not in list 0", n->key, i);
          goto out;
        }
      }
    }
  }
  result = count;
out:
  free(nodes);
  return result;
}

static void skip_destroy(void *set) {
  intset_skiplist *s = set;
  for (skip_node *n = s->head->next[0]; n != s->tail;) {
    skip_node *next = n->next[0];
    TX_FREE(n);
    n = next;
  }
  free(s->head);
  free(s->tail);
  free(s);
}

const intset_ops intset_skiplist_ops = {
    .name = "skiplist",
    .node_size = sizeof(skip_node) + sizeof(skip_node *),
    .create = skip_create,
    .insert = skip_insert,
    .remove = skip_remove,
    .contains = skip_contains,
    .check = skip_check,
    .destroy = skip_destroy,
};
