/* Everything that differs between the txalloc build and the libitm build of a workload,
 * apart from the atomic blocks themselves (tx_api.h): run-time TM options as command-line
 * flags, the "tm" and "tm_stats" parts of the JSON, statistics reset. The workload drivers
 * call only this interface; CMake links tx_backend_txalloc.c or tx_backend_itm.c. */
#ifndef TXALLOC_BENCH_TX_BACKEND_H
#define TXALLOC_BENCH_TX_BACKEND_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"

/* Lists the TM flags this build accepts (for --help). */
void tx_backend_usage(FILE *out);

/* Applies `--<name> value` when `name` is a TM (or any txalloc) option: returns true when
 * it was one (a bad value is a usage error, exit 2), false when the name is unknown. */
bool tx_backend_flag(const char *name, const char *value);

/* Forgets the statistics gathered so far (call after the single-threaded set-up). */
void tx_backend_stats_reset(void);

/* Freezes the statistics the JSON reports (call when the timed run ends, before any
 * clean-up transactions). Without it the JSON reports the statistics at print time. */
void tx_backend_stats_snapshot(void);

/* "tm": {"backend": ..., ...}: the TM configuration in force. A backend with run-time
 * options adds "tm_options": {<every TM option>: value as given, ...}, which may differ
 * (an option a design overrides, one the kernel refuses). */
void tx_backend_json_tm(bench_json *j);

/* Inside "results": "commits", "aborts", "abort_rate" when the TM counts them. */
void tx_backend_json_result_counts(bench_json *j);

/* "tm_stats": {...} when the TM counts them; nothing otherwise. */
void tx_backend_json_stats(bench_json *j);

/* One line for stderr: commits, aborts, false-conflict share (or nothing known). */
void tx_backend_describe(FILE *out);

#endif
