/* Counters and pressure of the bounded allocator, and their JSON (printed at exit with
 * TXALLOC_STATS=1 once the heap exists). */
#include <stdio.h>
#include <unistd.h>

#include "thrifty/thrifty_internal.h"
#include "util/message.h"
#include "util/options.h"

static _Atomic uint64_t counters[THRIFTY_C_COUNT_];
static _Atomic uint64_t allocated, peak;

void thrifty_count(int counter, uint64_t add) {
  atomic_fetch_add_explicit(&counters[counter], add, memory_order_relaxed);
}

void thrifty_pressure_add(size_t bytes) {
  atomic_fetch_add_explicit(&counters[THRIFTY_C_mallocs], 1, memory_order_relaxed);
  uint64_t now = atomic_fetch_add_explicit(&allocated, bytes, memory_order_relaxed) + bytes;
  uint64_t p = atomic_load_explicit(&peak, memory_order_relaxed);
  while (now > p && !atomic_compare_exchange_weak_explicit(&peak, &p, now, memory_order_relaxed,
                                                           memory_order_relaxed)) {
  }
}

void thrifty_pressure_sub(size_t bytes) {
  atomic_fetch_add_explicit(&counters[THRIFTY_C_frees], 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&allocated, bytes, memory_order_relaxed);
}

void thrifty_stats_reset_peak(void) {
  atomic_store_explicit(&peak, atomic_load_explicit(&allocated, memory_order_relaxed),
                        memory_order_relaxed);
  thrifty_heap_reset_held_peak();
}

void thrifty_stats_get(thrifty_stats *out) {
#define THRIFTY_STATS_COPY_(name, doc)                                                             \
  out->name = atomic_load_explicit(&counters[THRIFTY_C_##name], memory_order_relaxed);
  THRIFTY_STATS_COUNTERS(THRIFTY_STATS_COPY_)
#undef THRIFTY_STATS_COPY_
  out->allocated_bytes = atomic_load_explicit(&allocated, memory_order_relaxed);
  out->allocated_peak = atomic_load_explicit(&peak, memory_order_relaxed);
  out->allocated_objects = out->mallocs >= out->frees ? out->mallocs - out->frees : 0;
  out->heap_bytes = thrifty_heap_size();
  out->heap_free_bytes = thrifty_heap_free_bytes();
  /* The three parts are read at different instants: clamp a momentary excess. */
  uint64_t used = out->heap_free_bytes + out->allocated_bytes;
  out->pool_bytes = out->heap_bytes > used ? out->heap_bytes - used : 0;
  out->held_bytes = out->heap_bytes - out->heap_free_bytes;
  out->held_peak = thrifty_heap_held_peak();
}

void thrifty_stats_print_json(int fd) {
  thrifty_stats s;
  thrifty_stats_get(&s);
  char buf[2048];
  size_t n = 0;
  const char *sep = "{";
#define THRIFTY_STATS_JSON_(name, doc)                                                             \
  if (n < sizeof buf)                                                                              \
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"" #name "\": %llu", sep,                   \
                          (unsigned long long)s.name);                                             \
  sep = ", ";
  THRIFTY_STATS_COUNTERS(THRIFTY_STATS_JSON_)
  THRIFTY_STATS_GAUGES(THRIFTY_STATS_JSON_)
#undef THRIFTY_STATS_JSON_
  if (n < sizeof buf) n += (size_t)snprintf(buf + n, sizeof buf - n, "}");
  if (n > sizeof buf) n = sizeof buf;
  txalloc_write_all(fd, buf, n);
}

__attribute__((destructor)) static void thrifty_stats_at_exit(void) {
  if (thrifty_heap_size() == 0) return; /* never used */
  if (!txalloc_opt(TXALLOC_OPT_STATS)) return;
  static const char prefix[] = "txalloc: thrifty stats: ";
  if (write(2, prefix, sizeof prefix - 1) < 0) return;
  thrifty_stats_print_json(2);
  if (write(2, "\n", 1) < 0) return;
}
