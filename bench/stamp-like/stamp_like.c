/* stamp_like.h */
#include "stamp_like.h"

#include "tx_backend.h"
#include "txalloc/txmem.h"

const char *const stamp_size_names[STAMP_SIZE_COUNT] = {"small", "medium"};

void stamp_size_default(long *knob, int size, long small, long medium) {
  if (*knob == 0) *knob = size == STAMP_SIZE_SMALL ? small : medium;
}

void stamp_report_end(bench_json *j, bool valid, const char *error) {
  tx_backend_json_result_counts(j);
  bench_json_end(j);
  tx_backend_json_stats(j);
  txmem_stats s;
  txmem_stats_get(&s);
  bench_json_object(j, "txmem_stats");
#define STAMP_LIKE_STAT_(field, doc) bench_json_uint(j, #field, s.field);
  TXMEM_STATS_COUNTERS(STAMP_LIKE_STAT_)
  TXMEM_STATS_GAUGES(STAMP_LIKE_STAT_)
#undef STAMP_LIKE_STAT_
  bench_json_end(j);
  bench_json_memory(j);
  bench_json_bool(j, "valid", valid);
  if (!valid) bench_json_str(j, "error", error);
  bench_json_finish(j);
}
