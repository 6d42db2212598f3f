/* bank: the invariant-checked workload of TinySTM's test suite. `accounts` accounts hold
 * `balance` each; threads run for `duration` seconds. Each operation is one transaction:
 * with probability read-all% a read-only transaction sums every account and the caller
 * checks, after commit, that the sum is the constant total (a transaction that saw a
 * half-done transfer would report a wrong sum); otherwise a transfer moves 1..10 units
 * between two distinct random accounts. Accounts lie `stride` bytes apart (8: packed, so
 * 2^shift / 8 accounts share one stripe; 64: one per cache line).
 * Valid when no read-all transaction saw a wrong total and the final total is right. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

typedef struct params {
  long accounts, read_all, threads, stride, balance;
  double duration;
  long seed;
} params;

typedef struct worker {
  _Alignas(64) double start, end;
  unsigned long long ops, transfers, read_alls, wrong_totals;
  long last_wrong_total;
} worker;

typedef struct run {
  const params *p;
  char *base; /* account i is the long at base + i * stride */
  worker *workers;
  bench_stop stop; /* raised by main when the duration is up */
} run;

static long *account(const run *r, long i) { return (long *)(r->base + i * r->p->stride); }

static void parse(int argc, char **argv, params *p) {
  *p = (params){.accounts = 1024, .read_all = 20, .stride = 8, .balance = 1000, .duration = 1.0};
  tx_common_args common = {.threads = 1, .duration = &p->duration, .seed = 1};
  const bench_arg own[] = {
      BENCH_LONG("accounts", &p->accounts, 2, 1L << 24, "number of accounts"),
      BENCH_LONG("read-all", &p->read_all, 0, 100,
                 "percentage of operations that sum all accounts"),
      BENCH_LONG("stride", &p->stride, 8, 4096,
                 "bytes between accounts, a multiple of 8 (8: packed)"),
      BENCH_LONG("balance", &p->balance, 0, 1L << 40, "initial balance of each account"),
  };
  tx_args_parse(argc, argv,
                "Transfers between accounts and read-only transactions that check the total;\n"
                "prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
  if (p->stride % 8) bench_usage_error("--stride %ld is not a multiple of 8", p->stride);
}

static void transfer(long *from, long *to, long amount) {
  TX_BEGIN long a = TX_LOAD(from);
  long b = TX_LOAD(to);
  TX_STORE(from, a - amount);
  TX_STORE(to, b + amount);
  TX_END
}

TX_SAFE static long sum_accounts(const char *base, long accounts, long stride) {
  long sum = 0;
  for (long i = 0; i < accounts; i++) sum += TX_LOAD((const long *)(base + i * stride));
  return sum;
}

static long read_all(const run *r) {
  const char *base = r->base;
  long accounts = r->p->accounts, stride = r->p->stride;
  TX_LOCAL long sum = 0;
  TX_BEGIN_RO sum = sum_accounts(base, accounts, stride);
  TX_END
  return sum;
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  const params *p = r->p;
  worker *w = &r->workers[index];
  const long total = p->accounts * p->balance;
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)index);
  w->start = bench_now();
  while (!bench_stopped(&r->stop)) {
    if ((long)bench_rng_below(&rng, 100) < p->read_all) {
      long sum = read_all(r);
      if (sum != total) {
        w->wrong_totals++;
        w->last_wrong_total = sum;
      }
      w->read_alls++;
    } else {
      long from = (long)bench_rng_below(&rng, (uint64_t)p->accounts);
      long to = (long)bench_rng_below(&rng, (uint64_t)p->accounts - 1);
      if (to >= from) to++; /* distinct accounts */
      transfer(account(r, from), account(r, to), 1 + (long)bench_rng_below(&rng, 10));
      w->transfers++;
    }
    w->ops++;
  }
  w->end = bench_now();
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);

  run r = {.p = &p};
  size_t bytes = (size_t)(p.accounts * p.stride);
  r.base = aligned_alloc(64, (bytes + 63) / 64 * 64);
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!r.base || !r.workers) {
    fprintf(stderr, "bank: out of memory\n");
    return 1;
  }
  memset(r.base, 0, bytes);
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  for (long i = 0; i < p.accounts; i++) *account(&r, i) = p.balance;
  tx_backend_stats_reset();
  double cpu_s = bench_run_timed((int)p.threads, p.duration, &r.stop, worker_main, &r);
  tx_backend_stats_snapshot();

  worker total = {.start = r.workers[0].start, .end = r.workers[0].end};
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    if (w->start < total.start) total.start = w->start;
    if (w->end > total.end) total.end = w->end;
    total.ops += w->ops;
    total.transfers += w->transfers;
    total.read_alls += w->read_alls;
    total.wrong_totals += w->wrong_totals;
    if (w->wrong_totals) total.last_wrong_total = w->last_wrong_total;
  }
  const long expected = p.accounts * p.balance;
  long final_total = 0;
  for (long i = 0; i < p.accounts; i++) final_total += *account(&r, i);
  char err[256] = "";
  if (total.wrong_totals)
    snprintf(err, sizeof err, "%llu read-all transactions saw a wrong total (e.g. %ld, not %ld)",
             total.wrong_totals, total.last_wrong_total, expected);
  else if (final_total != expected)
    snprintf(err, sizeof err, "final total %ld, expected %ld", final_total, expected);
  bool valid = err[0] == '\0';
  double time_s = total.end - total.start;

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "bank");
  bench_json_object(&j, "params");
  bench_json_int(&j, "accounts", p.accounts);
  bench_json_int(&j, "read_all", p.read_all);
  bench_json_int(&j, "stride", p.stride);
  bench_json_int(&j, "balance", p.balance);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, &p.duration);
  tx_report_results_begin(&j, total.ops, time_s, cpu_s);
  bench_json_uint(&j, "transfers", total.transfers);
  bench_json_uint(&j, "read_alls", total.read_alls);
  bench_json_uint(&j, "wrong_totals", total.wrong_totals);
  bench_json_int(&j, "final_total", final_total);
  tx_report_results_end(&j, valid, err);

  fprintf(stderr, "bank: %d threads, %.0f ops/s, allocator %s\n", (int)p.threads,
          tx_report_rate(total.ops, time_s), bench_allocator_name());
  int status = tx_report_exit("bank", valid, err);
  free(r.base);
  free(r.workers);
  return status;
}
