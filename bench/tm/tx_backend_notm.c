/* tx_backend.h for the build without a TM (tx_api.h's TX_BACKEND_NOTM): the JSON names
 * the backend "none"; no options and no statistics (tx_backend_uncounted.c). */
#include "tx_backend.h"

void tx_backend_usage(FILE *out) {
  fprintf(out, "\nTM: none. The atomic blocks run as plain code and allocate with the process's\n"
               "malloc, on one thread only (--threads 1): the cost of the workload itself,\n"
               "the baseline of each TM's overhead. No TM flags are accepted; TXALLOC_*\n"
               "variables are checked as for the txalloc build, and change nothing here.\n");
}

void tx_backend_json_tm(bench_json *j) {
  bench_json_object(j, "tm");
  bench_json_str(j, "backend", "none");
  bench_json_end(j);
}

void tx_backend_describe(FILE *out) { fprintf(out, "tm: none (plain code, one thread)\n"); }
