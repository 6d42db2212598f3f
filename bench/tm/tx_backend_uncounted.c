/* The parts of tx_backend.h shared by the builds whose TM has no run-time options of ours
 * and counts nothing (libitm: tx_backend_itm.c; no TM: tx_backend_notm.c): no TM flags, there are
 * no statistics to reset or freeze, and the JSON leaves the counts out rather than zeroing them. */
#include "tx_backend.h"

const bench_flag_set *tx_backend_flags(void) { return NULL; }

void tx_backend_stats_reset(void) {}

void tx_backend_stats_snapshot(void) {}

void tx_backend_json_result_counts(bench_json *j) { (void)j; }

void tx_backend_json_stats(bench_json *j) { (void)j; }
