/* mstress: mixed lifetimes and sizes, realloc included (after the spirit of Leijen's
 * mstress in mimalloc-bench; our own design). Each thread owns `slots` slots; `longlived`
 * percent of them hold long-lived objects allocated at the start and kept to the end,
 * growing by realloc now and then like vectors that accumulate data. Each step picks a
 * random short-lived slot: an empty one gets a new object, a full one is freed (60 %) or
 * realloc'd to a new size (40 %). Sizes: 85 % in [8, 128], 14 % in (128, 4096], 1 % in
 * (4 KiB, 128 KiB]. Every `transfer` steps the thread swaps an eighth of its short-lived
 * slots with a shared exchange area, so objects move to other threads and are freed or
 * realloc'd there, with lifetimes that span threads.
 * Objects are stamped after malloc/realloc; realloc checks the kept prefix and frees check
 * the whole object. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

static long threads = 2, steps = 2000000, slots = 2000, longlived = 10, transfer = 5000, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads, each doing the same work"},
    {"steps", &steps, 1, 1L << 40, "malloc/free/realloc steps per thread"},
    {"slots", &slots, 16, 1L << 24, "object slots per thread"},
    {"longlived", &longlived, 0, 90, "percent of slots that hold long-lived objects"},
    {"transfer", &transfer, 1, 1L << 30, "steps between swaps with the shared exchange area"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "mstress",
    "Mixed lifetimes and sizes with realloc: long-lived growing objects, short-lived churn\n"
    "(malloc / free / realloc, sizes 8 B .. 128 KiB), and objects swapped between threads.",
    "steps", options, sizeof options / sizeof options[0]};

typedef struct thread_totals {
  WL_OWN_LINE uint64_t mallocs, frees, reallocs, swapped;
} thread_totals;

static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static wl_slot *exchange; /* threads * (slots / 8) entries, empty or full */
static long exchange_size;

static size_t random_size(bench_rng *rng) {
  uint64_t r = bench_rng_below(rng, 100);
  if (r < 85) return 8 + bench_rng_below(rng, 121);
  if (r < 99) return 129 + bench_rng_below(rng, 4096 - 128);
  return 4097 + bench_rng_below(rng, 128 * 1024 - 4096);
}

/* Swaps `count` random slots of the thread's `n` with random entries of the exchange. */
static void swap_with_exchange(bench_rng *rng, wl_slot *mine, long n, long count) {
  pthread_mutex_lock(&exchange_lock);
  for (long k = 0; k < count; k++) {
    wl_slot *a = &mine[bench_rng_below(rng, (uint64_t)n)];
    wl_slot *b = &exchange[bench_rng_below(rng, (uint64_t)exchange_size)];
    wl_slot t = *a;
    *a = *b;
    *b = t;
  }
  pthread_mutex_unlock(&exchange_lock);
}

static void worker(int index, void *arg) {
  thread_totals *totals = &((thread_totals *)arg)[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  uint64_t stream = (uint64_t)index + 1, counter = 0;
  long nlong = slots * longlived / 100, nshort = slots - nlong;
  wl_slot *lived = wl_calloc((size_t)nlong, sizeof *lived);
  wl_slot *churn = wl_calloc((size_t)nshort, sizeof *churn);
  for (long i = 0; i < nlong; i++)
    wl_slot_fill(&lived[i], random_size(&rng), wl_tag(stream, counter++));
  for (long i = 0; i < steps; i++) {
    wl_slot *s = &churn[bench_rng_below(&rng, (uint64_t)nshort)];
    if (!s->object) {
      wl_slot_fill(s, random_size(&rng), wl_tag(stream, counter++));
      totals->mallocs++;
    } else if (bench_rng_below(&rng, 100) < 60) {
      wl_slot_release(s);
      totals->frees++;
    } else {
      wl_slot_resize(s, random_size(&rng), wl_tag(stream, counter++));
      totals->reallocs++;
    }
    if (nlong && (i & 1023) == 1023) { /* a long-lived object grows, up to 256 KiB */
      wl_slot *l = &lived[bench_rng_below(&rng, (uint64_t)nlong)];
      size_t grown = l->size + l->size / 2 + 16;
      if (grown > 256 * 1024) {
        wl_slot_release(l);
        wl_slot_fill(l, random_size(&rng), wl_tag(stream, counter++));
      } else {
        wl_slot_resize(l, grown, wl_tag(stream, counter++));
      }
      totals->reallocs++;
    }
    if (i % transfer == transfer - 1) {
      swap_with_exchange(&rng, churn, nshort, nshort / 8 ? nshort / 8 : 1);
      totals->swapped++;
    }
  }
  for (long i = 0; i < nshort; i++)
    if (churn[i].object) wl_slot_release(&churn[i]);
  for (long i = 0; i < nlong; i++) wl_slot_release(&lived[i]);
  free(churn);
  free(lived);
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "mallocs", sum->mallocs);
  bench_json_uint(j, "frees", sum->frees);
  bench_json_uint(j, "reallocs", sum->reallocs);
  bench_json_uint(j, "exchanges", sum->swapped);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  exchange_size = threads * (slots / 8);
  exchange = wl_calloc((size_t)exchange_size, sizeof *exchange);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  for (long i = 0; i < exchange_size; i++) /* objects left in the exchange area */
    if (exchange[i].object) wl_slot_release(&exchange[i]);
  free(exchange);
  thread_totals sum = {0, 0, 0, 0};
  for (long t = 0; t < threads; t++) {
    sum.mallocs += totals[t].mallocs;
    sum.frees += totals[t].frees;
    sum.reallocs += totals[t].reallocs;
    sum.swapped += totals[t].swapped;
  }
  free(totals);
  /* ops: steps (each one malloc, free or realloc) */
  return wl_report(&program, time_s, (uint64_t)steps * (uint64_t)threads, extra, &sum, true);
}
