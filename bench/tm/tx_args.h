/* The command line of the transactional workloads: the workload's own flags, then those
 * every workload shares (--threads, --duration for a timed run, --seed), then the TM's
 * (tx_backend_flags: every txalloc option for the txalloc build, none for -itm and -notm),
 * parsed by bench_args.h. All three builds link txalloc's options code and refuse to run
 * on an unknown TXALLOC_* variable or a bad value, so that one environment is accepted or
 * refused by every build of a workload alike (-itm and -notm do not use the values). */
#ifndef TXALLOC_BENCH_TX_ARGS_H
#define TXALLOC_BENCH_TX_ARGS_H

#include "bench_args.h"

/* The shared flags' values: defaults in, parsed values out. `duration` is NULL for a
 * workload that runs a number of steps (it has no --duration). */
typedef struct tx_common_args {
  long threads;
  double *duration;
  long seed;
} tx_common_args;

/* Parses argv (exit 0 after --help, exit 2 on any problem); `summary` opens --help. */
void tx_args_parse(int argc, char **argv, const char *summary, const bench_arg *own, int own_count,
                   tx_common_args *common);

#endif
