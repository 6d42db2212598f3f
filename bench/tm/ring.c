/* ring: the ring traversal of Dice et al. (2016) §3, Figure 1. `nodes` nodes of
 * `node-size` bytes are allocated one by one with the process's malloc, shuffled
 * (Fisher-Yates, seeded) and linked into a circular list; then each of `threads` threads
 * traverses the whole ring `traversals` times (or for `duration` seconds), each traversal
 * one critical section: a pthread mutex, or with --tm one atomic block of txalloc's TM (the
 * backend from TXALLOC_TM, or --tm=BACKEND). Each step reads `next` and increments
 * `value`; --read-only only reads. Only the first 12 bytes of a node are touched, so
 * whether a traversal fits the L1 (or an HTM's write set) depends on where the allocator
 * put the nodes: the JSON reports that placement over the L1 geometry of the htm_line and
 * htm_l1_sets options (64 B lines, 64 sets by default).
 * --arena places the nodes itself instead of allocating them (one mapping, a stride of the
 * node size rounded up to an odd number of lines): a reference placement that spreads the
 * nodes over the L1 sets and the fewest pages, so that a rate below it is the allocator's
 * doing and a rate equal to it is the machine's (the pages a traversal touches, say, which
 * `pages_touched` reports, against the data TLB's reach).
 * Valid when the ring still closes after `nodes` steps and every value equals the number
 * of updating traversals (mod 2^32): the critical sections were atomic. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"
#include "txalloc/options.h"

typedef struct ring_node {
  struct ring_node *next;
  uint32_t value;
} ring_node;

/* The bytes of a node a traversal touches: `next` and `value`. */
enum { RING_TOUCHED = offsetof(ring_node, value) + sizeof(uint32_t) };
enum { ARENA_LINE = 64 }; /* the arena's line: the default htm_line */

typedef struct params {
  long nodes, node_size, traversals, threads;
  bool read_only, tm, arena;
  double duration; /* 0: run `traversals` per thread instead */
  long seed;
} params;

typedef struct worker {
  _Alignas(64) double start, end;
  unsigned long long traversals;
} worker;

typedef struct run {
  const params *p;
  ring_node *head;
  pthread_mutex_t lock;
  worker *workers;
  bench_stop stop; /* timed runs: raised by main when the duration is up */
} run;

/* The placement of the nodes over an L1 of `sets` sets of `line`-byte lines. */
typedef struct placement {
  long line, sets;
  long sets_used, max_per_set, lines_touched, pages_touched;
} placement;

/* `--tm` alone asks for the TM and leaves the backend to TXALLOC_TM; `--tm=BACKEND` and
 * `--tm BACKEND` ask for the TM and name the backend (txalloc's `tm` option). Removes the
 * bare form from argv, which the option parser would reject for its missing value. */
static bool take_tm_flag(int *argc, char **argv) {
  bool tm = false;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--tm") == 0) {
      tm = true;
      if (i + 1 == *argc || strncmp(argv[i + 1], "--", 2) == 0) continue;
    } else if (strncmp(a, "--tm=", 5) == 0) {
      tm = true;
    }
    argv[out++] = argv[i];
  }
  *argc = out;
  argv[out] = NULL;
  return tm;
}

static void parse(int argc, char **argv, params *p) {
  *p = (params){.nodes = 128, .node_size = 64, .traversals = 100000};
  p->tm = take_tm_flag(&argc, argv);
  tx_common_args common = {.threads = 1, .duration = &p->duration, .seed = 1};
  const bench_arg own[] = {
      BENCH_LONG("nodes", &p->nodes, 1, 1L << 20, "nodes in the ring"),
      BENCH_LONG("node-size", &p->node_size, 16, 4096, "bytes allocated per node"),
      BENCH_LONG("traversals", &p->traversals, 1, 1L << 40,
                 "traversals per thread (without --duration)"),
      BENCH_BOOL("read-only", &p->read_only, "traversals read `next` only, update no `value`"),
      BENCH_BOOL("arena", &p->arena,
                 "place the nodes in one mapping at a stride of an odd number of lines "
                 "instead of allocating them (the reference placement)"),
  };
  tx_args_parse(argc, argv,
                "Traverses a ring of individually allocated nodes (Dice et al. 2016, Figure 1), "
                "each\ntraversal under a pthread mutex, or one atomic block with --tm (alone: "
                "the backend\nof TXALLOC_TM; --tm=BACKEND names it). --duration, when given, "
                "times the run\ninstead of --traversals. Prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
}

/* One traversal: `nodes` steps from `head`, each reading `next` and, unless read-only,
 * incrementing `value`. */
static void traverse(run *r) {
  long nodes = r->p->nodes;
  if (!r->p->tm) {
    ring_node *n = r->head;
    pthread_mutex_lock(&r->lock);
    if (r->p->read_only) {
      for (long i = 0; i < nodes; i++) n = *(ring_node *volatile *)&n->next;
    } else {
      for (long i = 0; i < nodes; i++) {
        n = n->next;
        n->value++;
      }
    }
    pthread_mutex_unlock(&r->lock);
  } else if (r->p->read_only) {
    /* `w` starts at the head inside the block: a restarted attempt starts over. */
    TX_BEGIN_RO ring_node *w = r->head;
    for (long i = 0; i < nodes; i++) w = TX_LOAD(&w->next);
    TX_END
  } else {
    TX_BEGIN ring_node *w = r->head;
    for (long i = 0; i < nodes; i++) {
      w = TX_LOAD(&w->next);
      TX_STORE(&w->value, TX_LOAD(&w->value) + 1);
    }
    TX_END
  }
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  worker *w = &r->workers[index];
  w->start = bench_now();
  if (r->p->duration > 0) {
    while (!bench_stopped(&r->stop)) {
      traverse(r);
      w->traversals++;
    }
  } else {
    for (long i = 0; i < r->p->traversals; i++) traverse(r);
    w->traversals = (unsigned long long)r->p->traversals;
  }
  w->end = bench_now();
}

/* The arena's stride: the node size in whole lines, made odd so that consecutive nodes fall
 * on consecutive L1 sets (an odd stride is coprime with every power-of-two set count). */
static size_t arena_stride(long node_size) {
  size_t lines = ((size_t)node_size + ARENA_LINE - 1) / ARENA_LINE;
  return (lines | 1) * ARENA_LINE;
}

/* The mapping of --arena (base NULL without it). */
typedef struct ring_arena {
  char *base;
  size_t len;
} ring_arena;

static ring_node *build_ring(const params *p, ring_node **nodes, ring_arena *arena) {
  if (p->arena) {
    size_t stride = arena_stride(p->node_size);
    arena->len = stride * (size_t)p->nodes;
    arena->base =
        mmap(NULL, arena->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena->base == MAP_FAILED) {
      fprintf(stderr, "ring: out of memory\n");
      exit(1);
    }
    for (long i = 0; i < p->nodes; i++) nodes[i] = (ring_node *)(arena->base + (size_t)i * stride);
  } else {
    for (long i = 0; i < p->nodes; i++) {
      nodes[i] = malloc((size_t)p->node_size);
      if (!nodes[i]) {
        fprintf(stderr, "ring: out of memory\n");
        exit(1);
      }
      memset(nodes[i], 0, (size_t)p->node_size);
    }
  }
  /* Allocation order follows the address order: shuffle, against stride prefetchers. */
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, 0xfffffffeu);
  for (long i = p->nodes - 1; i > 0; i--) {
    long k = (long)bench_rng_below(&rng, (uint64_t)i + 1);
    ring_node *t = nodes[i];
    nodes[i] = nodes[k];
    nodes[k] = t;
  }
  for (long i = 0; i < p->nodes; i++) nodes[i]->next = nodes[(i + 1) % p->nodes];
  return nodes[0];
}

static long option_value(const char *name) {
  int index = txalloc_option_find(name);
  if (index < 0) abort();
  return txalloc_option_value((size_t)index);
}

static int compare_address(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return (x > y) - (x < y);
}

static placement measure_placement(ring_node *const *nodes, long count) {
  placement pl = {.line = option_value("htm_line"), .sets = option_value("htm_l1_sets")};
  long *per_set = calloc((size_t)pl.sets, sizeof *per_set);
  uintptr_t *lines = malloc((size_t)count * 2 * sizeof *lines);
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  if (!per_set || !lines) {
    fprintf(stderr, "ring: out of memory\n");
    exit(1);
  }
  long n = 0;
  for (long i = 0; i < count; i++) {
    uintptr_t base = (uintptr_t)nodes[i];
    long set = (long)((base / (uintptr_t)pl.line) % (uintptr_t)pl.sets);
    if (per_set[set]++ == 0) pl.sets_used++;
    if (per_set[set] > pl.max_per_set) pl.max_per_set = per_set[set];
    lines[n++] = base / (uintptr_t)pl.line;
    uintptr_t last = (base + RING_TOUCHED - 1) / (uintptr_t)pl.line;
    if (last != lines[n - 1]) lines[n++] = last;
  }
  /* Sorted lines give the pages in order too (a line lies within one page). */
  qsort(lines, (size_t)n, sizeof *lines, compare_address);
  for (long i = 0; i < n; i++) {
    pl.lines_touched += i == 0 || lines[i] != lines[i - 1];
    pl.pages_touched +=
        i == 0 || lines[i] * (uintptr_t)pl.line / page != lines[i - 1] * (uintptr_t)pl.line / page;
  }
  free(per_set);
  free(lines);
  return pl;
}

/* The ring closes after exactly `nodes` steps and each value counts the updates. */
static bool check_ring(const params *p, ring_node *head, uint32_t expected, char *err,
                       size_t err_len) {
  ring_node *n = head;
  for (long i = 0; i < p->nodes; i++) {
    if (n->value != expected) {
      snprintf(err, err_len, "ring: a node holds %u, %u expected (a traversal was not atomic)",
               n->value, expected);
      return false;
    }
    n = n->next;
    if (n == head && i + 1 < p->nodes) {
      snprintf(err, err_len, "ring: closes after %ld of %ld nodes", i + 1, p->nodes);
      return false;
    }
  }
  if (n != head) {
    snprintf(err, err_len, "ring: does not close after %ld nodes", p->nodes);
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);

  ring_node **nodes = malloc((size_t)p.nodes * sizeof *nodes);
  run r = {.p = &p};
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!nodes || !r.workers || pthread_mutex_init(&r.lock, NULL) != 0) {
    fprintf(stderr, "ring: out of memory\n");
    return 1;
  }
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  ring_arena arena = {0};
  r.head = build_ring(&p, nodes, &arena);
  placement pl = measure_placement(nodes, p.nodes);

  if (p.tm) tx_backend_stats_reset();
  double cpu_s = p.duration > 0
                     ? bench_run_timed((int)p.threads, p.duration, &r.stop, worker_main, &r)
                     : bench_run_threads((int)p.threads, worker_main, &r);
  if (p.tm) tx_backend_stats_snapshot();

  worker total = {.start = r.workers[0].start, .end = r.workers[0].end};
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    if (w->start < total.start) total.start = w->start;
    if (w->end > total.end) total.end = w->end;
    total.traversals += w->traversals;
  }
  double time_s = total.end - total.start;
  char err[256] = "";
  bool valid =
      check_ring(&p, r.head, p.read_only ? 0 : (uint32_t)total.traversals, err, sizeof err);

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "ring");
  bench_json_object(&j, "params");
  bench_json_int(&j, "nodes", p.nodes);
  bench_json_int(&j, "node_size", p.node_size);
  if (p.duration <= 0) bench_json_int(&j, "traversals", p.traversals);
  bench_json_bool(&j, "read_only", p.read_only);
  bench_json_str(&j, "placement", p.arena ? "arena" : "malloc");
  bench_json_str(&j, "sync", p.tm ? "tm" : "mutex");
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  if (p.tm) {
    tx_report_config(&j, p.threads, p.duration > 0 ? &p.duration : NULL);
  } else {
    bench_json_int(&j, "threads", p.threads);
    if (p.duration > 0) bench_json_double(&j, "duration_s", p.duration);
    bench_json_allocator(&j);
    bench_json_object(&j, "tm");
    bench_json_str(&j, "backend", "none");
    bench_json_str(&j, "lock", "pthread_mutex");
    bench_json_end(&j);
  }
  tx_report_results_begin(&j, total.traversals, time_s, cpu_s);
  bench_json_double(&j, "traversals_per_s", tx_report_rate(total.traversals, time_s));
  bench_json_int(&j, "line", pl.line);
  bench_json_int(&j, "l1_sets", pl.sets);
  bench_json_int(&j, "l1_sets_used", pl.sets_used);
  bench_json_int(&j, "max_nodes_per_set", pl.max_per_set);
  bench_json_int(&j, "lines_touched", pl.lines_touched);
  bench_json_int(&j, "pages_touched", pl.pages_touched);
  if (p.tm) {
    tx_report_results_end(&j, valid, err);
  } else {
    bench_json_end(&j);
    bench_json_memory(&j);
    bench_json_bool(&j, "valid", valid);
    if (!valid) bench_json_str(&j, "error", err);
    bench_json_finish(&j);
  }

  fprintf(stderr,
          "ring: %ld nodes of %ld B on %ld of %ld L1 sets and %ld pages, %s, %.0f traversals/s, "
          "%s %s\n",
          p.nodes, p.node_size, pl.sets_used, pl.sets, pl.pages_touched, p.tm ? "tm" : "mutex",
          tx_report_rate(total.traversals, time_s), p.arena ? "arena, not" : "allocator",
          bench_allocator_name());
  int status;
  if (p.tm) {
    status = tx_report_exit("ring", valid, err);
  } else {
    if (!valid) fprintf(stderr, "ring: INVALID: %s\n", err);
    status = valid ? 0 : 1;
  }
  if (p.arena)
    munmap(arena.base, arena.len);
  else
    for (long i = 0; i < p.nodes; i++) free(nodes[i]);
  free(nodes);
  free(r.workers);
  pthread_mutex_destroy(&r.lock);
  return status;
}
