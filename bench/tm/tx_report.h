/* The parts of a transactional workload's JSON object (DESIGN.md bench shape) and exit that
 * every workload writes alike. A workload writes, in this order:
 *   "workload", its own "params" object,
 *   tx_report_config          "threads", ["duration_s"], "allocator", "tm", ["tm_options"]
 *   tx_report_results_begin   opens "results" with "ops", "ops_per_s", "time_s", "cpu_s"
 *   its own result counters,
 *   tx_report_results_end     TM commit/abort counts, closes "results", then "tm_stats",
 *                             "memory", "valid", ["error"] and finishes the object
 *   its one-line summary on stderr,
 *   return tx_report_exit(...).
 * `error` is the reason the run is not valid (ignored when it is). */
#ifndef TXALLOC_BENCH_TX_REPORT_H
#define TXALLOC_BENCH_TX_REPORT_H

#include <stdbool.h>

#include "bench.h"

/* `duration`: the seconds of a timed run, NULL for a workload that runs a number of steps. */
void tx_report_config(bench_json *j, long threads, const double *duration);

/* `cpu_s`: CPU seconds of the process over the run (what bench_run_timed returns). */
void tx_report_results_begin(bench_json *j, unsigned long long ops, double time_s, double cpu_s);

void tx_report_results_end(bench_json *j, bool valid, const char *error);

/* ops per second, 0 for an empty time span. */
double tx_report_rate(unsigned long long ops, double time_s);

/* The TM's description and, for an invalid run, "<workload>: INVALID: <error>" on stderr;
 * returns the exit status (0 valid, 1 not). */
int tx_report_exit(const char *workload, bool valid, const char *error);

#endif
