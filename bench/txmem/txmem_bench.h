/* What the txmem benchmarks (txmem_overhead, txmem_machias) share: the strategy flags and
 * the txmem parts of their JSON object (DESIGN.md bench shape). */
#ifndef TXALLOC_BENCH_TXMEM_BENCH_H
#define TXALLOC_BENCH_TXMEM_BENCH_H

#include <stdbool.h>

#include "bench.h"
#include "txalloc/txmem.h"

/* Sets the txalloc option `name` ("txmem", "safe_reuse") to the value of a command-line
 * flag; a bad value is a usage error (exit 2). */
void txmem_bench_option(const char *name, const char *value);

/* "threads", "duration_s" (when `duration` is not NULL), "allocator" and
 * "txmem": {"strategy", "safe_reuse"}. */
void txmem_bench_json_config(bench_json *j, long threads, const double *duration,
                             txmem_strategy strategy);

/* "txmem_stats" (every counter and gauge of `s`), "memory", "valid"; finishes the object. */
void txmem_bench_json_finish(bench_json *j, const txmem_stats *s, bool valid);

#endif
