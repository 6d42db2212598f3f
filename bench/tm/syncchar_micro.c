/* syncchar-micro: the microbenchmark of Porter and Witchel's Figure 1. Each operation is one
 * critical section that reads `work` words of its thread's own array (no conflicts) and,
 * with probability write%, adds 1 to one shared counter (a read and a write of one word:
 * every two such sections conflict); between sections a thread spins `outside` rounds of
 * private arithmetic. Under glock the sections serialise whatever the probability; under a
 * TM only the writers do, so the speed-up of TM over the lock falls as write% rises.
 * Valid when the counter equals the number of writing sections. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

typedef struct params {
  long write, work, outside, threads;
  double duration;
  long seed;
} params;

typedef struct worker {
  _Alignas(64) double start, end;
  unsigned long long ops, writes;
  long *own; /* `work` words, this thread's */
  unsigned long long sink;
} worker;

typedef struct run {
  const params *p;
  worker *workers;
  _Alignas(64) long counter;
  char pad_[64 - sizeof(long)];
  bench_stop stop;
} run;

static void parse(int argc, char **argv, params *p) {
  *p = (params){.write = 50, .work = 64, .outside = 200, .duration = 1.0};
  tx_common_args common = {.threads = 1, .duration = &p->duration, .seed = 1};
  const bench_arg own[] = {
      BENCH_LONG("write", &p->write, 0, 100,
                 "percentage of critical sections that write the shared counter"),
      BENCH_LONG("work", &p->work, 1, 1L << 20, "words of its own each section reads"),
      BENCH_LONG("outside", &p->outside, 0, 1L << 30,
                 "rounds of private arithmetic between sections"),
  };
  tx_args_parse(argc, argv,
                "Critical sections that write one shared variable with a given probability\n"
                "(Syncchar's Figure 1); prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
}

TX_SAFE static long read_own(const long *own, long work) {
  long sum = 0;
  for (long i = 0; i < work; i++) sum += TX_LOAD(&own[i]);
  return sum;
}

static long section(run *r, const long *own, long work, bool write) {
  TX_LOCAL long sum = 0;
  TX_BEGIN sum = read_own(own, work);
  if (write) TX_STORE(&r->counter, TX_LOAD(&r->counter) + 1);
  TX_END
  return sum;
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  const params *p = r->p;
  worker *w = &r->workers[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)index);
  w->start = bench_now();
  while (!bench_stopped(&r->stop)) {
    bool write = (long)bench_rng_below(&rng, 100) < p->write;
    w->sink += (unsigned long long)section(r, w->own, p->work, write);
    w->writes += write;
    w->ops++;
    uint64_t x = w->ops;
    for (long i = 0; i < p->outside; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    w->sink += x >> 60;
  }
  w->end = bench_now();
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);
  run *r = aligned_alloc(64, sizeof(run));
  worker *workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!r || !workers) {
    fprintf(stderr, "syncchar-micro: out of memory\n");
    return 1;
  }
  memset(r, 0, sizeof *r);
  memset(workers, 0, (size_t)p.threads * sizeof(worker));
  r->p = &p;
  r->workers = workers;
  for (long t = 0; t < p.threads; t++) {
    workers[t].own = aligned_alloc(64, ((size_t)p.work * sizeof(long) + 63) / 64 * 64);
    if (!workers[t].own) {
      fprintf(stderr, "syncchar-micro: out of memory\n");
      return 1;
    }
    for (long i = 0; i < p.work; i++) workers[t].own[i] = i;
  }
  tx_backend_stats_reset();
  double cpu_s = bench_run_timed((int)p.threads, p.duration, &r->stop, worker_main, r);
  tx_backend_stats_snapshot();

  worker total = {.start = workers[0].start, .end = workers[0].end};
  for (long t = 0; t < p.threads; t++) {
    worker *w = &workers[t];
    if (w->start < total.start) total.start = w->start;
    if (w->end > total.end) total.end = w->end;
    total.ops += w->ops;
    total.writes += w->writes;
  }
  char err[160] = "";
  if ((unsigned long long)r->counter != total.writes)
    snprintf(err, sizeof err, "counter %ld, expected %llu", r->counter, total.writes);
  bool valid = err[0] == '\0';
  double time_s = total.end - total.start;

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "syncchar-micro");
  bench_json_object(&j, "params");
  bench_json_int(&j, "write", p.write);
  bench_json_int(&j, "work", p.work);
  bench_json_int(&j, "outside", p.outside);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, &p.duration);
  tx_report_results_begin(&j, total.ops, time_s, cpu_s);
  bench_json_uint(&j, "writes", total.writes);
  tx_report_results_end(&j, valid, err);

  fprintf(stderr, "syncchar-micro: %d threads, write %ld%%, %.0f ops/s\n", (int)p.threads, p.write,
          tx_report_rate(total.ops, time_s));
  int status = tx_report_exit("syncchar-micro", valid, err);
  for (long t = 0; t < p.threads; t++) free(workers[t].own);
  free(workers);
  free(r);
  return status;
}
