/* Statistics of the transactional layer: summed over the thread records (exited threads'
 * records keep their counters), as a struct, as JSON, and at exit with TXALLOC_STATS=1. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "txmem/txmem_internal.h"
#include "txmem/txmem_options.h"
#include "util/message.h"

void txmem_stats_get(txmem_stats *out) {
  if (txmem_tls.ready) txmem_hot_publish(&txmem_tls); /* the caller's own counters are exact */
  memset(out, 0, sizeof *out);
  uint64_t counters[TXMEM_C_COUNT_] = {0};
  uint64_t oldest = UINT64_MAX;
  for (txmem_record *r = atomic_load(&txmem_registry); r; r = atomic_load(&r->next)) {
    for (int i = 0; i < TXMEM_C_COUNT_; i++)
      counters[i] += __atomic_load_n(&r->counters[i], __ATOMIC_RELAXED);
    out->limbo_objects += __atomic_load_n(&r->limbo_objects, __ATOMIC_RELAXED);
    out->limbo_bytes += __atomic_load_n(&r->limbo_bytes, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&r->limbo_peak, __ATOMIC_RELAXED);
    if (peak > out->limbo_peak) out->limbo_peak = peak;
    uint64_t a = atomic_load(&r->announce);
    if (TXMEM_ANNOUNCE_RUNNING(a)) {
      out->active_transactions++;
      if (TXMEM_ANNOUNCE_EPOCH(a) < oldest) oldest = TXMEM_ANNOUNCE_EPOCH(a);
    }
  }
#define TXMEM_STATS_COPY_(name, doc) out->name = counters[TXMEM_C_##name];
  TXMEM_STATS_COUNTERS(TXMEM_STATS_COPY_)
#undef TXMEM_STATS_COPY_
  uint64_t orphans, orphan_bytes;
  txmem_orphan_gauges(&orphans, &orphan_bytes);
  out->limbo_objects += orphans;
  out->limbo_bytes += orphan_bytes;
  out->epoch = txmem_epoch_now();
  out->epoch_lag = oldest == UINT64_MAX || oldest > out->epoch ? 0 : out->epoch - oldest;
}

void txmem_stats_print_json(int fd) {
  txmem_stats s;
  txmem_stats_get(&s);
  char buf[2048];
  size_t n = 0;
  n += (size_t)snprintf(
      buf + n, sizeof buf - n,
      "{\"strategy\": \"%s\", \"safe_reuse\": %s, \"membarrier\": %s, \"placement_stripe\": %zu",
      txmem_strategy_name(txmem_get_strategy()), txmem_safe_reuse() ? "true" : "false",
      txmem_membarrier_in_force() ? "true" : "false", txmem_placement_stripe());
#define TXMEM_STATS_JSON_(name, doc)                                                               \
  if (n < sizeof buf)                                                                              \
    n += (size_t)snprintf(buf + n, sizeof buf - n, ", \"" #name "\": %llu",                        \
                          (unsigned long long)s.name);
  TXMEM_STATS_COUNTERS(TXMEM_STATS_JSON_)
  TXMEM_STATS_GAUGES(TXMEM_STATS_JSON_)
#undef TXMEM_STATS_JSON_
  if (n < sizeof buf) n += (size_t)snprintf(buf + n, sizeof buf - n, "}");
  if (n > sizeof buf) n = sizeof buf;
  txalloc_write_all(fd, buf, n);
}

__attribute__((destructor)) static void txmem_stats_at_exit(void) {
  if (!atomic_load(&txmem_registry) || !txalloc_opt(TXALLOC_OPT_STATS)) return;
  static const char prefix[] = "txalloc: txmem stats: ";
  if (write(2, prefix, sizeof prefix - 1) < 0) return;
  txmem_stats_print_json(2);
  if (write(2, "\n", 1) < 0) return;
}
