/* The avl workload's tree single-threaded, on txalloc's TM: insert (and update), delete
 * and lookup against a reference bitmap, the tree valid after each batch, then the
 * end-of-run check on purpose-broken trees, so that a run reported valid means the check
 * ran and could have failed. The program's source is included to reach its node type. */
#define main avl_program_main
int avl_program_main(int argc, char **argv);
#include "avl.c"
#undef main

#include "check.h"

enum { RANGE = 512 };
static char err[256];

static bool check_of(const avl_tree *t, long expected) {
  err[0] = '\0';
  return avl_check(t, expected, err, sizeof err);
}

/* Allocated with the process's malloc, unlike the TM's nodes: freed with free. */
static avl_node *make_node(int32_t key, int32_t height) {
  avl_node *n = malloc(sizeof *n);
  CHECK(n != NULL);
  memset(n, 0, sizeof *n);
  n->key = key;
  n->value = value_for(key, 0);
  n->height = height;
  return n;
}

int main(void) {
  avl_tree t = {.node_size = 48, .count = aligned_alloc(128, sizeof(avl_count))};
  CHECK(t.count != NULL);
  memset(t.count, 0, sizeof *t.count);
  static bool present[RANGE];
  long size = 0;
  uint64_t x = 12345;
  for (int i = 0; i < 20000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    int32_t key = (int32_t)((x >> 33) % RANGE);
    switch ((x >> 20) % 3) {
    case 0:
      CHECKF(avl_insert(&t, key, value_for(key, x)) == (present[key] ? AVL_UPDATED : AVL_INSERTED),
             "insert %d", key);
      size += !present[key];
      present[key] = true;
      break;
    case 1:
      CHECKF(avl_delete(&t, key) == present[key], "delete %d", key);
      size -= present[key];
      present[key] = false;
      break;
    default: CHECKF(avl_contains(&t, key) == present[key], "lookup %d", key);
    }
    if (i % 1000 == 0) CHECKF(check_of(&t, size), "after %d operations: %s", i, err);
  }
  CHECKF(check_of(&t, size), "%s", err);
  CHECK(size > 3 && t.root->child[0] && t.root->child[1]);

  CHECKF(!check_of(&t, size + 1), "a count the threads disagree with not detected");
  t.count->value++;
  CHECKF(!check_of(&t, size), "a count unequal to the nodes not detected");
  t.count->value--;

  avl_node *l = t.root->child[0], *r = t.root->child[1];
  int32_t key = l->key;
  l->key = r->key;
  CHECKF(!check_of(&t, size), "keys out of order not detected");
  l->key = key;
  l->value ^= 1;
  CHECKF(!check_of(&t, size), "a value of another key not detected");
  l->value ^= 1;
  t.root->height++;
  CHECKF(!check_of(&t, size), "a wrong height not detected");
  t.root->height--;
  CHECKF(check_of(&t, size), "%s", err);
  avl_free_subtree(t.root);

  /* A chain 1 -> 2 -> 3 with true heights: ordered but unbalanced at its top. */
  avl_tree chain = {.count = t.count, .root = make_node(1, 3)};
  chain.root->child[1] = make_node(2, 2);
  chain.root->child[1]->child[1] = make_node(3, 1);
  chain.count->value = 3;
  CHECKF(!check_of(&chain, 3), "an unbalanced node not detected");
  CHECKF(strstr(err, "unbalanced") != NULL, "wrong diagnosis: %s", err);
  free(chain.root->child[1]->child[1]);
  free(chain.root->child[1]);
  free(chain.root);
  free(t.count);
  return 0;
}
