/* The parts of tx_backend.h shared by the builds whose TM has no run-time options of ours
 * and counts nothing (libitm: tx_backend_itm.c; no TM: tx_backend_notm.c): every flag is
 * unknown to them, there are no statistics to reset or freeze, and the JSON leaves the
 * counts out rather than zeroing them. */
#include "tx_backend.h"

bool tx_backend_flag(const char *name, const char *value) {
  (void)name;
  (void)value;
  return false;
}

void tx_backend_stats_reset(void) {}

void tx_backend_stats_snapshot(void) {}

void tx_backend_json_result_counts(bench_json *j) { (void)j; }

void tx_backend_json_stats(bench_json *j) { (void)j; }
