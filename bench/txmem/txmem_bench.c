/* txmem_bench.h: the txmem benchmarks' shared flags and JSON. */
#include "txmem_bench.h"

#include "txalloc/txalloc.h"

void txmem_bench_option(const char *name, const char *value) {
  char err[256];
  if (txalloc_option_set(name, value, err, sizeof err) != 0) bench_usage_error("%s", err);
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
  bench_json_memory(j);
  bench_json_bool(j, "valid", valid);
  bench_json_finish(j);
}
