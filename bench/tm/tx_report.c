/* tx_report.h: the JSON and exit shared by the transactional workloads. */
#include "tx_report.h"

#include <stdio.h>

#include "tx_backend.h"

void tx_report_config(bench_json *j, long threads, const double *duration) {
  bench_json_int(j, "threads", threads);
  if (duration) bench_json_double(j, "duration_s", *duration);
  bench_json_allocator(j);
  tx_backend_json_tm(j);
}

double tx_report_rate(unsigned long long ops, double time_s) {
  return time_s > 0 ? (double)ops / time_s : 0.0;
}

void tx_report_results_begin(bench_json *j, unsigned long long ops, double time_s, double cpu_s) {
  bench_json_object(j, "results");
  bench_json_uint(j, "ops", ops);
  bench_json_double(j, "ops_per_s", tx_report_rate(ops, time_s));
  bench_json_double(j, "time_s", time_s);
  bench_json_double(j, "cpu_s", cpu_s);
}

void tx_report_results_end(bench_json *j, bool valid, const char *error) {
  tx_backend_json_result_counts(j);
  bench_json_end(j);
  tx_backend_json_stats(j);
  bench_json_memory(j);
  bench_json_bool(j, "valid", valid);
  if (!valid) bench_json_str(j, "error", error);
  bench_json_finish(j);
}

int tx_report_exit(const char *workload, bool valid, const char *error) {
  tx_backend_describe(stderr);
  if (!valid) fprintf(stderr, "%s: INVALID: %s\n", workload, error);
  return valid ? 0 : 1;
}
