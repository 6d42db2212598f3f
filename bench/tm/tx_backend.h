/* Everything that differs between the txalloc build and the libitm build of a workload,
 * apart from the atomic blocks themselves (tx_api.h): run-time TM options as command-line
 * flags, the "tm" and "tm_stats" parts of the JSON, statistics reset. The workload drivers
 * call only this interface; CMake links tx_backend_txalloc.c or tx_backend_itm.c. */
#ifndef TXALLOC_BENCH_TX_BACKEND_H
#define TXALLOC_BENCH_TX_BACKEND_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"

/* The end of --help: the TM of this build and the TM flags it accepts. */
void tx_backend_usage(FILE *out);

/* The TM flags of this build (every txalloc option for txalloc's runtime), or NULL. */
const bench_flag_set *tx_backend_flags(void);

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
