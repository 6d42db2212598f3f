/* tx_backend.h for txalloc's runtime: every option of the txalloc table is a flag; the
 * "tm" JSON object is the configuration in force, as the runtime and the txmem layer report
 * it, and "tm_options" the values the options were given; tm_stats_get provides commits,
 * aborts by cause and the true/false conflict classification. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_profile.h"
#include "bench_txalloc.h"
#include "tx_backend.h"
#include "txalloc/options.h"
#include "txalloc/tm.h"
#include "txalloc/txmem.h"

void tx_backend_usage(FILE *out) {
  bench_txalloc_usage(out, "TM and allocator options (also read from TXALLOC_<NAME> variables; a "
                           "bare boolean\nflag means 1). The JSON's \"tm_options\" lists the TM "
                           "ones as given, \"tm\" the\nconfiguration in force:");
}

const bench_flag_set *tx_backend_flags(void) { return &bench_txalloc_flags; }

static tm_stats snapshot;
static bool have_snapshot;

void tx_backend_stats_reset(void) {
  tm_stats_reset();
  have_snapshot = false;
}

void tx_backend_stats_snapshot(void) {
  tm_stats_get(&snapshot);
  have_snapshot = true;
}

static void stats_get(tm_stats *out) {
  if (have_snapshot)
    *out = snapshot;
  else
    tm_stats_get(out);
}

static void json_option(bench_json *j, size_t index) {
  const txalloc_option_info *o = txalloc_option_at(index);
  const char *key = o->name;
  char text[128];
  switch (o->type) {
  case TXALLOC_OPTION_BOOL: bench_json_bool(j, key, txalloc_option_value(index) != 0); break;
  case TXALLOC_OPTION_CHOICE:
  case TXALLOC_OPTION_TEXT:
    txalloc_option_format(index, text, sizeof text);
    bench_json_str(j, key, text);
    break;
  default: bench_json_int(j, key, txalloc_option_value(index)); break;
  }
}

/* The runtime's configuration in force (tm_config_print_json: e.g. etl-wt without
 * privatization) and the txmem layer's (strategy, safe reuse and whether membarrier
 * replaced the begin's barrier, which the kernel may refuse, from its getters). Both layers
 * have started by now: the workload ran transactions. */
static void json_in_force(bench_json *j) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) {
    fprintf(stderr, "tx_backend: open_memstream failed\n");
    exit(1);
  }
  tm_config_print_json(mem);
  fclose(mem);
  bench_json_members(j, text);
  free(text);
  bench_json_str(j, "txmem", txmem_strategy_name(txmem_get_strategy()));
  bench_json_bool(j, "safe_reuse", txmem_safe_reuse());
  bench_json_bool(j, "txmem_membarrier", txmem_membarrier_in_force());
}

void tx_backend_json_tm(bench_json *j) {
  bench_json_object(j, "tm");
  json_in_force(j);
  bench_json_end(j);
  /* As given (flags, TXALLOC_<NAME> variables, defaults), whether or not in force;
   * txmem_limbo_max, which the layer has no getter for, shows only here. */
  bench_json_object(j, "tm_options");
  for (size_t i = 0; i < txalloc_option_count(); i++) {
    const txalloc_option_info *o = txalloc_option_at(i);
    if (strcmp(o->layer, "tm") == 0 || strcmp(o->layer, "txmem") == 0 ||
        strcmp(o->layer, "thrifty") == 0)
      json_option(j, i);
  }
  bench_json_end(j);
}

static double ratio(uint64_t part, uint64_t whole) {
  return whole ? (double)part / (double)whole : NAN; /* NAN is written as null */
}

void tx_backend_json_result_counts(bench_json *j) {
  tm_stats s;
  stats_get(&s);
  bench_json_uint(j, "commits", s.commits);
  bench_json_uint(j, "aborts", s.aborts);
  bench_json_double(j, "abort_rate", ratio(s.aborts, s.commits + s.aborts));
}

void tx_backend_json_stats(bench_json *j) {
  tm_stats s;
  stats_get(&s);
  uint64_t conflicts = s.true_conflicts + s.false_conflicts + s.unknown_conflicts;
  bench_json_object(j, "tm_stats");
  bench_json_uint(j, "commits", s.commits);
  bench_json_uint(j, "commits_read_only", s.commits_read_only);
  bench_json_uint(j, "commits_irrevocable", s.commits_irrevocable);
  bench_json_uint(j, "aborts", s.aborts);
  bench_json_object(j, "aborts_by_cause");
  for (int c = 0; c < TM_ABORT_CAUSE_COUNT; c++)
    bench_json_uint(j, tm_abort_cause_name((tm_abort_cause)c), s.aborts_by_cause[c]);
  bench_json_end(j);
  bench_json_uint(j, "true_conflicts", s.true_conflicts);
  bench_json_uint(j, "false_conflicts", s.false_conflicts);
  bench_json_uint(j, "unknown_conflicts", s.unknown_conflicts);
  /* Share of the classified conflict aborts that were false; null without conflicts. */
  bench_json_double(j, "false_conflict_share", ratio(s.false_conflicts, conflicts));
  bench_json_uint(j, "max_consecutive_aborts", s.max_consecutive_aborts);
  bench_json_uint(j, "lock_held_ns", s.lock_held_ns);
  bench_json_array(j, "retry_histogram");
  for (int k = 0; k < TM_RETRY_HISTOGRAM_BUCKETS; k++)
    bench_json_uint(j, NULL, s.retry_histogram[k]);
  bench_json_end(j);
  bench_json_end(j);
  bench_json_thrifty_stats(j);
  bench_json_alloc_profile(j);
}

void tx_backend_describe(FILE *out) {
  tm_stats s;
  stats_get(&s);
  uint64_t conflicts = s.true_conflicts + s.false_conflicts + s.unknown_conflicts;
  fprintf(out, "tm: %llu commits, %llu aborts (%.1f%%), %llu conflicts of which %llu false\n",
          (unsigned long long)s.commits, (unsigned long long)s.aborts,
          100.0 * (s.commits + s.aborts ? (double)s.aborts / (double)(s.commits + s.aborts) : 0),
          (unsigned long long)conflicts, (unsigned long long)s.false_conflicts);
}
