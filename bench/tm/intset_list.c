/* Sorted linked list with sentinels (as in TinySTM's intset and Baldassin et al. §5.1):
 * node = 64-bit key + next pointer, 16 bytes. Traversals read every key and next pointer
 * transactionally, so an update transaction's read set is the prefix it walked.
 * Invariant: keys strictly increase from the head sentinel (LONG_MIN) to the tail
 * sentinel (LONG_MAX). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "intset.h"
#include "tx_api.h"

typedef struct list_node {
  long key;
  struct list_node *next;
} list_node;

typedef struct intset_list {
  list_node *head;
  size_t node_size;
} intset_list;

static void *list_create(const intset_config *config) {
  size_t node_size = config->node_size < sizeof(list_node) ? sizeof(list_node) : config->node_size;
  intset_list *s = malloc(sizeof *s);
  list_node *head = calloc(1, node_size), *tail = calloc(1, node_size);
  if (!s || !head || !tail) {
    fprintf(stderr, "intset: out of memory\n");
    exit(1);
  }
  s->node_size = node_size;
  s->head = head;
  tail->key = LONG_MAX;
  tail->next = NULL;
  s->head->key = LONG_MIN;
  s->head->next = tail;
  return s;
}

/* Postcondition: prev->key < key <= (*next)->key. Returns (*next)->key. */
TX_SAFE static long list_find(list_node *head, long key, list_node **prev_out,
                              list_node **next_out) {
  list_node *prev = head;
  list_node *next = TX_LOAD(&prev->next);
  long k;
  while ((k = TX_LOAD(&next->key)) < key) {
    prev = next;
    next = TX_LOAD(&prev->next);
  }
  *prev_out = prev;
  *next_out = next;
  return k;
}

TX_SAFE static bool list_insert_tx(list_node *head, size_t node_size, long key) {
  list_node *prev, *next;
  if (list_find(head, key, &prev, &next) == key) return false;
  list_node *n = TX_MALLOC(node_size);
  TX_INIT(&n->key, key);
  TX_INIT(&n->next, next);
  TX_STORE(&prev->next, n);
  return true;
}

TX_SAFE static bool list_remove_tx(list_node *head, long key) {
  list_node *prev, *next;
  if (list_find(head, key, &prev, &next) != key) return false;
  TX_STORE(&prev->next, TX_LOAD(&next->next));
  TX_FREE(next);
  return true;
}

TX_SAFE static bool list_contains_tx(list_node *head, long key) {
  list_node *prev, *next;
  return list_find(head, key, &prev, &next) == key;
}

static bool list_insert(void *set, long key, uint64_t random) {
  (void)random;
  intset_list *s = set;
  list_node *head = s->head;
  size_t node_size = s->node_size;
  TX_LOCAL bool done = false;
  TX_BEGIN done = list_insert_tx(head, node_size, key);
  TX_END
  return done;
}

static bool list_remove(void *set, long key) {
  list_node *head = ((intset_list *)set)->head;
  TX_LOCAL bool done = false;
  TX_BEGIN done = list_remove_tx(head, key);
  TX_END
  return done;
}

static bool list_contains(void *set, long key) {
  list_node *head = ((intset_list *)set)->head;
  TX_LOCAL bool found = false;
  TX_BEGIN_RO found = list_contains_tx(head, key);
  TX_END
  return found;
}

static long list_check(void *set, long *keys, long cap, char *err, size_t err_len) {
  intset_list *s = set;
  long count = 0;
  list_node *prev = s->head;
  for (list_node *n = prev->next; n; prev = n, n = n->next) {
    if (n->key <= prev->key) {
      snprintf(err, err_len, "list: key %ld follows key %ld", n->key, prev->key);
      return -1;
    }
    if (n->key == LONG_MAX) {
      if (n->next) {
        snprintf(err, err_len, "list: tail sentinel is not last");
        return -1;
      }
      return count;
    }
    if (count == cap) {
      snprintf(err, err_len, "list: more than %ld keys", cap);
      return -1;
    }
    keys[count++] = n->key;
  }
  snprintf(err, err_len, "list: tail sentinel missing");
  return -1;
}

static void list_destroy(void *set) {
  intset_list *s = set;
  for (list_node *n = s->head; n;) {
    list_node *next = n->next;
    if (n == s->head || n->next == NULL)
      free(n); /* sentinels came from calloc */
    else
      TX_FREE(n);
    n = next;
  }
  free(s);
}

const intset_ops intset_list_ops = {
    .name = "list",
    .node_size = sizeof(list_node),
    .create = list_create,
    .insert = list_insert,
    .remove = list_remove,
    .contains = list_contains,
    .check = list_check,
    .destroy = list_destroy,
};
