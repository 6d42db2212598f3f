/* Statistics. Thread heaps count their own events without atomics (relaxed stores by the
 * owner); a reader sums every registered heap plus the process-wide counters, into which
 * exited heaps are folded and where slow-path events (large objects, OS calls) are
 * counted atomically. Printing never allocates. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc/internal.h"
#include "util/message.h"

_Atomic(uint64_t) txa_global_counters[TXA_COUNTERS];
_Atomic(uint64_t) txa_global_cls[TXA_CLASSES][3];
_Atomic(int64_t) txa_committed, txa_reserved, txa_blocks_in_use, txa_blocks_in_store,
    txa_large_live, txa_large_cached;
_Atomic(uint64_t) txa_peak_committed;
_Atomic(uint64_t) txa_runs_bytes[2];

void txa_committed_add(int64_t delta) {
  int64_t now = atomic_fetch_add_explicit(&txa_committed, delta, memory_order_relaxed) + delta;
  if (delta <= 0 || now < 0) return;
  uint64_t peak = atomic_load_explicit(&txa_peak_committed, memory_order_relaxed);
  while ((uint64_t)now > peak &&
         !atomic_compare_exchange_weak_explicit(&txa_peak_committed, &peak, (uint64_t)now,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

void txa_stats_fold_heap(txa_heap *h) {
  for (unsigned i = 0; i < TXA_COUNTERS; i++) {
    atomic_fetch_add_explicit(&txa_global_counters[i], txa_rd(&h->counters[i]),
                              memory_order_relaxed);
    __atomic_store_n(&h->counters[i], 0, __ATOMIC_RELAXED);
  }
  for (unsigned k = 0; k < 2; k++) {
    atomic_fetch_add_explicit(&txa_runs_bytes[k], txa_rd(&h->runs_bytes[k]), memory_order_relaxed);
    __atomic_store_n(&h->runs_bytes[k], 0, __ATOMIC_RELAXED);
  }
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    uint64_t *v[3] = {&h->cls.allocs[c], &h->cls.frees[c], &h->cls.remote_frees[c]};
    for (unsigned k = 0; k < 3; k++) {
      atomic_fetch_add_explicit(&txa_global_cls[c][k], txa_rd(v[k]), memory_order_relaxed);
      __atomic_store_n(v[k], 0, __ATOMIC_RELAXED);
    }
  }
}

/* Sums per-class counters over the global table and every heap. pre: txa_heap_lock. */
static void sum_classes(txalloc_class_stats out[TXA_CLASSES]) {
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    out[c].size = txa_classes[c].size;
    out[c].allocs = atomic_load_explicit(&txa_global_cls[c][0], memory_order_relaxed);
    out[c].frees = atomic_load_explicit(&txa_global_cls[c][1], memory_order_relaxed);
    out[c].remote_frees = atomic_load_explicit(&txa_global_cls[c][2], memory_order_relaxed);
  }
  for (txa_heap *h = txa_heap_registry(); h; h = h->all_next) {
    for (unsigned c = 0; c < TXA_CLASSES; c++) {
      out[c].allocs += txa_rd(&h->cls.allocs[c]);
      out[c].frees += txa_rd(&h->cls.frees[c]);
      out[c].remote_frees += txa_rd(&h->cls.remote_frees[c]);
    }
  }
}

static uint64_t gauge(_Atomic(int64_t) *g) {
  int64_t v = atomic_load_explicit(g, memory_order_relaxed);
  return v > 0 ? (uint64_t)v : 0;
}

TXALLOC_API void txalloc_stats_get(txalloc_stats *out) {
  txa_init();
  memset(out, 0, sizeof *out);
  uint64_t counters[TXA_COUNTERS];
  txalloc_class_stats cls[TXA_CLASSES];
  txa_lock_acquire(&txa_heap_lock);
  for (unsigned i = 0; i < TXA_COUNTERS; i++)
    counters[i] = atomic_load_explicit(&txa_global_counters[i], memory_order_relaxed);
  uint64_t runs[2] = {atomic_load_explicit(&txa_runs_bytes[0], memory_order_relaxed),
                      atomic_load_explicit(&txa_runs_bytes[1], memory_order_relaxed)};
  uint64_t heap_cached = 0; /* empty blocks in the heaps' caches count as in the store */
  for (txa_heap *h = txa_heap_registry(); h; h = h->all_next) {
    for (unsigned i = 0; i < TXA_COUNTERS; i++) counters[i] += txa_rd(&h->counters[i]);
    for (unsigned k = 0; k < 2; k++) runs[k] += txa_rd(&h->runs_bytes[k]);
    heap_cached += atomic_load_explicit(&h->empty_count, memory_order_relaxed);
  }
  sum_classes(cls);
  txa_lock_release(&txa_heap_lock);
  uint64_t live = 0;
  for (unsigned c = 0; c < TXA_CLASSES; c++) {
    counters[TXA_C_mallocs] += cls[c].allocs;
    counters[TXA_C_frees] += cls[c].frees;
    counters[TXA_C_remote_frees] += cls[c].remote_frees;
    if (cls[c].allocs > cls[c].frees) live += (cls[c].allocs - cls[c].frees) * cls[c].size;
  }
#define TXA_COPY_(name, doc) out->name = counters[TXA_C_##name];
  TXALLOC_STATS_COUNTERS(TXA_COPY_)
#undef TXA_COPY_
  out->live_bytes = live + gauge(&txa_large_live) + (runs[0] > runs[1] ? runs[0] - runs[1] : 0);
  out->committed_bytes = gauge(&txa_committed);
  out->peak_committed_bytes = atomic_load_explicit(&txa_peak_committed, memory_order_relaxed);
  out->reserved_bytes = gauge(&txa_reserved);
  out->blocks_in_use = gauge(&txa_blocks_in_use);
  out->blocks_in_store = gauge(&txa_blocks_in_store) + heap_cached;
  out->large_cache_bytes = gauge(&txa_large_cached);
}

TXALLOC_API size_t txalloc_class_count(void) {
  txa_init();
  return txa_class_count;
}

TXALLOC_API size_t txalloc_class_stats_get(txalloc_class_stats *out, size_t max) {
  txa_init();
  txalloc_class_stats cls[TXA_CLASSES];
  txa_lock_acquire(&txa_heap_lock);
  sum_classes(cls);
  txa_lock_release(&txa_heap_lock);
  size_t n = max < txa_class_count ? max : txa_class_count;
  memcpy(out, cls, n * sizeof *out);
  return n;
}

/* ---- Printing, without allocating ---- */

typedef struct outbuf {
  int fd;
  size_t len;
  char buf[4096];
} outbuf;

static void out_flush(outbuf *o) {
  txalloc_write_all(o->fd, o->buf, o->len);
  o->len = 0;
}

static void out_printf(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(outbuf *o, const char *fmt, ...) {
  if (sizeof o->buf - o->len < 512) out_flush(o);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n < sizeof o->buf - o->len ? (size_t)n : sizeof o->buf - o->len - 1;
}

TXALLOC_API void txalloc_stats_print_json(int fd) {
  txalloc_stats s;
  txalloc_stats_get(&s);
  txalloc_class_stats cls[TXA_CLASSES];
  size_t classes = txalloc_class_stats_get(cls, TXA_CLASSES);
  outbuf o = {.fd = fd};
  const char *sep = "";
  out_printf(&o, "{");
#define TXA_JSON_(name, doc)                                                                       \
  out_printf(&o, "%s\"%s\": %llu", sep, #name, (unsigned long long)s.name);                        \
  sep = ", ";
  TXALLOC_STATS_COUNTERS(TXA_JSON_)
  TXALLOC_STATS_GAUGES(TXA_JSON_)
#undef TXA_JSON_
  out_printf(&o, ", \"classes\": [");
  sep = "";
  for (unsigned c = 0; c < classes; c++) {
    if (!cls[c].allocs && !cls[c].frees) continue;
    out_printf(&o, "%s{\"size\": %llu, \"allocs\": %llu, \"frees\": %llu, \"remote_frees\": %llu}",
               sep, (unsigned long long)cls[c].size, (unsigned long long)cls[c].allocs,
               (unsigned long long)cls[c].frees, (unsigned long long)cls[c].remote_frees);
    sep = ", ";
  }
  out_printf(&o, "]}");
  out_flush(&o);
}

TXALLOC_API void txalloc_stats_print(int fd) {
  txalloc_stats s;
  txalloc_stats_get(&s);
  txalloc_class_stats cls[TXA_CLASSES];
  size_t classes = txalloc_class_stats_get(cls, TXA_CLASSES);
  outbuf o = {.fd = fd};
  out_printf(&o, "txalloc statistics (pid %d)\n", (int)getpid());
#define TXA_TEXT_(name, doc)                                                                       \
  out_printf(&o, "  %-22s %16llu  %s\n", #name, (unsigned long long)s.name, doc);
  TXALLOC_STATS_COUNTERS(TXA_TEXT_)
  TXALLOC_STATS_GAUGES(TXA_TEXT_)
#undef TXA_TEXT_
  out_printf(&o, "  %8s %14s %14s %14s\n", "class", "allocs", "frees", "remote_frees");
  for (unsigned c = 0; c < classes; c++) {
    if (!cls[c].allocs && !cls[c].frees) continue;
    out_printf(&o, "  %8llu %14llu %14llu %14llu\n", (unsigned long long)cls[c].size,
               (unsigned long long)cls[c].allocs, (unsigned long long)cls[c].frees,
               (unsigned long long)cls[c].remote_frees);
  }
  out_flush(&o);
}

/* TXALLOC_STATS=1: statistics to stderr when the process exits (also when preloaded). */
__attribute__((destructor)) static void stats_at_exit(void) {
  if (!txalloc_opt(TXALLOC_OPT_STATS)) return;
  bool initialised = __atomic_load_n(&txa_init_state, __ATOMIC_ACQUIRE) == TXA_INIT_DONE;
  txalloc_stats_print(initialised && txa_g.stats_fd >= 0 ? txa_g.stats_fd : STDERR_FILENO);
}
