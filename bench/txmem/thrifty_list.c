/* thrifty-list: the synthetic benchmark of Carle et al. §4.1 (Table 1). A shared linked list
 * of `initial` nodes; a parallel loop of `iterations` iterations, iteration i on thread
 * i mod threads. Each iteration runs two transactions guarded by one shared condition,
 * working[i], true in `working` % of the iterations (spread evenly, the same for every
 * run): the first walks to element i mod initial (the first element when the list is
 * shorter), unlinks it and frees it; the second allocates a node and appends it.
 *   --malloc inside   the allocation is in the second transaction, under the condition;
 *   --malloc outside  it is made between the two transactions whatever the condition (the
 *                     condition is shared: it cannot be read outside a transaction), and
 *                     a node the second transaction does not append is never freed, as in
 *                     the paper.
 * Frees are tm_free in the first transaction under both placements.
 *   --roles mixed     (the paper) each thread runs both transactions of its iterations;
 *   --roles split     producers and consumers: threads pair up, the even one of a pair
 *                     runs the second transaction (malloc and append) of the pair's
 *                     iterations, the odd one the first (remove and free), waiting while
 *                     the list is empty. Every node a consumer frees was allocated by
 *                     another thread: the case where TXALLOC_THRIFTY_RETURN matters.
 *
 * Pressure (the paper's measure): the bytes of objects allocated and not freed, pools
 * excluded, at its highest during the loop (thrifty's allocated_peak, reset once the list
 * is built): results.pressure_peak_bytes; results.list_bytes: the list's own bytes at the
 * end; results.extra_pressure = peak / list - 1. Needs TXALLOC_TXMEM=thrifty (the default
 * here). Valid when the list holds `initial` nodes at the end, linked to its tail.
 *
 * Fragmentation (docs/thrifty.md, "Fragmentation"): results.held_peak_bytes (pools and
 * objects out of the heap at their highest) over the pressure peak; the pools' free bytes,
 * free blocks and largest free block when the workers exit; the share of allocations that
 * refilled a pool. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"
#include "txalloc/options.h"
#include "txalloc/thrifty.h"
#include "txalloc/txmem.h"

typedef struct node {
  struct node *next;
  long value;
} node;

typedef struct params {
  long working, inside, split, iterations, initial, node_size, threads, seed;
} params;

typedef struct list {
  node head; /* sentinel */
  node *tail;
} list;

typedef struct run {
  const params *p;
  list *l;
  long *working; /* the shared condition of each iteration */
} run;

static const char *const placements[] = {"outside", "inside"};
static const char *const roles[] = {"mixed", "split"};

static void parse(int argc, char **argv, params *p) {
  int placement = 1, role = 0;
  *p = (params){.working = 50, .iterations = 1000, .initial = 1000, .node_size = 64};
  tx_common_args common = {.threads = 1, .duration = NULL, .seed = 1};
  const bench_arg own[] = {
      BENCH_LONG("working", &p->working, 0, 100,
                 "percentage of iterations whose condition is true (paper: 0, 30, 50, 100)"),
      {.name = "malloc",
       .type = BENCH_ARG_CHOICE,
       .value = &placement,
       .choices = placements,
       .choice_count = 2,
       .help = "where the node is allocated: inside the second transaction, or outside "
               "before it whatever the condition"},
      {.name = "roles",
       .type = BENCH_ARG_CHOICE,
       .value = &role,
       .choices = roles,
       .choice_count = 2,
       .help = "mixed: each thread runs both transactions; split: pairs of a producer "
               "(malloc, append) and a consumer (remove, free)"},
      BENCH_LONG("iterations", &p->iterations, 1, 1L << 30, "iterations of the parallel loop"),
      BENCH_LONG("initial", &p->initial, 1, 1L << 24, "nodes of the list at the start"),
      BENCH_LONG("node-size", &p->node_size, (long)sizeof(node), 1L << 20, "bytes of a node"),
  };
  tx_args_parse(argc, argv,
                "Carle et al.'s synthetic list benchmark: pressure on the heap with malloc inside\n"
                "or outside the transactions; prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->inside = placement;
  p->split = role;
  if (p->split && common.threads % 2)
    bench_usage_error("--roles split needs an even --threads (pairs of producer and consumer)");
  p->threads = common.threads;
  p->seed = common.seed;
  if (txmem_get_strategy() != TXMEM_THRIFTY)
    bench_usage_error("--txmem %s: thrifty-list measures the pressure of --txmem thrifty",
                      txmem_strategy_name(txmem_get_strategy()));
}

/* Unlinks and frees element `pos` (the first when the list is shorter); false when the
 * list is empty. */
TX_SAFE static bool remove_at(list *l, long pos) {
  node *prev = &l->head;
  node *cur = TX_LOAD(&l->head.next);
  for (long k = 0; k < pos && cur; k++) {
    prev = cur;
    cur = TX_LOAD(&cur->next);
  }
  if (!cur) {
    prev = &l->head;
    cur = TX_LOAD(&l->head.next);
    if (!cur) return false;
  }
  TX_STORE(&prev->next, TX_LOAD(&cur->next));
  if (TX_LOAD(&l->tail) == cur) TX_STORE(&l->tail, prev);
  TX_FREE(cur);
  return true;
}

TX_SAFE static void append(list *l, node *n) {
  node *t = TX_LOAD(&l->tail);
  TX_STORE(&t->next, n);
  TX_STORE(&l->tail, n);
}

/* The first transaction of iteration i: under its condition, remove element i. A
 * consumer (wait) retries while the list is empty, until its producer appends. */
static void remove_part(const run *r, long i, bool wait) {
  list *l = r->l;
  long *cond = &r->working[i];
  long pos = i % r->p->initial;
  for (;;) {
    TX_LOCAL bool done = true;
    TX_BEGIN if (TX_LOAD(cond)) done = remove_at(l, pos);
    TX_END
    if (done || !wait) return;
    sched_yield();
  }
}

/* The second transaction of iteration i (and the allocation before it, outside). */
static void append_part(const run *r, long i) {
  list *l = r->l;
  long *cond = &r->working[i];
  size_t size = (size_t)r->p->node_size;
  node *pre = r->p->inside ? NULL : txmem_malloc(size);
  if (pre) {
    pre->next = NULL;
    pre->value = i;
  }
  TX_BEGIN if (TX_LOAD(cond)) {
    node *n = pre;
    if (!n) {
      n = TX_MALLOC(size);
      TX_INIT(&n->next, (node *)NULL);
      TX_INIT(&n->value, i);
    }
    append(l, n);
  }
  TX_END
}

static void worker_main(int index, void *arg) {
  const run *r = arg;
  if (!r->p->split) {
    for (long i = index; i < r->p->iterations; i += r->p->threads) {
      remove_part(r, i, false);
      append_part(r, i);
    }
    return;
  }
  long pairs = r->p->threads / 2;
  for (long i = index / 2; i < r->p->iterations; i += pairs) {
    if (index % 2)
      remove_part(r, i, true);
    else
      append_part(r, i);
  }
}

int main(int argc, char **argv) {
  /* The default strategy is the one the workload measures; --txmem / TXALLOC_TXMEM may
   * still name it explicitly. */
  if (!getenv("TXALLOC_TXMEM")) txalloc_option_set("txmem", "thrifty", NULL, 0);
  params p;
  parse(argc, argv, &p);

  run r = {.p = &p};
  r.l = calloc(1, sizeof *r.l);
  r.working = calloc((size_t)p.iterations, sizeof *r.working);
  if (!r.l || !r.working) bench_usage_error("out of memory for %ld iterations", p.iterations);
  for (long i = 0; i < p.iterations; i++)
    r.working[i] = (i * p.working) / 100 != ((i + 1) * p.working) / 100;
  r.l->tail = &r.l->head;
  for (long i = 0; i < p.initial; i++) {
    node *n = txmem_malloc((size_t)p.node_size);
    if (!n) bench_usage_error("the heap cannot hold %ld nodes (--thrifty-heap-mb)", p.initial);
    n->next = NULL;
    n->value = -1 - i;
    r.l->tail->next = n;
    r.l->tail = n;
  }
  txmem_flush();
  thrifty_stats_reset_peak();
  thrifty_stats s0;
  thrifty_stats_get(&s0);

  double t0 = bench_now();
  double cpu_s = bench_run_threads((int)p.threads, worker_main, &r);
  double time_s = bench_now() - t0;

  thrifty_stats s;
  thrifty_stats_get(&s);
  long nodes = 0;
  uint64_t list_bytes = 0;
  const node *last = &r.l->head;
  for (const node *n = r.l->head.next; n; n = n->next) {
    nodes++;
    list_bytes += thrifty_usable_size(n) + 16; /* the block, as the pressure counts it */
    last = n;
  }
  bool valid = nodes == p.initial && last == r.l->tail;
  long working_iterations = 0;
  for (long i = 0; i < p.iterations; i++) working_iterations += r.working[i] != 0;

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "thrifty-list");
  bench_json_object(&j, "params");
  bench_json_int(&j, "working", p.working);
  bench_json_str(&j, "malloc", placements[p.inside]);
  bench_json_str(&j, "roles", roles[p.split]);
  bench_json_int(&j, "iterations", p.iterations);
  bench_json_int(&j, "initial", p.initial);
  bench_json_int(&j, "node_size", p.node_size);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, NULL);
  tx_report_results_begin(&j, (unsigned long long)p.iterations, time_s, cpu_s);
  bench_json_int(&j, "working_iterations", working_iterations);
  bench_json_uint(&j, "pressure_peak_bytes", s.allocated_peak);
  bench_json_uint(&j, "list_bytes", list_bytes);
  bench_json_double(&j, "extra_pressure",
                    list_bytes ? (double)s.allocated_peak / (double)list_bytes - 1 : 0);
  bench_json_uint(&j, "refills", s.refills);
  /* Fragmentation: the workers' pools retired when they exited (docs/thrifty.md). */
  uint64_t rpools = s.retired_pools - s0.retired_pools;
  uint64_t rfree = s.retired_free_bytes - s0.retired_free_bytes;
  uint64_t rlarge = s.retired_largest_bytes - s0.retired_largest_bytes;
  uint64_t mallocs = s.mallocs - s0.mallocs;
  double held_over = s.allocated_peak ? (double)s.held_peak / (double)s.allocated_peak - 1 : 0;
  double frag = rfree ? 1 - (double)rlarge / (double)rfree : 0;
  double refill_share = mallocs ? (double)(s.refills - s0.refills) / (double)mallocs : 0;
  bench_json_uint(&j, "held_peak_bytes", s.held_peak);
  bench_json_double(&j, "held_over_pressure", held_over);
  bench_json_uint(&j, "retired_pools", rpools);
  bench_json_uint(&j, "retired_free_bytes", rfree);
  bench_json_uint(&j, "retired_extents", s.retired_extents - s0.retired_extents);
  bench_json_uint(&j, "retired_largest_bytes", rlarge);
  bench_json_double(&j, "retired_fragmentation", frag);
  bench_json_double(&j, "refill_share", refill_share);
  bench_json_uint(&j, "remote_frees", s.remote_frees - s0.remote_frees);
  bench_json_uint(&j, "owner_returns", s.owner_returns - s0.owner_returns);
  tx_report_results_end(&j, valid, "the list lost or gained nodes");
  fprintf(stderr,
          "thrifty-list: working %ld%%, malloc %s, %ld iterations on %ld threads: pressure peak "
          "%llu bytes, list %llu bytes (+%.1f%%)\n",
          p.working, placements[p.inside], p.iterations, p.threads,
          (unsigned long long)s.allocated_peak, (unsigned long long)list_bytes,
          list_bytes ? 100.0 * ((double)s.allocated_peak / (double)list_bytes - 1) : 0.0);
  fprintf(stderr,
          "thrifty-list: roles %s: held peak %llu bytes (+%.1f%% over pressure), %llu pools "
          "retired with %llu free bytes in %llu blocks (fragmentation %.3f), refill share "
          "%.4f, %llu of %llu remote frees returned to their owner\n",
          roles[p.split], (unsigned long long)s.held_peak, 100.0 * held_over,
          (unsigned long long)rpools, (unsigned long long)rfree,
          (unsigned long long)(s.retired_extents - s0.retired_extents), frag, refill_share,
          (unsigned long long)(s.owner_returns - s0.owner_returns),
          (unsigned long long)(s.remote_frees - s0.remote_frees));
  return tx_report_exit("thrifty-list", valid, "the list lost or gained nodes");
}
