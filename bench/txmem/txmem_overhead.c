/* txmem_overhead: what transaction-aware allocation costs a malloc/free pair.
 *
 * For the strategy chosen (--txmem, or TXALLOC_TXMEM), times per malloc/free pair of
 * --size bytes, on one thread, each the median of --repeat runs of --pairs pairs:
 *   plain_pair_ns     the strategy's allocator called directly (txalloc_malloc/free for
 *                     txalloc, the process's malloc/free for wrap and wrap-cache)
 *   outside_pair_ns   txmem_malloc/txmem_free outside any transaction (one thread-local test
 *                     over the plain path)
 *   empty_tx_ns       txmem_tx_begin(1) + txmem_tx_commit(1) with no allocation: the hooks'
 *                     own cost per transaction (epoch announcement with safe_reuse=1)
 *   tx_pair_ns_k      a pair inside committed top-level transactions holding k pairs each
 *                     (k = 1 and 16), per pair, hooks included
 *   tx_alloc_ns_k     the same minus the empty transaction's share (empty_tx_ns / k): the
 *                     allocation path alone
 * and the ratios to plain_pair_ns (McRT's target: ≤ 1.3 for the txalloc strategy).
 * One JSON object on stdout (DESIGN.md shape); progress on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "txalloc/txalloc.h"
#include "txalloc/txmem.h"
#include "txmem_bench.h"

static size_t size = 64;
static long pairs = 2000000;
static int repeat = 5;

typedef void (*run_fn)(long n);
static volatile char sink;

static void run_plain_txalloc(long n) {
  for (long i = 0; i < n; i++) {
    char *p = txalloc_malloc(size);
    *(volatile char *)p = (char)i;
    txalloc_free(p);
  }
}
static void run_plain_malloc(long n) {
  for (long i = 0; i < n; i++) {
    char *p = malloc(size);
    *(volatile char *)p = (char)i;
    free(p);
  }
}
static void run_outside(long n) {
  for (long i = 0; i < n; i++) {
    char *p = txmem_malloc(size);
    *(volatile char *)p = (char)i;
    txmem_free(p);
  }
}
static void run_empty_tx(long n) {
  for (long i = 0; i < n; i++) {
    txmem_tx_begin(1);
    txmem_tx_commit(1);
  }
}
static long pairs_per_tx = 1;
static void run_tx(long n) {
  for (long i = 0; i < n; i += pairs_per_tx) {
    txmem_tx_begin(1);
    for (long k = 0; k < pairs_per_tx; k++) {
      char *p = txmem_malloc(size);
      *(volatile char *)p = (char)k;
      txmem_free(p);
    }
    txmem_tx_commit(1);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median over `repeat` runs of ns per iteration. */
static double measure(run_fn fn, long n) {
  double t[64];
  fn(n / 10 + 1); /* warm-up */
  for (int r = 0; r < repeat; r++) {
    double t0 = bench_now();
    fn(n);
    t[r] = (bench_now() - t0) * 1e9 / (double)n;
  }
  qsort(t, (size_t)repeat, sizeof t[0], cmp_double);
  return t[repeat / 2];
}

int main(int argc, char **argv) {
  long size_arg = (long)size, repeat_arg = repeat;
  const bench_arg own[] = {
      BENCH_LONG("size", &size_arg, 1, 1 << 20, "bytes per object"),
      BENCH_LONG("pairs", &pairs, 1000, 1L << 40, "pairs per timed run"),
      BENCH_LONG("repeat", &repeat_arg, 1, 63, "runs per figure; the median is reported"),
  };
  txmem_bench_parse(argc, argv,
                    "Times a malloc/free pair inside committed transactions, outside them, and "
                    "on the\nallocator directly, for one txmem strategy (--txmem); prints one "
                    "JSON object.",
                    own, (int)(sizeof own / sizeof own[0]));
  size = (size_t)size_arg;
  repeat = (int)repeat_arg;

  txmem_strategy strategy = txmem_get_strategy();
  const char *name = txmem_strategy_name(strategy);
  fprintf(stderr, "txmem_overhead: strategy %s, safe_reuse %d, size %zu, %ld pairs x %d\n", name,
          txmem_safe_reuse(), size, pairs, repeat);
  double plain = measure(strategy == TXMEM_TXALLOC ? run_plain_txalloc : run_plain_malloc, pairs);
  double outside = measure(run_outside, pairs);
  double empty = measure(run_empty_tx, pairs);
  pairs_per_tx = 1;
  double tx1 = measure(run_tx, pairs);
  pairs_per_tx = 16;
  double tx16 = measure(run_tx, pairs);
  txmem_flush();
  txmem_stats s;
  txmem_stats_get(&s);
  bool valid = s.limbo_objects == 0 && s.active_transactions == 0;
  fprintf(
      stderr,
      "plain %.1f ns, outside %.1f ns, empty tx %.1f ns, tx pair %.1f ns (1/tx), %.1f ns (16/tx)\n",
      plain, outside, empty, tx1, tx16);

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "txmem_overhead");
  bench_json_object(&j, "params");
  bench_json_uint(&j, "size", size);
  bench_json_int(&j, "pairs", pairs);
  bench_json_int(&j, "repeat", repeat);
  bench_json_end(&j);
  txmem_bench_json_config(&j, 1, NULL, strategy);
  bench_json_object(&j, "results");
  bench_json_double(&j, "plain_pair_ns", plain);
  bench_json_double(&j, "outside_pair_ns", outside);
  bench_json_double(&j, "empty_tx_ns", empty);
  bench_json_double(&j, "tx_pair_ns_1", tx1);
  bench_json_double(&j, "tx_pair_ns_16", tx16);
  bench_json_double(&j, "tx_alloc_ns_1", tx1 - empty);
  bench_json_double(&j, "tx_alloc_ns_16", tx16 - empty / 16);
  bench_json_double(&j, "ratio_outside", outside / plain);
  bench_json_double(&j, "ratio_tx_1", tx1 / plain);
  bench_json_double(&j, "ratio_tx_16", tx16 / plain);
  bench_json_double(&j, "ratio_tx_alloc_1", (tx1 - empty) / plain);
  bench_json_double(&j, "ratio_tx_alloc_16", (tx16 - empty / 16) / plain);
  bench_json_end(&j);
  txmem_bench_json_finish(&j, &s, valid);
  (void)sink;
  return valid ? 0 : 1;
}
