/* The intset structures single-threaded, on txalloc's TM: set semantics of insert, remove
 * and contains against a reference bitmap, and the end-of-run checks (intset.h `check`)
 * on purpose-broken structures, so that a run reported valid means the checks ran and
 * could have failed. The structure sources are included to reach their node types. */
#include <string.h>

#include "check.h"
#include "intset_hash.c"
#include "intset_list.c"
#include "intset_rbtree.c"
#include "intset_skiplist.c"

enum { RANGE = 512, CAP = RANGE + 1 };
static long keys[CAP];
static char err[256];

static long check_of(const intset_ops *ops, void *set) {
  err[0] = '\0';
  return ops->check(set, keys, CAP, err, sizeof err);
}

/* Random operations against a bitmap; returns the number of keys the set should hold. */
static long exercise(const intset_ops *ops, void *set) {
  static bool present[RANGE];
  memset(present, 0, sizeof present);
  long size = 0;
  uint64_t x = 12345;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    long key = (long)((x >> 33) % RANGE);
    switch ((x >> 20) % 3) {
    case 0:
      CHECKF(ops->insert(set, key, x >> 7) == !present[key], "%s insert %ld", ops->name, key);
      size += !present[key];
      present[key] = true;
      break;
    case 1:
      CHECKF(ops->remove(set, key) == present[key], "%s remove %ld", ops->name, key);
      size -= present[key];
      present[key] = false;
      break;
    default: CHECKF(ops->contains(set, key) == present[key], "%s contains %ld", ops->name, key);
    }
  }
  long n = check_of(ops, set);
  CHECKF(n == size, "%s: check says %ld (%s), expected %ld", ops->name, n, err, size);
  for (long i = 0; i < n; i++) CHECKF(present[keys[i]], "%s: stray key %ld", ops->name, keys[i]);
  return size;
}

static void test_list(void) {
  intset_config c = {.buckets = 1, .node_size = 0};
  void *set = intset_list_ops.create(&c);
  long size = exercise(&intset_list_ops, set);
  CHECK(size > 2);
  list_node *a = ((intset_list *)set)->head->next, *b = a->next;
  long t = a->key;
  a->key = b->key;
  b->key = t;
  CHECKF(check_of(&intset_list_ops, set) < 0, "swapped keys not detected");
  b->key = a->key;
  a->key = t;
  CHECK(check_of(&intset_list_ops, set) == size);
  CHECK(intset_list_ops.check(set, keys, size - 1, err, sizeof err) < 0); /* too many keys */
  intset_list_ops.destroy(set);
}

static void test_hash(void) {
  intset_config c = {.buckets = 7, .node_size = 0};
  void *set = intset_hash_ops.create(&c);
  long size = exercise(&intset_hash_ops, set);
  intset_hash *h = set;
  hash_node *n = NULL;
  for (long b = 0; b < h->buckets && !n; b++) n = h->table[b];
  CHECK(n != NULL);
  n->key += 1; /* now in the wrong bucket */
  CHECKF(check_of(&intset_hash_ops, set) < 0, "key in the wrong bucket not detected");
  n->key -= 1;
  CHECK(check_of(&intset_hash_ops, set) == size);
  intset_hash_ops.destroy(set);
}

static rb_node *find_red(rb_node *n) {
  if (!n) return NULL;
  if (n->color == RB_RED) return n;
  rb_node *r = find_red(n->left);
  return r ? r : find_red(n->right);
}

static void test_rbtree(void) {
  intset_config c = {.buckets = 1, .node_size = 0};
  void *set = intset_rbtree_ops.create(&c);
  long size = exercise(&intset_rbtree_ops, set);
  intset_rbtree *t = set;
  t->root->color = RB_RED;
  CHECKF(check_of(&intset_rbtree_ops, set) < 0, "red root not detected");
  t->root->color = RB_BLACK;
  rb_node *red = find_red(t->root);
  CHECK(red != NULL);
  red->color = RB_BLACK; /* one path gains a black node */
  CHECKF(check_of(&intset_rbtree_ops, set) < 0, "unequal black heights not detected");
  red->color = RB_RED;
  rb_node *child = t->root->left;
  child->parent = NULL;
  CHECKF(check_of(&intset_rbtree_ops, set) < 0, "wrong parent pointer not detected");
  child->parent = t->root;
  CHECK(check_of(&intset_rbtree_ops, set) == size);
  intset_rbtree_ops.destroy(set);
}

static void test_skiplist(void) {
  intset_config c = {.buckets = 1, .node_size = 0};
  void *set = intset_skiplist_ops.create(&c);
  long size = exercise(&intset_skiplist_ops, set);
  intset_skiplist *s = set;
  skip_node *prev = s->head, *n = prev->next[0];
  while (n != s->tail && n->level < 2) {
    prev = n;
    n = n->next[0];
  }
  CHECK(n != s->tail);
  prev->next[0] = n->next[0]; /* still linked at level 1, gone from level 0 */
  CHECKF(check_of(&intset_skiplist_ops, set) < 0, "node missing from level 0 not detected");
  prev->next[0] = n;
  CHECK(check_of(&intset_skiplist_ops, set) == size);
  intset_skiplist_ops.destroy(set);
}

int main(void) {
  test_list();
  test_hash();
  test_rbtree();
  test_skiplist();
  return check_exit();
}
