/* txmem_bench.h: the txmem benchmarks' shared command line and JSON. */
#include "txmem_bench.h"

#include "bench_profile.h"
#include "bench_txalloc.h"
#include "txalloc/txalloc.h"

static void txalloc_flags_usage(FILE *out) {
  bench_txalloc_usage(out, "txalloc options (also read from TXALLOC_<NAME> variables; a bare "
                           "boolean flag means 1):");
}

void txmem_bench_parse(int argc, char **argv, const char *summary, const bench_arg *own,
                       int own_count) {
  const bench_cli cli = {.summary = summary,
                         .args = own,
                         .count = own_count,
                         .flags = &bench_txalloc_flags,
                         .help_tail = txalloc_flags_usage,
                         .check_env = txalloc_options_check_env};
  bench_parse_args(&cli, argc, argv);
}

void txmem_bench_json_config(bench_json *j, long threads, const double *duration,
                             txmem_strategy strategy) {
  bench_json_int(j, "threads", threads);
  if (duration) bench_json_double(j, "duration_s", *duration);
  bench_json_allocator(j);
  bench_json_object(j, "txmem");
  bench_json_str(j, "strategy", txmem_strategy_name(strategy));
  bench_json_bool(j, "safe_reuse", txmem_safe_reuse());
  bench_json_end(j);
}

void txmem_bench_json_finish(bench_json *j, const txmem_stats *s, bool valid) {
  bench_json_object(j, "txmem_stats");
#define TXMEM_BENCH_STAT_(field, doc) bench_json_uint(j, #field, s->field);
  TXMEM_STATS_COUNTERS(TXMEM_BENCH_STAT_)
  TXMEM_STATS_GAUGES(TXMEM_BENCH_STAT_)
#undef TXMEM_BENCH_STAT_
  bench_json_end(j);
  bench_json_thrifty_stats(j);
  bench_json_alloc_profile(j);
  bench_json_memory(j);
  bench_json_bool(j, "valid", valid);
  bench_json_finish(j);
}
