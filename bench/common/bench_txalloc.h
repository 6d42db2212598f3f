/* The txalloc options table as command-line flags (--design, --ort-log2, --stats, ...), for
 * the bench programs that link libtxalloc: every option is a flag and BOOL options take no
 * value; bench_txalloc_usage lists them for --help with their choices or range and current
 * value. */
#ifndef TXALLOC_BENCH_TXALLOC_H
#define TXALLOC_BENCH_TXALLOC_H

#include "bench.h"
#include "bench_args.h"

extern const bench_flag_set bench_txalloc_flags;

/* Prints `heading`, then every option as a flag. */
void bench_txalloc_usage(FILE *out, const char *heading);

/* "thrifty_stats": every counter and gauge of the bounded allocator (txalloc/thrifty.h),
 * when txmem runs strategy thrifty; nothing otherwise. */
void bench_json_thrifty_stats(bench_json *j);

#endif
