/* What the STAMP-style applications share beyond bench/tm's command line and report
 * (tx_args.h, tx_report.h): the input size presets and the end of the JSON object, which adds
 * the txmem layer's statistics to what tx_report_results_end writes. */
#ifndef TXALLOC_STAMP_LIKE_H
#define TXALLOC_STAMP_LIKE_H

#include <stdbool.h>

#include "bench.h"

/* --size: "small" is the tests' input, "medium" the study's. */
enum { STAMP_SIZE_SMALL, STAMP_SIZE_MEDIUM, STAMP_SIZE_COUNT };
extern const char *const stamp_size_names[STAMP_SIZE_COUNT];

/* A knob left at 0 takes the preset's value for the chosen size. */
void stamp_size_default(long *knob, int size, long small, long medium);

/* Closes "results" (after the TM's commit and abort counts), then writes "tm_stats",
 * "txmem_stats", "memory", "valid" and ["error"], and finishes the object. */
void stamp_report_end(bench_json *j, bool valid, const char *error);

#endif
