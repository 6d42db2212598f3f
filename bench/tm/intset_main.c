/* intset: the integer-set workload of TinySTM and Baldassin et al. (2015) §5.
 *
 * A set of `initial` distinct keys drawn from [0, range) is built single-threaded; then
 * `threads` threads run for `duration` seconds. Each operation is one transaction: with
 * probability update% an update, otherwise a lookup of a random key. Updates of a thread
 * alternate between inserting a random key (retried with a new key until one is new) and
 * removing the key it inserted last, so the size stays within initial + threads and every
 * removal must succeed. Nodes are allocated with tm_malloc inside the inserting
 * transaction and released with tm_free inside the removing one.
 * At the end each thread removes its pending key; the set must then hold exactly the
 * initial keys, and the structure's invariants must hold (intset.h). A violation makes
 * "valid" false and the exit status 1. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "intset.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

static const intset_ops *const structures[] = {&intset_list_ops, &intset_hash_ops,
                                               &intset_rbtree_ops, &intset_skiplist_ops};
enum { STRUCTURE_COUNT = sizeof structures / sizeof structures[0] };

typedef struct params {
  const intset_ops *ops;
  long initial, range, update, threads, buckets, node_size;
  double duration;
  long seed;
} params;

typedef struct worker {
  _Alignas(64) double start, end;
  unsigned long long ops, inserts, removes, lookups, failed_removes;
  long pending; /* key inserted last and not yet removed, or -1 */
} worker;

typedef struct run {
  const params *p;
  void *set;
  worker *workers;
  bench_stop stop; /* raised by main when the duration is up */
} run;

static void parse(int argc, char **argv, params *p) {
  static const char *names[STRUCTURE_COUNT];
  for (int i = 0; i < STRUCTURE_COUNT; i++) names[i] = structures[i]->name;
  int structure = 0;
  *p = (params){.initial = 4096, .range = 8192, .update = 20, .buckets = 131072, .node_size = 0};
  double duration = 1.0;
  tx_common_args common = {.threads = 1, .duration = &duration, .seed = 1};
  const bench_arg own[] = {
      BENCH_CHOICE("structure", &structure, names, STRUCTURE_COUNT, "the set"),
      BENCH_LONG("initial", &p->initial, 0, 1L << 26, "keys inserted before the run"),
      BENCH_LONG("range", &p->range, 1, 1L << 40, "keys are drawn from [0, range)"),
      BENCH_LONG("update", &p->update, 0, 100, "percentage of operations that update"),
      BENCH_LONG("buckets", &p->buckets, 1, 1L << 28, "hash set buckets (as in the paper)"),
      BENCH_LONG("node-size", &p->node_size, 0, 1L << 20,
                 "bytes to allocate per node, at least the natural size (list/hash 16, rbtree "
                 "48, skiplist 16 + 8 per level)"),
  };
  tx_args_parse(argc, argv,
                "Integer-set transactions (each operation one transaction); prints one JSON "
                "object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->ops = structures[structure];
  p->threads = common.threads;
  p->duration = duration;
  p->seed = common.seed;
  if (p->initial > p->range)
    bench_usage_error("--initial %ld exceeds --range %ld: the keys must be distinct", p->initial,
                      p->range);
  if (p->update > 0 && p->initial + p->threads > p->range)
    bench_usage_error("--range %ld leaves no free key for %ld threads to insert", p->range,
                      p->threads);
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  const params *p = r->p;
  worker *w = &r->workers[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)index);
  long last = -1; /* key this thread inserted and removes next, or -1 */
  w->start = bench_now();
  while (!bench_stopped(&r->stop)) {
    long op = (long)bench_rng_below(&rng, 100);
    if (op < p->update) {
      if (last < 0) {
        long key = (long)bench_rng_below(&rng, (uint64_t)p->range);
        if (p->ops->insert(r->set, key, bench_rng_next(&rng))) {
          last = key;
          w->inserts++;
        }
      } else {
        if (p->ops->remove(r->set, last))
          w->removes++;
        else
          w->failed_removes++;
        last = -1;
      }
    } else {
      p->ops->contains(r->set, (long)bench_rng_below(&rng, (uint64_t)p->range));
      w->lookups++;
    }
    w->ops++;
  }
  w->end = bench_now();
  w->pending = last;
}

static int compare_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

typedef struct populate_job {
  const params *p;
  void *set;
  long *keys; /* out: the initial keys, sorted */
} populate_job;

/* Builds the initial set through the transactional insert. It runs on a thread of its own
 * that has exited when the timed run starts, so the workers are the only threads the TM
 * has seen alive (libitm picks its serial mode for a lone thread by that count). */
static void populate_thread(int index, void *arg) {
  (void)index;
  populate_job *job = arg;
  const params *p = job->p;
  long *keys = malloc((size_t)(p->initial > 0 ? p->initial : 1) * sizeof *keys);
  if (!keys) {
    fprintf(stderr, "intset: out of memory\n");
    exit(1);
  }
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, 0xffffffffu);
  for (long n = 0; n < p->initial;) {
    long key = (long)bench_rng_below(&rng, (uint64_t)p->range);
    if (p->ops->insert(job->set, key, bench_rng_next(&rng))) keys[n++] = key;
  }
  qsort(keys, (size_t)p->initial, sizeof *keys, compare_long);
  job->keys = keys;
}

/* The end-of-run check: invariants, then the exact key set. */
static bool check_set(const params *p, void *set, const long *initial_keys,
                      unsigned long long failed_removes, char *err, size_t err_len) {
  if (failed_removes) {
    snprintf(err, err_len, "%llu removals of a thread's own last key failed", failed_removes);
    return false;
  }
  long cap = p->initial + p->threads + 1;
  long *keys = malloc((size_t)cap * sizeof *keys);
  if (!keys) {
    snprintf(err, err_len, "out of memory for the check");
    return false;
  }
  bool ok = false;
  long count = p->ops->check(set, keys, cap, err, err_len);
  if (count < 0) goto out;
  if (count != p->initial) {
    snprintf(err, err_len, "%ld keys at the end, %ld expected", count, p->initial);
    goto out;
  }
  qsort(keys, (size_t)count, sizeof *keys, compare_long);
  for (long i = 0; i < count; i++) {
    if (keys[i] != initial_keys[i]) {
      snprintf(err, err_len, "key set changed: %ld where %ld was", keys[i], initial_keys[i]);
      goto out;
    }
  }
  ok = true;
out:
  free(keys);
  return ok;
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);

  intset_config config = {.buckets = p.buckets, .node_size = (size_t)p.node_size};
  void *set = p.ops->create(&config);
  populate_job job = {.p = &p, .set = set};
  bench_run_threads(1, populate_thread, &job);
  long *initial_keys = job.keys;
  tx_backend_stats_reset();

  run r = {.p = &p, .set = set};
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!r.workers) {
    fprintf(stderr, "intset: out of memory\n");
    return 1;
  }
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  double cpu_s = bench_run_timed((int)p.threads, p.duration, &r.stop, worker_main, &r);
  tx_backend_stats_snapshot();
  /* Leave the set as it was: each thread's pending key goes, outside the timed run. */
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    if (w->pending < 0) continue;
    if (p.ops->remove(set, w->pending))
      w->removes++;
    else
      w->failed_removes++;
  }

  worker total = {.start = r.workers[0].start, .end = r.workers[0].end};
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    if (w->start < total.start) total.start = w->start;
    if (w->end > total.end) total.end = w->end;
    total.ops += w->ops;
    total.inserts += w->inserts;
    total.removes += w->removes;
    total.lookups += w->lookups;
    total.failed_removes += w->failed_removes;
  }
  double time_s = total.end - total.start;
  char err[256] = "";
  bool valid = check_set(&p, set, initial_keys, total.failed_removes, err, sizeof err);

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "intset");
  bench_json_object(&j, "params");
  bench_json_str(&j, "structure", p.ops->name);
  bench_json_int(&j, "initial", p.initial);
  bench_json_int(&j, "range", p.range);
  bench_json_int(&j, "update", p.update);
  if (p.ops == &intset_hash_ops) bench_json_int(&j, "buckets", p.buckets);
  bench_json_int(
      &j, "node_size",
      (long)((size_t)p.node_size > p.ops->node_size ? (size_t)p.node_size : p.ops->node_size));
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, &p.duration);
  tx_report_results_begin(&j, total.ops, time_s, cpu_s);
  bench_json_uint(&j, "inserts", total.inserts);
  bench_json_uint(&j, "removes", total.removes);
  bench_json_uint(&j, "lookups", total.lookups);
  tx_report_results_end(&j, valid, err);

  fprintf(stderr, "intset %s: %d threads, %.0f ops/s, allocator %s\n", p.ops->name, (int)p.threads,
          tx_report_rate(total.ops, time_s), bench_allocator_name());
  int status = tx_report_exit("intset", valid, err);

  p.ops->destroy(set);
  free(initial_keys);
  free(r.workers);
  return status;
}
