/* tmrbtree.h: a red-black tree without sentinel (a NULL child is black), so that no shared
 * nil node makes every transaction conflict. Removal of a node with two children moves its
 * successor's pair into it and removes the successor, as STAMP's tree does. */
#include "tmrbtree.h"

#include <limits.h>
#include <stdio.h>

enum { BLACK = 0, RED = 1 };

typedef struct node {
  long key;
  void *value;
  struct node *left, *right, *parent;
  long color;
} node;

struct rbtree {
  node *root;
};

/* Field access inside a transaction. */
#define LD(o, f) TM_SHARED_READ((o)->f)
#define LDN(o, f) ((node *)TM_SHARED_READ_P((o)->f))
#define ST(o, f, v) TM_SHARED_WRITE((o)->f, (v))
#define STN(o, f, v) TM_SHARED_WRITE_P((o)->f, (v))

rbtree *rbtree_alloc(void) {
  rbtree *t = TM_MALLOC(sizeof *t);
  if (!t) abort();
  t->root = NULL;
  return t;
}

static void free_subtree(node *n, void (*free_value)(void *)) {
  while (n) {
    free_subtree(n->left, free_value);
    node *right = n->right;
    if (free_value) free_value(n->value);
    TM_FREE(n);
    n = right;
  }
}

void rbtree_free(rbtree *t, void (*free_value)(void *value)) {
  free_subtree(t->root, free_value);
  TM_FREE(t);
}

static long color_of(TM_ARGDECL node *n) { return n ? LD(n, color) : BLACK; }

static void rotate_left(TM_ARGDECL rbtree *t, node *x) {
  node *y = LDN(x, right);
  node *yl = LDN(y, left);
  STN(x, right, yl);
  if (yl) STN(yl, parent, x);
  node *xp = LDN(x, parent);
  STN(y, parent, xp);
  if (!xp)
    STN(t, root, y);
  else if (LDN(xp, left) == x)
    STN(xp, left, y);
  else
    STN(xp, right, y);
  STN(y, left, x);
  STN(x, parent, y);
}

static void rotate_right(TM_ARGDECL rbtree *t, node *x) {
  node *y = LDN(x, left);
  node *yr = LDN(y, right);
  STN(x, left, yr);
  if (yr) STN(yr, parent, x);
  node *xp = LDN(x, parent);
  STN(y, parent, xp);
  if (!xp)
    STN(t, root, y);
  else if (LDN(xp, right) == x)
    STN(xp, right, y);
  else
    STN(xp, left, y);
  STN(y, right, x);
  STN(x, parent, y);
}

static node *lookup(TM_ARGDECL rbtree *t, long key) {
  node *n = LDN(t, root);
  while (n) {
    long k = LD(n, key);
    if (key == k) return n;
    n = key < k ? LDN(n, left) : LDN(n, right);
  }
  return NULL;
}

void *TMrbtree_get(TM_ARGDECL rbtree *t, long key) {
  node *n = lookup(TM_ARG t, key);
  return n ? TM_SHARED_READ_P(n->value) : NULL;
}

static void insert_fixup(TM_ARGDECL rbtree *t, node *z) {
  for (node *zp; (zp = LDN(z, parent)) && LD(zp, color) == RED;) {
    node *g = LDN(zp, parent); /* a red node is not the root */
    bool left = LDN(g, left) == zp;
    node *uncle = left ? LDN(g, right) : LDN(g, left);
    if (color_of(TM_ARG uncle) == RED) {
      ST(zp, color, BLACK);
      ST(uncle, color, BLACK);
      ST(g, color, RED);
      z = g;
      continue;
    }
    if (z == (left ? LDN(zp, right) : LDN(zp, left))) {
      z = zp;
      if (left)
        rotate_left(TM_ARG t, z);
      else
        rotate_right(TM_ARG t, z);
      zp = LDN(z, parent);
    }
    ST(zp, color, BLACK);
    ST(g, color, RED);
    if (left)
      rotate_right(TM_ARG t, g);
    else
      rotate_left(TM_ARG t, g);
  }
  ST(LDN(t, root), color, BLACK);
}

bool TMrbtree_insert(TM_ARGDECL rbtree *t, long key, void *value) {
  node *parent = NULL, *n = LDN(t, root);
  bool left = false;
  while (n) {
    long k = LD(n, key);
    if (key == k) return false;
    parent = n;
    left = key < k;
    n = left ? LDN(n, left) : LDN(n, right);
  }
  node *z = TM_MALLOC(sizeof *z);
  if (!z) abort();
  /* Not yet published: plain initialisation. */
  *z = (node){.key = key, .value = value, .parent = parent, .color = RED};
  if (!parent)
    STN(t, root, z);
  else if (left)
    STN(parent, left, z);
  else
    STN(parent, right, z);
  insert_fixup(TM_ARG t, z);
  return true;
}

/* x (possibly NULL) took the place of a removed black node under xp. */
static void remove_fixup(TM_ARGDECL rbtree *t, node *x, node *xp) {
  while (xp && color_of(TM_ARG x) == BLACK) {
    bool left = LDN(xp, left) == x;
    node *w = left ? LDN(xp, right) : LDN(xp, left); /* not NULL: black heights */
    if (LD(w, color) == RED) {
      ST(w, color, BLACK);
      ST(xp, color, RED);
      if (left)
        rotate_left(TM_ARG t, xp);
      else
        rotate_right(TM_ARG t, xp);
      w = left ? LDN(xp, right) : LDN(xp, left);
    }
    node *near = left ? LDN(w, left) : LDN(w, right);
    node *far = left ? LDN(w, right) : LDN(w, left);
    if (color_of(TM_ARG near) == BLACK && color_of(TM_ARG far) == BLACK) {
      ST(w, color, RED);
      x = xp;
      xp = LDN(x, parent);
      continue;
    }
    if (color_of(TM_ARG far) == BLACK) {
      ST(near, color, BLACK);
      ST(w, color, RED);
      if (left)
        rotate_right(TM_ARG t, w);
      else
        rotate_left(TM_ARG t, w);
      w = left ? LDN(xp, right) : LDN(xp, left);
      far = left ? LDN(w, right) : LDN(w, left);
    }
    ST(w, color, LD(xp, color));
    ST(xp, color, BLACK);
    ST(far, color, BLACK);
    if (left)
      rotate_left(TM_ARG t, xp);
    else
      rotate_right(TM_ARG t, xp);
    x = LDN(t, root);
    xp = NULL;
  }
  if (x) ST(x, color, BLACK);
}

void *TMrbtree_remove(TM_ARGDECL rbtree *t, long key) {
  node *z = lookup(TM_ARG t, key);
  if (!z) return NULL;
  void *value = TM_SHARED_READ_P(z->value);
  node *zl = LDN(z, left), *zr = LDN(z, right);
  if (zl && zr) {
    node *y = zr;
    for (node *l; (l = LDN(y, left));) y = l;
    ST(z, key, LD(y, key));
    STN(z, value, TM_SHARED_READ_P(y->value));
    z = y;
    zl = NULL;
    zr = LDN(z, right);
  }
  node *x = zl ? zl : zr;
  node *xp = LDN(z, parent);
  if (x) STN(x, parent, xp);
  if (!xp)
    STN(t, root, x);
  else if (LDN(xp, left) == z)
    STN(xp, left, x);
  else
    STN(xp, right, x);
  if (LD(z, color) == BLACK) remove_fixup(TM_ARG t, x, xp);
  TM_FREE(z);
  return value;
}

static bool for_each(const node *n, bool (*fn)(long, void *, void *), void *arg) {
  for (; n; n = n->right) {
    if (!for_each(n->left, fn, arg) || !fn(n->key, n->value, arg)) return false;
  }
  return true;
}

bool rbtree_for_each(const rbtree *t, bool (*fn)(long key, void *value, void *arg), void *arg) {
  return for_each(t->root, fn, arg);
}

/* The black height of the subtree, or -1 after writing the problem into err. */
static long verify(const node *n, const node *parent, long lo, long hi, long *count, char *err,
                   size_t err_len) {
  if (!n) return 1;
  (*count)++;
  if (n->parent != parent) {
    snprintf(err, err_len, "node %ld: wrong parent link", n->key);
    return -1;
  }
  if (n->key < lo || n->key > hi) {
    snprintf(err, err_len, "node %ld: out of order", n->key);
    return -1;
  }
  if (n->color == RED &&
      ((n->left && n->left->color == RED) || (n->right && n->right->color == RED))) {
    snprintf(err, err_len, "node %ld: red with a red child", n->key);
    return -1;
  }
  if (!n->value) {
    snprintf(err, err_len, "node %ld: NULL value", n->key);
    return -1;
  }
  long left = verify(n->left, n, lo, n->key - 1, count, err, err_len);
  if (left < 0) return -1;
  long right = verify(n->right, n, n->key + 1, hi, count, err, err_len);
  if (right < 0) return -1;
  if (left != right) {
    snprintf(err, err_len, "node %ld: black heights %ld and %ld differ", n->key, left, right);
    return -1;
  }
  return left + (n->color == BLACK);
}

long rbtree_verify(const rbtree *t, char *err, size_t err_len) {
  long count = 0;
  if (t->root && t->root->color != BLACK) {
    snprintf(err, err_len, "red root");
    return -1;
  }
  return verify(t->root, NULL, LONG_MIN, LONG_MAX, &count, err, err_len) < 0 ? -1 : count;
}
