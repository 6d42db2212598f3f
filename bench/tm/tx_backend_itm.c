/* tx_backend.h for GCC's libitm: no run-time options of ours (libitm reads
 * ITM_DEFAULT_METHOD itself) and no statistics (libitm exports no counters): those parts
 * are tx_backend_uncounted.c's. */
#include <stdlib.h>

#include "tx_backend.h"

static const char *itm_method(void) {
  const char *m = getenv("ITM_DEFAULT_METHOD");
  return m && *m ? m : "default";
}

void tx_backend_usage(FILE *out) {
  fprintf(out, "\nTM: GCC libitm (-fgnu-tm). Its algorithm is chosen by the environment variable\n"
               "ITM_DEFAULT_METHOD (e.g. ml_wt, gl_wt, serialirr); by default libitm runs a\n"
               "single thread serially, uninstrumented. No TM flags are accepted; TXALLOC_*\n"
               "variables are checked as for the txalloc build, and change nothing here.\n");
}

void tx_backend_json_tm(bench_json *j) {
  bench_json_object(j, "tm");
  bench_json_str(j, "backend", "libitm");
  bench_json_str(j, "method", itm_method());
  bench_json_end(j);
}

void tx_backend_describe(FILE *out) { fprintf(out, "tm: libitm, method %s\n", itm_method()); }
