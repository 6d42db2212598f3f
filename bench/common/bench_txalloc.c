/* bench_txalloc.h: txalloc's options as flags. */
#include "bench_txalloc.h"

#include "txalloc/options.h"
#include "txalloc/thrifty.h"
#include "txalloc/txmem.h"

static bool find(const char *name, bool *is_bool) {
  int index = txalloc_option_find(name);
  if (index < 0) return false;
  *is_bool = txalloc_option_at((size_t)index)->type == TXALLOC_OPTION_BOOL;
  return true;
}

void bench_txalloc_usage(FILE *out, const char *heading) {
  fprintf(out, "\n%s\n", heading);
  for (size_t i = 0; i < txalloc_option_count(); i++) {
    const txalloc_option_info *o = txalloc_option_at(i);
    char flag[96], value[64], range[160];
    snprintf(flag, sizeof flag, "--%s", o->name);
    for (char *c = flag; *c; c++)
      if (*c == '_') *c = '-';
    txalloc_option_format(i, value, sizeof value);
    switch (o->type) {
    case TXALLOC_OPTION_BOOL: snprintf(range, sizeof range, "0|1"); break;
    case TXALLOC_OPTION_CHOICE: snprintf(range, sizeof range, "%s", o->choices); break;
    case TXALLOC_OPTION_TEXT: snprintf(range, sizeof range, "text"); break;
    default: snprintf(range, sizeof range, "%ld..%ld", o->min, o->max); break;
    }
    fprintf(out, "  %-22s %s [%s; now %s] (%s layer)\n", flag, o->doc, range, value, o->layer);
  }
}

const bench_flag_set bench_txalloc_flags = {find, txalloc_option_set};

void bench_json_thrifty_stats(bench_json *j) {
  if (txmem_get_strategy() != TXMEM_THRIFTY) return;
  thrifty_stats s;
  thrifty_stats_get(&s);
  bench_json_object(j, "thrifty_stats");
#define BENCH_THRIFTY_STAT_(field, doc) bench_json_uint(j, #field, s.field);
  THRIFTY_STATS_COUNTERS(BENCH_THRIFTY_STAT_)
  THRIFTY_STATS_GAUGES(BENCH_THRIFTY_STAT_)
#undef BENCH_THRIFTY_STAT_
  bench_json_end(j);
}
