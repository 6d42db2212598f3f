/* avl: the AVL-tree workload of Dice et al. (2016) §3, Figure 2. One shared AVL tree maps
 * 32-bit keys to 32-bit values; `threads` threads run for `duration` seconds, each
 * operation one atomic block: insert% insert a random key (update its value when present),
 * delete% delete one, the rest look one up; keys uniform in [0, range). The tree starts
 * with `initial` distinct random keys. A node is allocated (TX_MALLOC, `node-size` bytes of
 * which only the head is used, as the paper's padded nodes) and freed (TX_FREE) inside the
 * block that inserts or deletes it. The element count lives alone in 128 bytes and is
 * written last in each block that changes the set (the paper's two concessions to TM).
 * After the run: BST order, every height and balance factor, count == nodes ==
 * initial + inserts - deletes as the threads counted them, and each value carries its
 * key's tag (a node's key and value always travel together). A violation makes "valid"
 * false and the exit status 1. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

typedef struct avl_node {
  struct avl_node *child[2]; /* 0: smaller keys, 1: larger */
  int32_t key;
  int32_t value;
  int32_t height; /* of the subtree rooted here; a leaf has 1 */
} avl_node;

/* The count sits alone in its 128 bytes (two lines: the adjacent-line prefetcher's pair), so
 * that only blocks which change the set, at their very end, touch it. */
typedef struct avl_count {
  _Alignas(128) long value;
  char pad[128 - sizeof(long)];
} avl_count;

typedef struct avl_tree {
  avl_node *root; /* shared: read and written transactionally */
  avl_count *count;
  size_t node_size;
} avl_tree;

/* The low 16 bits of a value are a tag of its key; the high 16 are random. */
static int32_t value_for(int32_t key, uint64_t random) {
  uint32_t tag = ((uint32_t)key * 0x9e3779b1u) >> 16;
  return (int32_t)(((uint32_t)random & 0xffff0000u) | tag);
}

static bool value_matches(int32_t key, int32_t value) {
  return ((uint32_t)value & 0xffffu) == ((uint32_t)key * 0x9e3779b1u) >> 16;
}

typedef struct params {
  long insert, delete, range, initial, threads, node_size;
  double duration;
  long seed;
} params;

typedef struct worker {
  _Alignas(64) double start, end;
  unsigned long long ops, inserts, updates, deletes, delete_misses, lookups, hits;
} worker;

typedef struct run {
  const params *p;
  avl_tree *tree;
  worker *workers;
  bench_stop stop; /* raised by main when the duration is up */
} run;

enum { AVL_ABSENT, AVL_INSERTED, AVL_UPDATED };

TX_SAFE static int32_t avl_height(avl_node *n) { return n ? TX_LOAD(&n->height) : 0; }

/* Writes a height only when it changes (a store is a write-set entry). */
TX_SAFE static void avl_set_height(avl_node *n, int32_t height) {
  if (TX_LOAD(&n->height) != height) TX_STORE(&n->height, height);
}

TX_SAFE static void avl_update_height(avl_node *n) {
  int32_t l = avl_height(TX_LOAD(&n->child[0])), r = avl_height(TX_LOAD(&n->child[1]));
  avl_set_height(n, 1 + (l > r ? l : r));
}

/* Rotates the subtree n (stored at *link) towards `dir`: its child on the other side
 * becomes the subtree's root. */
TX_SAFE static avl_node *avl_rotate(avl_node **link, avl_node *n, int dir) {
  avl_node *c = TX_LOAD(&n->child[!dir]);
  TX_STORE(&n->child[!dir], TX_LOAD(&c->child[dir]));
  TX_STORE(&c->child[dir], n);
  avl_update_height(n);
  avl_update_height(c);
  TX_STORE(link, c);
  return c;
}

/* Restores the balance of the subtree n (stored at *link) whose children are balanced and
 * differ in height by at most 2, and its height. */
TX_SAFE static void avl_rebalance(avl_node **link, avl_node *n) {
  avl_node *l = TX_LOAD(&n->child[0]), *r = TX_LOAD(&n->child[1]);
  int32_t diff = avl_height(l) - avl_height(r);
  if (diff > 1 || diff < -1) {
    int heavy = diff < 0; /* the taller side */
    avl_node *c = heavy ? r : l;
    /* Zig-zag: straighten the taller child first. */
    if (avl_height(TX_LOAD(&c->child[!heavy])) > avl_height(TX_LOAD(&c->child[heavy])))
      avl_rotate(&n->child[heavy], c, heavy);
    avl_rotate(link, n, !heavy);
  } else {
    avl_set_height(n, 1 + (diff > 0 ? avl_height(l) : avl_height(r)));
  }
}

TX_SAFE static int avl_insert_at(avl_node **link, size_t node_size, int32_t key, int32_t value) {
  avl_node *n = TX_LOAD(link);
  if (!n) {
    n = TX_MALLOC(node_size);
    TX_INIT(&n->child[0], (avl_node *)NULL);
    TX_INIT(&n->child[1], (avl_node *)NULL);
    TX_INIT(&n->key, key);
    TX_INIT(&n->value, value);
    TX_INIT(&n->height, (int32_t)1);
    TX_STORE(link, n);
    return AVL_INSERTED;
  }
  int32_t k = TX_LOAD(&n->key);
  if (key == k) {
    TX_STORE(&n->value, value);
    return AVL_UPDATED;
  }
  int done = avl_insert_at(&n->child[key > k], node_size, key, value);
  if (done == AVL_INSERTED) avl_rebalance(link, n);
  return done;
}

/* Unlinks the smallest node of the non-empty subtree at *link, rebalancing on the way
 * back up, and returns it. */
TX_SAFE static avl_node *avl_unlink_min(avl_node **link) {
  avl_node *n = TX_LOAD(link);
  avl_node *l = TX_LOAD(&n->child[0]);
  if (!l) {
    TX_STORE(link, TX_LOAD(&n->child[1]));
    return n;
  }
  avl_node *min = avl_unlink_min(&n->child[0]);
  avl_rebalance(link, n);
  return min;
}

TX_SAFE static bool avl_delete_at(avl_node **link, int32_t key) {
  avl_node *n = TX_LOAD(link);
  if (!n) return false;
  int32_t k = TX_LOAD(&n->key);
  if (key != k) {
    if (!avl_delete_at(&n->child[key > k], key)) return false;
    avl_rebalance(link, n);
    return true;
  }
  avl_node *l = TX_LOAD(&n->child[0]), *r = TX_LOAD(&n->child[1]);
  if (!l || !r) {
    TX_STORE(link, l ? l : r);
  } else {
    /* The successor takes n's place (nodes move; keys and values stay in their node). */
    avl_node *s = avl_unlink_min(&n->child[1]);
    TX_STORE(&s->child[0], l);
    TX_STORE(&s->child[1], TX_LOAD(&n->child[1]));
    TX_STORE(link, s);
    avl_rebalance(link, s);
  }
  TX_FREE(n);
  return true;
}

TX_SAFE static bool avl_lookup(avl_node **root, int32_t key) {
  avl_node *n = TX_LOAD(root);
  while (n) {
    int32_t k = TX_LOAD(&n->key);
    if (key == k) return true;
    n = TX_LOAD(&n->child[key > k]);
  }
  return false;
}

/* Inserts or updates; returns AVL_INSERTED or AVL_UPDATED. */
static int avl_insert(avl_tree *t, int32_t key, int32_t value) {
  size_t node_size = t->node_size;
  long *count = &t->count->value;
  TX_LOCAL int done = AVL_ABSENT;
  TX_BEGIN done = avl_insert_at(&t->root, node_size, key, value);
  if (done == AVL_INSERTED) TX_STORE(count, TX_LOAD(count) + 1);
  TX_END
  return done;
}

static bool avl_delete(avl_tree *t, int32_t key) {
  long *count = &t->count->value;
  TX_LOCAL bool done = false;
  TX_BEGIN done = avl_delete_at(&t->root, key);
  if (done) TX_STORE(count, TX_LOAD(count) - 1);
  TX_END
  return done;
}

static bool avl_contains(avl_tree *t, int32_t key) {
  TX_LOCAL bool found = false;
  TX_BEGIN_RO found = avl_lookup(&t->root, key);
  TX_END
  return found;
}

static void parse(int argc, char **argv, params *p) {
  *p = (params){.insert = 30, .delete = 30, .range = 65536, .initial = -1, .duration = 1.0};
  tx_common_args common = {.threads = 1, .duration = &p->duration, .seed = 1};
  const bench_arg own[] = {
      BENCH_LONG("insert", &p->insert, 0, 100,
                 "percentage of operations that insert a key (update its value if present)"),
      BENCH_LONG("delete", &p->delete, 0, 100, "percentage of operations that delete a key"),
      BENCH_LONG("range", &p->range, 1, 1L << 31, "keys are drawn from [0, range)"),
      BENCH_LONG("initial", &p->initial, -1, 1L << 31,
                 "keys inserted before the run (-1: range / 2)"),
      BENCH_LONG("node-size", &p->node_size, 0, 1L << 20,
                 "bytes to allocate per node, at least the natural size (32)"),
  };
  tx_args_parse(argc, argv,
                "AVL tree of 32-bit keys and values (Dice et al. 2016, Figure 2), each operation "
                "one\natomic block that allocates and frees its nodes; prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
  if (p->insert + p->delete > 100)
    bench_usage_error("--insert %ld and --delete %ld exceed 100 %%", p->insert, p->delete);
  if (p->initial < 0) p->initial = p->range / 2;
  if (p->initial > p->range)
    bench_usage_error("--initial %ld exceeds --range %ld: the keys must be distinct", p->initial,
                      p->range);
  if ((size_t)p->node_size < sizeof(avl_node)) p->node_size = sizeof(avl_node);
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  const params *p = r->p;
  worker *w = &r->workers[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)index);
  w->start = bench_now();
  while (!bench_stopped(&r->stop)) {
    long op = (long)bench_rng_below(&rng, 100);
    int32_t key = (int32_t)bench_rng_below(&rng, (uint64_t)p->range);
    if (op < p->insert) {
      if (avl_insert(r->tree, key, value_for(key, bench_rng_next(&rng))) == AVL_INSERTED)
        w->inserts++;
      else
        w->updates++;
    } else if (op < p->insert + p->delete) {
      if (avl_delete(r->tree, key))
        w->deletes++;
      else
        w->delete_misses++;
    } else {
      w->hits += avl_contains(r->tree, key);
      w->lookups++;
    }
    w->ops++;
  }
  w->end = bench_now();
}

/* Builds the initial tree through the transactional insert, on a thread of its own that
 * has exited when the timed run starts (as intset: libitm counts the live threads). */
static void populate_thread(int index, void *arg) {
  (void)index;
  run *r = arg;
  const params *p = r->p;
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, 0xffffffffu);
  for (long n = 0; n < p->initial;) {
    int32_t key = (int32_t)bench_rng_below(&rng, (uint64_t)p->range);
    if (avl_insert(r->tree, key, value_for(key, bench_rng_next(&rng))) == AVL_INSERTED) n++;
  }
}

typedef struct avl_walk {
  long nodes;
  char *err;
  size_t err_len;
} avl_walk;

/* Returns the height of the subtree, or -1 on a violation (message in w->err). Keys must
 * lie in (lo, hi); the bounds are 64-bit so that every 32-bit key fits between them. */
static long avl_check_node(avl_walk *w, const avl_node *n, long lo, long hi, int depth) {
  if (!n) return 0;
  if (depth > 64) {
    snprintf(w->err, w->err_len, "avl: deeper than 64 levels (a cycle?)");
    return -1;
  }
  if (n->key <= lo || n->key >= hi) {
    snprintf(w->err, w->err_len, "avl: key %d out of order", n->key);
    return -1;
  }
  if (!value_matches(n->key, n->value)) {
    snprintf(w->err, w->err_len, "avl: node %d holds value %d, not one of its key", n->key,
             n->value);
    return -1;
  }
  long l = avl_check_node(w, n->child[0], lo, n->key, depth + 1);
  if (l < 0) return -1;
  long r = avl_check_node(w, n->child[1], n->key, hi, depth + 1);
  if (r < 0) return -1;
  long height = 1 + (l > r ? l : r);
  if (n->height != height) {
    snprintf(w->err, w->err_len, "avl: node %d records height %d, has %ld", n->key, n->height,
             height);
    return -1;
  }
  if (l - r > 1 || r - l > 1) {
    snprintf(w->err, w->err_len, "avl: node %d unbalanced (heights %ld and %ld)", n->key, l, r);
    return -1;
  }
  w->nodes++;
  return height;
}

/* The end-of-run check, single-threaded: structure, then the counts. */
static bool avl_check(const avl_tree *t, long expected, char *err, size_t err_len) {
  avl_walk w = {0, err, err_len};
  if (avl_check_node(&w, t->root, -1L - INT32_MAX, (long)INT32_MAX + 1, 0) < 0) return false;
  if (w.nodes != t->count->value || w.nodes != expected) {
    snprintf(err, err_len, "avl: %ld nodes, count %ld, the threads expect %ld", w.nodes,
             t->count->value, expected);
    return false;
  }
  return true;
}

static void avl_free_subtree(avl_node *n) {
  while (n) {
    avl_free_subtree(n->child[0]);
    avl_node *right = n->child[1];
    TX_FREE(n);
    n = right;
  }
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);

  avl_tree tree = {.node_size = (size_t)p.node_size};
  tree.count = aligned_alloc(128, sizeof *tree.count);
  run r = {.p = &p, .tree = &tree};
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!tree.count || !r.workers) {
    fprintf(stderr, "avl: out of memory\n");
    return 1;
  }
  memset(tree.count, 0, sizeof *tree.count);
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  bench_run_threads(1, populate_thread, &r);
  tx_backend_stats_reset();
  double cpu_s = bench_run_timed((int)p.threads, p.duration, &r.stop, worker_main, &r);
  tx_backend_stats_snapshot();

  worker total = {.start = r.workers[0].start, .end = r.workers[0].end};
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    if (w->start < total.start) total.start = w->start;
    if (w->end > total.end) total.end = w->end;
    total.ops += w->ops;
    total.inserts += w->inserts;
    total.updates += w->updates;
    total.deletes += w->deletes;
    total.delete_misses += w->delete_misses;
    total.lookups += w->lookups;
    total.hits += w->hits;
  }
  double time_s = total.end - total.start;
  long expected = p.initial + (long)total.inserts - (long)total.deletes;
  char err[256] = "";
  bool valid = avl_check(&tree, expected, err, sizeof err);

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "avl");
  bench_json_object(&j, "params");
  bench_json_int(&j, "insert", p.insert);
  bench_json_int(&j, "delete", p.delete);
  bench_json_int(&j, "range", p.range);
  bench_json_int(&j, "initial", p.initial);
  bench_json_int(&j, "node_size", p.node_size);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, &p.duration);
  tx_report_results_begin(&j, total.ops, time_s, cpu_s);
  bench_json_uint(&j, "inserts", total.inserts);
  bench_json_uint(&j, "updates", total.updates);
  bench_json_uint(&j, "deletes", total.deletes);
  bench_json_uint(&j, "delete_misses", total.delete_misses);
  bench_json_uint(&j, "lookups", total.lookups);
  bench_json_uint(&j, "lookup_hits", total.hits);
  bench_json_int(&j, "final_count", tree.count->value);
  tx_report_results_end(&j, valid, err);

  fprintf(stderr, "avl: %d threads, node size %ld, %.0f ops/s, allocator %s\n", (int)p.threads,
          p.node_size, tx_report_rate(total.ops, time_s), bench_allocator_name());
  int status = tx_report_exit("avl", valid, err);
  if (valid) avl_free_subtree(tree.root);
  free(tree.count);
  free(r.workers);
  return status;
}
