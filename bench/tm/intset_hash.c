/* Hash set: a table of buckets, each a sorted singly linked list without sentinels
 * (Baldassin et al. §5.2: 16-byte nodes, 128 Ki buckets by default, so collisions are rare
 * and transactions short). Bucket of key k: k mod buckets (keys are non-negative).
 * Invariant: every node of bucket b has key mod buckets == b, keys strictly increase
 * along a bucket. */
#include <stdio.h>
#include <stdlib.h>

#include "intset.h"
#include "tx_api.h"

typedef struct hash_node {
  long key;
  struct hash_node *next;
} hash_node;

typedef struct intset_hash {
  hash_node **table;
  long buckets;
  size_t node_size;
} intset_hash;

static void *hash_create(const intset_config *config) {
  intset_hash *s = malloc(sizeof *s);
  hash_node **table = calloc((size_t)config->buckets, sizeof *table);
  if (!s || !table) {
    fprintf(stderr, "intset: out of memory\n");
    exit(1);
  }
  s->table = table;
  s->buckets = config->buckets;
  s->node_size = config->node_size < sizeof(hash_node) ? sizeof(hash_node) : config->node_size;
  return s;
}

/* Postcondition: *link is the first node with key >= key (or NULL); returns that node. */
TX_SAFE static hash_node *hash_find(hash_node **bucket, long key, hash_node ***link_out) {
  hash_node **link = bucket;
  hash_node *n = TX_LOAD(link);
  while (n && TX_LOAD(&n->key) < key) {
    link = &n->next;
    n = TX_LOAD(link);
  }
  *link_out = link;
  return n;
}

TX_SAFE static bool hash_insert_tx(hash_node **bucket, size_t node_size, long key) {
  hash_node **link;
  hash_node *next = hash_find(bucket, key, &link);
  if (next && TX_LOAD(&next->key) == key) return false;
  hash_node *n = TX_MALLOC(node_size);
  TX_INIT(&n->key, key);
  TX_INIT(&n->next, next);
  TX_STORE(link, n);
  return true;
}

TX_SAFE static bool hash_remove_tx(hash_node **bucket, long key) {
  hash_node **link;
  hash_node *n = hash_find(bucket, key, &link);
  if (!n || TX_LOAD(&n->key) != key) return false;
  TX_STORE(link, TX_LOAD(&n->next));
  TX_FREE(n);
  return true;
}

TX_SAFE static bool hash_contains_tx(hash_node **bucket, long key) {
  hash_node **link;
  hash_node *n = hash_find(bucket, key, &link);
  return n && TX_LOAD(&n->key) == key;
}

/* key mod buckets; a mask when buckets is a power of two (the default): a 64-bit division
 * costs both TMs compared the same tens of cycles per operation, a third of an empty
 * transaction here, and would only dilute the comparison. */
static hash_node **bucket_of(intset_hash *s, long key) {
  long b = (s->buckets & (s->buckets - 1)) == 0 ? key & (s->buckets - 1) : key % s->buckets;
  return &s->table[b];
}

static bool hash_insert(void *set, long key, uint64_t random) {
  (void)random;
  intset_hash *s = set;
  hash_node **bucket = bucket_of(s, key);
  size_t node_size = s->node_size;
  TX_LOCAL bool done = false;
  TX_BEGIN done = hash_insert_tx(bucket, node_size, key);
  TX_END
  return done;
}

static bool hash_remove(void *set, long key) {
  hash_node **bucket = bucket_of(set, key);
  TX_LOCAL bool done = false;
  TX_BEGIN done = hash_remove_tx(bucket, key);
  TX_END
  return done;
}

static bool hash_contains(void *set, long key) {
  hash_node **bucket = bucket_of(set, key);
  TX_LOCAL bool found = false;
  TX_BEGIN_RO found = hash_contains_tx(bucket, key);
  TX_END
  return found;
}

static long hash_check(void *set, long *keys, long cap, char *err, size_t err_len) {
  intset_hash *s = set;
  long count = 0;
  for (long b = 0; b < s->buckets; b++) {
    for (hash_node *n = s->table[b], *prev = NULL; n; prev = n, n = n->next) {
      if (n->key < 0 || n->key % s->buckets != b) {
        snprintf(err, err_len, "hash: key %ld in bucket %ld", n->key, b);
        return -1;
      }
      if (prev && n->key <= prev->key) {
        snprintf(err, err_len, "hash: bucket %ld: key %ld follows %ld", b, n->key, prev->key);
        return -1;
      }
      if (count == cap) {
        snprintf(err, err_len, "hash: more than %ld keys", cap);
        return -1;
      }
      keys[count++] = n->key;
    }
  }
  return count;
}

static void hash_destroy(void *set) {
  intset_hash *s = set;
  for (long b = 0; b < s->buckets; b++) {
    for (hash_node *n = s->table[b]; n;) {
      hash_node *next = n->next;
      TX_FREE(n);
      n = next;
    }
  }
  free(s->table);
  free(s);
}

const intset_ops intset_hash_ops = {
    .name = "hash",
    .node_size = sizeof(hash_node),
    .create = hash_create,
    .insert = hash_insert,
    .remove = hash_remove,
    .contains = hash_contains,
    .check = hash_check,
    .destroy = hash_destroy,
};
