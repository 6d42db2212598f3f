/* What the txmem benchmarks (txmem_overhead, txmem_machias) share: the command line (their
 * own flags plus the txalloc options) and the txmem parts of their JSON object (DESIGN.md
 * bench shape). */
#ifndef TXALLOC_BENCH_TXMEM_BENCH_H
#define TXALLOC_BENCH_TXMEM_BENCH_H

#include <stdbool.h>

#include "bench.h"
#include "txalloc/txmem.h"

/* Parses argv with bench_parse_args: the benchmark's own flags, then every txalloc option
 * as a flag (--txmem, --safe-reuse, ...); refuses an unknown TXALLOC_* variable or a bad
 * value. `summary` opens --help. */
void txmem_bench_parse(int argc, char **argv, const char *summary, const bench_arg *own,
                       int own_count);

/* "threads", "duration_s" (when `duration` is not NULL), "allocator" and
 * "txmem": {"strategy", "safe_reuse"}. */
void txmem_bench_json_config(bench_json *j, long threads, const double *duration,
                             txmem_strategy strategy);

/* "txmem_stats" (every counter and gauge of `s`), "memory", "valid"; finishes the object. */
void txmem_bench_json_finish(bench_json *j, const txmem_stats *s, bool valid);

#endif
