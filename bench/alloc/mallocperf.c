/* mallocperf (the MallocPerf benchmark of the Hoard distribution, as described in Hudson
 * et al., "McRT-Malloc", ISMM 2006, §5): embarrassingly parallel churn. Each thread owns
 * `slots` object slots and performs `ops` operations; each picks a random slot and either
 * mallocs an object of random size in [min, max] into it (when empty) or frees it (when
 * full). No object is shared between threads and there is almost no other work, so the
 * workload measures the thread-local malloc/free path. Every thread does the same work,
 * so T threads do T times the work of one (McRT's normalisation).
 * Objects are stamped after malloc and checked before free. */
#include <stdlib.h>

#include "workload.h"

static long threads = 2, ops = 12000000, slots = 1000, min_size = 8, max_size = 256, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads, each doing the same work"},
    {"ops", &ops, 1, 1L << 40, "malloc-or-free operations per thread"},
    {"slots", &slots, 1, 1L << 24, "object slots per thread (at most this many live)"},
    {"min", &min_size, 1, 1L << 24, "smallest object size in bytes"},
    {"max", &max_size, 1, 1L << 24, "largest object size in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "mallocperf",
    "McRT's MallocPerf (Hoard distribution): each thread randomly mallocs and frees its own\n"
    "objects in a table of slots; no sharing, same work per thread.",
    "ops", options, sizeof options / sizeof options[0]};

typedef struct thread_totals {
  WL_OWN_LINE uint64_t mallocs, frees;
} thread_totals;

static void worker(int index, void *arg) {
  thread_totals *totals = &((thread_totals *)arg)[index];
  wl_slot *table = wl_calloc((size_t)slots, sizeof *table);
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  uint64_t counter = 0;
  for (long i = 0; i < ops; i++) {
    wl_slot *s = &table[bench_rng_below(&rng, (uint64_t)slots)];
    if (s->object) {
      wl_slot_release(s);
      totals->frees++;
    } else {
      size_t size = wl_size_between(&rng, min_size, max_size);
      wl_slot_fill(s, size, wl_tag((uint64_t)index + 1, counter++));
      totals->mallocs++;
    }
  }
  for (long i = 0; i < slots; i++) /* what is left: checked and freed, not counted */
    if (table[i].object) {
      wl_check("object at end", table[i].object, table[i].size, table[i].tag);
      free(table[i].object);
    }
  free(table);
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "mallocs", sum->mallocs);
  bench_json_uint(j, "frees", sum->frees);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  thread_totals sum = {0, 0};
  for (long t = 0; t < threads; t++) {
    sum.mallocs += totals[t].mallocs;
    sum.frees += totals[t].frees;
  }
  free(totals);
  bool valid = sum.mallocs + sum.frees == (uint64_t)ops * (uint64_t)threads;
  /* ops: mallocs plus frees */
  return wl_report(&program, time_s, sum.mallocs + sum.frees, extra, &sum, valid);
}
