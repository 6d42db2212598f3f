/* binarytrees (the Computer Language Benchmarks Game's binary-trees, in its original form
 * with an item in each node, after Hans Boehm's GCBench): a realistic program whose time
 * is dominated by small allocations. It builds and walks many perfect binary trees of
 * 24-byte nodes: a stretch tree of depth max+1, a long-lived tree of depth max kept until
 * the end, and for each depth d = 4, 6, .., max, 2^(max - d + 4) pairs of short-lived trees.
 * A node's check is item + check(left) - check(right), which is item - 1 for any tree of
 * depth >= 1 built by bottom_up(item, depth); the run is valid when every check and every
 * node count comes out right. Single-threaded; with --threads N, N threads each run the
 * whole program independently. `passes` repeats the whole program (the scale knob). */
#include <stdlib.h>

#include "workload.h"

static long threads = 1, passes = 4, depth = 14, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "independent copies of the program run in parallel"},
    {"passes", &passes, 1, 1L << 30, "times each thread runs the whole program"},
    {"depth", &depth, 6, 24, "maximum tree depth (work doubles per level)"},
    {"seed", &seed, 0, 1L << 62, "offsets the items (the tree shapes are fixed)"},
};
static const wl_program program = {
    "binarytrees",
    "The Benchmarks Game's binary-trees (the version with items): builds, checks and frees\n"
    "many perfect binary trees of small nodes; single-threaded, allocation-dominated.",
    "passes", options, sizeof options / sizeof options[0]};

typedef struct node {
  struct node *left, *right;
  long item;
} node;

static node *bottom_up(long item, long d) {
  node *n = wl_malloc(sizeof *n);
  n->item = item;
  if (d > 0) {
    n->left = bottom_up(2 * item - 1, d - 1);
    n->right = bottom_up(2 * item, d - 1);
  } else {
    n->left = n->right = NULL;
  }
  return n;
}

static long item_check(const node *n, long *count) {
  ++*count;
  if (!n->left) return n->item;
  return n->item + item_check(n->left, count) - item_check(n->right, count);
}

static void delete_tree(node *n) {
  if (n->left) {
    delete_tree(n->left);
    delete_tree(n->right);
  }
  free(n);
}

typedef struct thread_totals {
  WL_OWN_LINE uint64_t nodes;
  bool valid;
} thread_totals;

/* Builds, checks and frees one tree; returns whether the check and node count hold. */
static bool one_tree(long item, long d, uint64_t *nodes) {
  node *t = bottom_up(item, d);
  long count = 0;
  long check = item_check(t, &count);
  delete_tree(t);
  *nodes += (uint64_t)count;
  return check == (d ? item - 1 : item) && count == (2L << d) - 1;
}

static void worker(int index, void *arg) {
  thread_totals *totals = &((thread_totals *)arg)[index];
  const long min_depth = 4, max_depth = depth;
  long base = seed % 1000; /* items stay far from overflow */
  bool valid = true;
  uint64_t nodes = 0;
  for (long p = 0; p < passes; p++) {
    valid &= one_tree(base, max_depth + 1, &nodes); /* stretch */
    node *long_lived = bottom_up(base, max_depth);
    long lived_count = 0;
    for (long d = min_depth; d <= max_depth; d += 2) {
      long iterations = 1L << (max_depth - d + min_depth);
      for (long i = 1; i <= iterations; i++) {
        valid &= one_tree(base + i, d, &nodes);
        valid &= one_tree(base - i, d, &nodes);
      }
    }
    valid &= item_check(long_lived, &lived_count) == base - 1;
    valid &= lived_count == (2L << max_depth) - 1;
    nodes += (uint64_t)lived_count;
    delete_tree(long_lived);
  }
  totals->nodes = nodes;
  totals->valid = valid;
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  uint64_t nodes = 0;
  bool valid = true;
  for (long t = 0; t < threads; t++) {
    nodes += totals[t].nodes;
    valid &= totals[t].valid;
  }
  free(totals);
  /* ops: nodes allocated (each one malloc and one free) */
  wl_uint_member node_count = {"nodes", nodes};
  return wl_report(&program, time_s, nodes, wl_extra_uint, &node_count, valid);
}
