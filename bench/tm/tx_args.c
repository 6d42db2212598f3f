/* tx_args.h: the transactional workloads' command line. */
#include "tx_args.h"

#include <stdlib.h>
#include <string.h>

#include "tx_api.h"
#include "tx_backend.h"
#include "txalloc/options.h"

enum { SHARED_ARGS = 3, MAX_OWN_ARGS = 16 };

void tx_args_parse(int argc, char **argv, const char *summary, const bench_arg *own, int own_count,
                   tx_common_args *common) {
  bench_arg args[MAX_OWN_ARGS + SHARED_ARGS];
  if (own_count > MAX_OWN_ARGS) abort();
  memcpy(args, own, (size_t)own_count * sizeof *own);
  int n = own_count;
  args[n++] = (bench_arg)BENCH_LONG("threads", &common->threads, 1, 1024, "worker threads");
  if (common->duration)
    args[n++] = (bench_arg)BENCH_DOUBLE("duration", common->duration, 0.001, 1e6,
                                        "seconds the workers run; ops/s divides by the measured "
                                        "span, results.time_s");
  args[n++] = (bench_arg)BENCH_LONG("seed", &common->seed, 0, __LONG_MAX__, "random seed");
  const bench_cli cli = {.summary = summary,
                         .args = args,
                         .count = n,
                         .flags = tx_backend_flags(),
                         .help_tail = tx_backend_usage,
                         .check_env = txalloc_options_check_env};
  bench_parse_args(&cli, argc, argv);
#ifdef TX_SINGLE_THREAD
  if (common->threads != 1)
    bench_usage_error("--threads %ld: this build runs no TM (its blocks are plain code), "
                      "so one thread only",
                      common->threads);
#endif
}
