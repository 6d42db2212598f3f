/* fragstress: a fragmentation stress after the character of MicroQuill's sh6bench and
 * sh8bench (our own implementation). Each thread owns an array of `objects` slots and runs
 * `rounds` rounds; round r draws its sizes log-uniformly from a window of [`min`, `max`]
 * that moves from round to round (the low, middle and high third of the range on a log
 * scale, then all of it), so the holes one round leaves are the wrong size for the next:
 *   1. every empty slot gets a new object of window r;
 *   2. `free` percent of the slots, chosen at random, are freed in random order;
 *   3. those slots get new objects of window r+1 (different sizes);
 *   4. `realloc` percent of the slots are realloc'd to a size of window r+2 (grow or
 *      shrink; the kept prefix is checked);
 *   5. all slots but `keep` percent are freed in random order; the kept ones live on into
 *      the next rounds, pinning the pages they sit on among the freed space.
 * Nothing crosses threads: the workload stresses how an allocator reuses scattered free
 * space of mixed sizes (free-list order, coalescing, per-size pages). */
#include <math.h>
#include <stdlib.h>

#include "workload.h"

static long threads = 2, rounds = 400, objects = 4000, min_size = 8, max_size = 4096, free_pct = 50,
            realloc_pct = 25, keep = 10, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads, each doing the same work"},
    {"rounds", &rounds, 1, 1L << 30, "rounds per thread"},
    {"objects", &objects, 2, 1L << 26, "slots per thread"},
    {"min", &min_size, 1, 1L << 24, "smallest object size in bytes"},
    {"max", &max_size, 1, 1L << 24, "largest object size in bytes"},
    {"free", &free_pct, 0, 100, "percent of the slots freed and refilled with other sizes"},
    {"realloc", &realloc_pct, 0, 100, "percent of the slots realloc'd to another size"},
    {"keep", &keep, 0, 100, "percent of the slots that survive a round"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "fragstress",
    "Fragmentation stress (sh6bench/sh8bench character): arrays of objects of sizes from a\n"
    "window that moves every round, freed in random order, refilled and realloc'd with other\n"
    "sizes; a few survivors per round pin the freed space.",
    "rounds", options, sizeof options / sizeof options[0]};

typedef struct thread_totals {
  WL_OWN_LINE uint64_t mallocs, frees, reallocs;
} thread_totals;

typedef struct worker_state {
  bench_rng rng;
  uint64_t stream, counter;
  wl_slot *slots;
  long *order; /* a permutation of the slots, reshuffled for each pass */
  thread_totals *t;
} worker_state;

/* Window w of four: the w-th third of [min, max] on a log scale, or (w == 3) all of it. */
static size_t window_size(bench_rng *rng, long window) {
  long w = window % 4;
  if (w == 3 || min_size == max_size) return wl_size_log_uniform(rng, min_size, max_size);
  double span = log((double)max_size / (double)min_size) / 3.0;
  long lo = (long)((double)min_size * exp(span * (double)w));
  long hi = (long)((double)min_size * exp(span * (double)(w + 1)));
  if (lo < min_size) lo = min_size;
  if (hi > max_size) hi = max_size;
  if (hi < lo) hi = lo;
  return wl_size_log_uniform(rng, lo, hi);
}

static void shuffle(worker_state *s) {
  for (long i = objects - 1; i > 0; i--) {
    long j = (long)bench_rng_below(&s->rng, (uint64_t)i + 1);
    long x = s->order[i];
    s->order[i] = s->order[j];
    s->order[j] = x;
  }
}

static void fill(worker_state *s, wl_slot *o, long window) {
  size_t size = window_size(&s->rng, window);
  wl_slot_fill(o, size, wl_tag(s->stream, s->counter++));
  s->t->mallocs++;
}

static void release(worker_state *s, wl_slot *o) {
  wl_slot_release(o);
  s->t->frees++;
}

static void resize(worker_state *s, wl_slot *o, long window) {
  size_t size = window_size(&s->rng, window);
  wl_slot_resize(o, size, wl_tag(s->stream, s->counter++));
  s->t->reallocs++;
}

/* How many slots `percent` percent of them is; the passes take that many from the front
 * of a fresh random order. */
static long pick_count(long percent) { return objects * percent / 100; }

static void round_of(worker_state *s, long r) {
  for (long i = 0; i < objects; i++)
    if (!s->slots[i].object) fill(s, &s->slots[i], r);
  shuffle(s);
  long n = pick_count(free_pct);
  for (long k = 0; k < n; k++) release(s, &s->slots[s->order[k]]);
  for (long k = 0; k < n; k++) fill(s, &s->slots[s->order[k]], r + 1);
  shuffle(s);
  n = pick_count(realloc_pct);
  for (long k = 0; k < n; k++) resize(s, &s->slots[s->order[k]], r + 2);
  shuffle(s);
  n = objects - pick_count(keep);
  for (long k = 0; k < n; k++) release(s, &s->slots[s->order[k]]);
}

static void worker(int index, void *arg) {
  worker_state s = {.stream = (uint64_t)index + 1, .t = &((thread_totals *)arg)[index]};
  bench_rng_seed(&s.rng, (uint64_t)seed, (uint64_t)index);
  s.slots = wl_calloc((size_t)objects, sizeof *s.slots);
  s.order = wl_malloc((size_t)objects * sizeof *s.order);
  for (long i = 0; i < objects; i++) s.order[i] = i;
  for (long r = 0; r < rounds; r++) round_of(&s, r);
  for (long i = 0; i < objects; i++)
    if (s.slots[i].object) release(&s, &s.slots[i]);
  free(s.order);
  free(s.slots);
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "mallocs", sum->mallocs);
  bench_json_uint(j, "frees", sum->frees);
  bench_json_uint(j, "reallocs", sum->reallocs);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  thread_totals sum = {0};
  for (long i = 0; i < threads; i++) {
    sum.mallocs += totals[i].mallocs, sum.frees += totals[i].frees;
    sum.reallocs += totals[i].reallocs;
  }
  free(totals);
  bool valid = sum.mallocs == sum.frees;
  /* ops: mallocs + frees + reallocs */
  return wl_report(&program, time_s, sum.mallocs + sum.frees + sum.reallocs, extra, &sum, valid);
}
