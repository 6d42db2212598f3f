/* TM statistics: per-thread counters (owned by their thread, read by others with relaxed
 * loads), folded into a global total when a thread exits; readable as a struct
 * (tm_stats_get) or JSON (tm_stats_print_json); printed at exit with TXALLOC_STATS=1. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tm/tm_backend.h"

static tm_stats exited; /* threads that exited (under the threads lock) */

static const char *const cause_names[TM_ABORT_CAUSE_COUNT] = {
    [TM_ABORT_READ_LOCKED] = "read_locked",
    [TM_ABORT_WRITE_LOCKED] = "write_locked",
    [TM_ABORT_VALIDATE_READ] = "validate_read",
    [TM_ABORT_VALIDATE_EXTEND] = "validate_extend",
    [TM_ABORT_VALIDATE_COMMIT] = "validate_commit",
    [TM_ABORT_KILLED] = "killed",
    [TM_ABORT_EXPLICIT] = "explicit",
    [TM_ABORT_IRREVOCABLE] = "irrevocable",
    [TM_ABORT_READ_ONLY] = "read_only",
    [TM_ABORT_CONFLICT] = "conflict",
    [TM_ABORT_CAPACITY] = "capacity",
    [TM_ABORT_UNFRIENDLY] = "unfriendly",
    [TM_ABORT_ALLOC_REFILL] = "alloc_refill",
};

const char *tm_abort_cause_name(tm_abort_cause cause) {
  return (unsigned)cause < TM_ABORT_CAUSE_COUNT ? cause_names[cause] : "unknown";
}

/* Adds the counters of `from` to `into` (max_consecutive_aborts takes the maximum). Both
 * are in the per-thread form (tm_internal.h): `commits` counts the commits that wrote,
 * the retry histogram all of them; tm_stats_get turns the sum into the public form. */
static void merge(tm_stats *into, const tm_stats *from) {
#define LD(f) __atomic_load_n(&from->f, __ATOMIC_RELAXED)
  /* The commits that wrote before the histogram, which a commit updates first: a commit
   * running meanwhile is then counted read-only at worst, never twice. */
  into->commits += LD(commits);
  into->commits_irrevocable += LD(commits_irrevocable);
  into->aborts += LD(aborts);
  for (int c = 0; c < TM_ABORT_CAUSE_COUNT; c++) into->aborts_by_cause[c] += LD(aborts_by_cause[c]);
  into->true_conflicts += LD(true_conflicts);
  into->false_conflicts += LD(false_conflicts);
  into->unknown_conflicts += LD(unknown_conflicts);
  into->lock_held_ns += LD(lock_held_ns);
  uint64_t m = LD(max_consecutive_aborts);
  if (m > into->max_consecutive_aborts) into->max_consecutive_aborts = m;
  for (int k = 0; k < TM_RETRY_HISTOGRAM_BUCKETS; k++)
    into->retry_histogram[k] += LD(retry_histogram[k]);
#undef LD
}

static void zero(tm_stats *s) {
  uint64_t *p = (uint64_t *)s;
  for (size_t i = 0; i < sizeof *s / sizeof(uint64_t); i++)
    __atomic_store_n(&p[i], 0, __ATOMIC_RELAXED);
}

void tm_stats_fold_thread(tm_tx *tx) {
  merge(&exited, &tx->stats);
  zero(&tx->stats);
}

static void add_live(tm_tx *tx, void *out) { merge(out, &tx->stats); }

void tm_stats_get(tm_stats *out) {
  memset(out, 0, sizeof *out);
  /* One hold of the lock for both parts: a thread exiting in between would otherwise be
   * in neither, and a later reading could show fewer commits than an earlier one. */
  tm_threads_lock(true);
  merge(out, &exited);
  tm_for_each_live(add_live, out);
  tm_threads_lock(false);
  uint64_t written = out->commits, all = 0;
  for (int k = 0; k < TM_RETRY_HISTOGRAM_BUCKETS; k++) all += out->retry_histogram[k];
  out->commits = all;
  out->commits_read_only = all > written ? all - written : 0;
}

static void zero_live(tm_tx *tx, void *arg) {
  (void)arg;
  zero(&tx->stats);
}

void tm_stats_reset(void) {
  tm_threads_lock(true);
  zero(&exited);
  tm_for_each_live(zero_live, NULL);
  tm_threads_lock(false);
}

void tm_stats_print_json(FILE *out, const tm_stats *s) {
  fprintf(out,
          "{\"commits\": %" PRIu64 ", \"commits_read_only\": %" PRIu64
          ", \"commits_irrevocable\": %" PRIu64 ", \"aborts\": %" PRIu64 ", \"aborts_by_cause\": {",
          s->commits, s->commits_read_only, s->commits_irrevocable, s->aborts);
  for (int c = 0; c < TM_ABORT_CAUSE_COUNT; c++)
    fprintf(out, "%s\"%s\": %" PRIu64, c ? ", " : "", tm_abort_cause_name((tm_abort_cause)c),
            s->aborts_by_cause[c]);
  uint64_t conflicts = s->true_conflicts + s->false_conflicts + s->unknown_conflicts;
  fprintf(out,
          "}, \"true_conflicts\": %" PRIu64 ", \"false_conflicts\": %" PRIu64
          ", \"unknown_conflicts\": %" PRIu64 ", \"false_conflict_share\": %.6f"
          ", \"abort_rate\": %.6f, \"max_consecutive_aborts\": %" PRIu64
          ", \"lock_held_ns\": %" PRIu64 ", \"retry_histogram\": [",
          s->true_conflicts, s->false_conflicts, s->unknown_conflicts,
          conflicts ? (double)s->false_conflicts / (double)conflicts : 0.0,
          s->commits + s->aborts ? (double)s->aborts / (double)(s->commits + s->aborts) : 0.0,
          s->max_consecutive_aborts, s->lock_held_ns);
  for (int k = 0; k < TM_RETRY_HISTOGRAM_BUCKETS; k++)
    fprintf(out, "%s%" PRIu64, k ? ", " : "", s->retry_histogram[k]);
  fprintf(out, "]}");
}

const char *tm_choice_word(txalloc_option_id id, unsigned index, char *buf, size_t len) {
  txalloc_format_choice(txalloc_option_at((size_t)id)->choices, index, buf, len);
  return buf;
}

/* The configuration in force, which can differ from the options: options set after the
 * runtime started do not apply, and a backend may adjust its own (the STM's etl-wt turns
 * privatization off). The front-end's keys, then the backend's. */
void tm_config_print_json(FILE *out) {
  tm_runtime_init();
  char b[2][64];
  fprintf(out,
          "{\"backend\": \"%s\", \"cm\": \"%s\", \"nesting\": \"%s\", \"irrevocable_after\": %u",
          tm_be.name, tm_choice_word(TXALLOC_OPT_CM, tm_cfg.cm, b[0], 64),
          tm_choice_word(TXALLOC_OPT_NESTING, tm_cfg.nesting, b[1], 64), tm_cfg.irrevocable_after);
  if (tm_be.print_config) tm_be.print_config(out);
  fputc('}', out);
}

void tm_stats_print_at_exit(void) {
  tm_stats s;
  tm_stats_get(&s);
  fprintf(stderr, "txalloc: tm config ");
  tm_config_print_json(stderr);
  fprintf(stderr, "\ntxalloc: tm stats ");
  tm_stats_print_json(stderr, &s);
  fprintf(stderr, "\n");
}
