/* The allocation profile by region (include/txalloc/txmem.h) in a bench program that links
 * libtxalloc: its thread runners mark the parallel region (installed when the program
 * starts), and its JSON carries the profile. */
#ifndef TXALLOC_BENCH_PROFILE_H
#define TXALLOC_BENCH_PROFILE_H

#include "bench.h"

/* "alloc_profile": {"seq": R, "par": R, "tx": R}, each R
 * {"mallocs", "frees", "bytes", "sizes": {"16": n, "32": n, ..., "4096": n, "larger": n}}
 * (the sizes' keys are the buckets' largest requests). */
void bench_json_alloc_profile(bench_json *j);

#endif
