/* Red-black tree with parent pointers and NULL leaves (CLRS, 2nd edition: deletion copies
 * the successor's key into the doomed node and unlinks the successor). Node = key, value,
 * parent, left, right, colour: 48 bytes, the size Baldassin et al. §5.3 discuss (a 48-byte
 * node shares a 32-byte stripe with its neighbour). Every field of a published node is
 * read and written transactionally; a fresh node is initialised plainly.
 * Invariants (checked at the end): binary-search order, parent pointers consistent, root
 * black, no red node with a red child, equal black height on every path. The fix-ups
 * rely on the TM's opacity: a transaction only ever sees a consistent tree. */
#include <stdio.h>
#include <stdlib.h>

#include "intset.h"
#include "tx_api.h"

enum { RB_RED = 0, RB_BLACK = 1 };

typedef struct rb_node {
  long key;
  long value;
  struct rb_node *parent;
  struct rb_node *left;
  struct rb_node *right;
  long color;
} rb_node;

typedef struct intset_rbtree {
  rb_node *root; /* shared: read and written transactionally */
  size_t node_size;
} intset_rbtree;

static void *rb_create(const intset_config *config) {
  intset_rbtree *t = malloc(sizeof *t);
  if (!t) {
    fprintf(stderr, "intset: out of memory\n");
    exit(1);
  }
  t->root = NULL;
  t->node_size = config->node_size < sizeof(rb_node) ? sizeof(rb_node) : config->node_size;
  return t;
}

TX_SAFE static long rb_color(rb_node *n) { return n ? TX_LOAD(&n->color) : RB_BLACK; }

/* Writes a colour only when it changes (a store is a write-set entry and a lock). */
TX_SAFE static void rb_set_color(rb_node *n, long color) {
  if (TX_LOAD(&n->color) != color) TX_STORE(&n->color, color);
}

/* Replaces x by y in x's parent (or as the root). */
TX_SAFE static void rb_replace_child(intset_rbtree *t, rb_node *parent, rb_node *x, rb_node *y) {
  if (!parent)
    TX_STORE(&t->root, y);
  else if (TX_LOAD(&parent->left) == x)
    TX_STORE(&parent->left, y);
  else
    TX_STORE(&parent->right, y);
}

TX_SAFE static void rb_rotate_left(intset_rbtree *t, rb_node *x) {
  rb_node *y = TX_LOAD(&x->right);
  rb_node *middle = TX_LOAD(&y->left);
  TX_STORE(&x->right, middle);
  if (middle) TX_STORE(&middle->parent, x);
  rb_node *parent = TX_LOAD(&x->parent);
  TX_STORE(&y->parent, parent);
  rb_replace_child(t, parent, x, y);
  TX_STORE(&y->left, x);
  TX_STORE(&x->parent, y);
}

TX_SAFE static void rb_rotate_right(intset_rbtree *t, rb_node *x) {
  rb_node *y = TX_LOAD(&x->left);
  rb_node *middle = TX_LOAD(&y->right);
  TX_STORE(&x->left, middle);
  if (middle) TX_STORE(&middle->parent, x);
  rb_node *parent = TX_LOAD(&x->parent);
  TX_STORE(&y->parent, parent);
  rb_replace_child(t, parent, x, y);
  TX_STORE(&y->right, x);
  TX_STORE(&x->parent, y);
}

TX_SAFE static rb_node *rb_lookup(intset_rbtree *t, long key) {
  rb_node *n = TX_LOAD(&t->root);
  while (n) {
    long k = TX_LOAD(&n->key);
    if (key == k) return n;
    n = key < k ? TX_LOAD(&n->left) : TX_LOAD(&n->right);
  }
  return NULL;
}

TX_SAFE static void rb_insert_fixup(intset_rbtree *t, rb_node *z) {
  rb_node *p;
  while ((p = TX_LOAD(&z->parent)) && TX_LOAD(&p->color) == RB_RED) {
    rb_node *g = TX_LOAD(&p->parent); /* p is red, so not the root */
    if (p == TX_LOAD(&g->left)) {
      rb_node *uncle = TX_LOAD(&g->right);
      if (rb_color(uncle) == RB_RED) {
        rb_set_color(p, RB_BLACK);
        rb_set_color(uncle, RB_BLACK);
        rb_set_color(g, RB_RED);
        z = g;
      } else {
        if (z == TX_LOAD(&p->right)) {
          z = p;
          rb_rotate_left(t, z);
          p = TX_LOAD(&z->parent);
        }
        rb_set_color(p, RB_BLACK);
        rb_set_color(g, RB_RED);
        rb_rotate_right(t, g);
      }
    } else {
      rb_node *uncle = TX_LOAD(&g->left);
      if (rb_color(uncle) == RB_RED) {
        rb_set_color(p, RB_BLACK);
        rb_set_color(uncle, RB_BLACK);
        rb_set_color(g, RB_RED);
        z = g;
      } else {
        if (z == TX_LOAD(&p->left)) {
          z = p;
          rb_rotate_right(t, z);
          p = TX_LOAD(&z->parent);
        }
        rb_set_color(p, RB_BLACK);
        rb_set_color(g, RB_RED);
        rb_rotate_left(t, g);
      }
    }
  }
  rb_set_color(TX_LOAD(&t->root), RB_BLACK);
}

TX_SAFE static bool rb_insert_tx(intset_rbtree *t, size_t node_size, long key) {
  rb_node *parent = NULL;
  rb_node *n = TX_LOAD(&t->root);
  bool left = false;
  while (n) {
    long k = TX_LOAD(&n->key);
    if (key == k) return false;
    parent = n;
    left = key < k;
    n = left ? TX_LOAD(&n->left) : TX_LOAD(&n->right);
  }
  rb_node *z = TX_MALLOC(node_size);
  TX_INIT(&z->key, key);
  TX_INIT(&z->value, key);
  TX_INIT(&z->parent, parent);
  TX_INIT(&z->left, (rb_node *)NULL);
  TX_INIT(&z->right, (rb_node *)NULL);
  TX_INIT(&z->color, (long)RB_RED);
  if (!parent)
    TX_STORE(&t->root, z);
  else if (left)
    TX_STORE(&parent->left, z);
  else
    TX_STORE(&parent->right, z);
  rb_insert_fixup(t, z);
  return true;
}

/* x (possibly NULL) carries an extra black; parent is x's parent. */
TX_SAFE static void rb_delete_fixup(intset_rbtree *t, rb_node *x, rb_node *parent) {
  while (x != TX_LOAD(&t->root) && rb_color(x) == RB_BLACK) {
    if (x == TX_LOAD(&parent->left)) {
      rb_node *w = TX_LOAD(&parent->right); /* not NULL: its side has black height >= 1 */
      if (TX_LOAD(&w->color) == RB_RED) {
        rb_set_color(w, RB_BLACK);
        rb_set_color(parent, RB_RED);
        rb_rotate_left(t, parent);
        w = TX_LOAD(&parent->right);
      }
      if (rb_color(TX_LOAD(&w->left)) == RB_BLACK && rb_color(TX_LOAD(&w->right)) == RB_BLACK) {
        rb_set_color(w, RB_RED);
        x = parent;
        parent = TX_LOAD(&x->parent);
      } else {
        if (rb_color(TX_LOAD(&w->right)) == RB_BLACK) {
          rb_set_color(TX_LOAD(&w->left), RB_BLACK);
          rb_set_color(w, RB_RED);
          rb_rotate_right(t, w);
          w = TX_LOAD(&parent->right);
        }
        rb_set_color(w, TX_LOAD(&parent->color));
        rb_set_color(parent, RB_BLACK);
        rb_set_color(TX_LOAD(&w->right), RB_BLACK);
        rb_rotate_left(t, parent);
        x = TX_LOAD(&t->root);
        parent = NULL;
      }
    } else {
      rb_node *w = TX_LOAD(&parent->left);
      if (TX_LOAD(&w->color) == RB_RED) {
        rb_set_color(w, RB_BLACK);
        rb_set_color(parent, RB_RED);
        rb_rotate_right(t, parent);
        w = TX_LOAD(&parent->left);
      }
      if (rb_color(TX_LOAD(&w->right)) == RB_BLACK && rb_color(TX_LOAD(&w->left)) == RB_BLACK) {
        rb_set_color(w, RB_RED);
        x = parent;
        parent = TX_LOAD(&x->parent);
      } else {
        if (rb_color(TX_LOAD(&w->left)) == RB_BLACK) {
          rb_set_color(TX_LOAD(&w->right), RB_BLACK);
          rb_set_color(w, RB_RED);
          rb_rotate_left(t, w);
          w = TX_LOAD(&parent->left);
        }
        rb_set_color(w, TX_LOAD(&parent->color));
        rb_set_color(parent, RB_BLACK);
        rb_set_color(TX_LOAD(&w->left), RB_BLACK);
        rb_rotate_right(t, parent);
        x = TX_LOAD(&t->root);
        parent = NULL;
      }
    }
  }
  if (x) rb_set_color(x, RB_BLACK);
}

TX_SAFE static bool rb_remove_tx(intset_rbtree *t, long key) {
  rb_node *z = rb_lookup(t, key);
  if (!z) return false;
  /* y: the node unlinked — z itself, or z's successor when z has two children. */
  rb_node *y = z;
  if (TX_LOAD(&z->left) && TX_LOAD(&z->right)) {
    y = TX_LOAD(&z->right);
    for (rb_node *l; (l = TX_LOAD(&y->left));) y = l;
  }
  rb_node *x = TX_LOAD(&y->left);
  if (!x) x = TX_LOAD(&y->right);
  rb_node *parent = TX_LOAD(&y->parent);
  if (x) TX_STORE(&x->parent, parent);
  rb_replace_child(t, parent, y, x);
  if (y != z) {
    TX_STORE(&z->key, TX_LOAD(&y->key));
    TX_STORE(&z->value, TX_LOAD(&y->value));
  }
  if (TX_LOAD(&y->color) == RB_BLACK) rb_delete_fixup(t, x, parent);
  TX_FREE(y);
  return true;
}

static bool rb_insert(void *set, long key, uint64_t random) {
  (void)random;
  intset_rbtree *t = set;
  size_t node_size = t->node_size;
  TX_LOCAL bool done = false;
  TX_BEGIN done = rb_insert_tx(t, node_size, key);
  TX_END
  return done;
}

static bool rb_remove(void *set, long key) {
  intset_rbtree *t = set;
  TX_LOCAL bool done = false;
  TX_BEGIN done = rb_remove_tx(t, key);
  TX_END
  return done;
}

static bool rb_contains(void *set, long key) {
  intset_rbtree *t = set;
  TX_LOCAL bool found = false;
  TX_BEGIN_RO found = rb_lookup(t, key) != NULL;
  TX_END
  return found;
}

typedef struct rb_walk {
  long *keys;
  long cap, count;
  char *err;
  size_t err_len;
} rb_walk;

/* Returns the black height of the subtree (NULL leaves count 1), or -1 on a violation. */
static long rb_check_node(rb_walk *w, rb_node *n, rb_node *parent, const long *lo, const long *hi) {
  if (!n) return 1;
  if (n->parent != parent) {
    snprintf(w->err, w->err_len, "rbtree: node %ld has a wrong parent pointer", n->key);
    return -1;
  }
  if ((lo && n->key <= *lo) || (hi && n->key >= *hi)) {
    snprintf(w->err, w->err_len, "rbtree: key %ld out of order", n->key);
    return -1;
  }
  if (n->color != RB_RED && n->color != RB_BLACK) {
    snprintf(w->err, w->err_len, "rbtree: node %ld has colour %ld", n->key, n->color);
    return -1;
  }
  if (n->color == RB_RED &&
      ((n->left && n->left->color == RB_RED) || (n->right && n->right->color == RB_RED))) {
    snprintf(w->err, w->err_len, "rbtree: red node %ld has a red child", n->key);
    return -1;
  }
  long left = rb_check_node(w, n->left, n, lo, &n->key);
  if (left < 0) return -1;
  if (w->count == w->cap) {
    snprintf(w->err, w->err_len, "rbtree: more than %ld keys", w->cap);
    return -1;
  }
  w->keys[w->count++] = n->key;
  long right = rb_check_node(w, n->right, n, &n->key, hi);
  if (right < 0) return -1;
  if (left != right) {
    snprintf(w->err, w->err_len, "rbtree: black heights %ld and %ld below node %ld", left, right,
             n->key);
    return -1;
  }
  return left + (n->color == RB_BLACK);
}

static long rb_check(void *set, long *keys, long cap, char *err, size_t err_len) {
  intset_rbtree *t = set;
  if (t->root && t->root->color != RB_BLACK) {
    snprintf(err, err_len, "rbtree: the root is red");
    return -1;
  }
  rb_walk w = {keys, cap, 0, err, err_len};
  return rb_check_node(&w, t->root, NULL, NULL, NULL) < 0 ? -1 : w.count;
}

static void rb_free_subtree(rb_node *n) {
  while (n) {
    rb_free_subtree(n->left);
    rb_node *right = n->right;
    TX_FREE(n);
    n = right;
  }
}

static void rb_destroy(void *set) {
  intset_rbtree *t = set;
  rb_free_subtree(t->root);
  free(t);
}

const intset_ops intset_rbtree_ops = {
    .name = "rbtree",
    .node_size = sizeof(rb_node),
    .create = rb_create,
    .insert = rb_insert,
    .remove = rb_remove,
    .contains = rb_contains,
    .check = rb_check,
    .destroy = rb_destroy,
};
