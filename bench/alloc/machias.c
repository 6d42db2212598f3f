/* machias (the Machias benchmark of Hudson et al., "McRT-Malloc", ISMM 2006, §5): rapid
 * malloc/free pairs with a sharing knob. Each object is written immediately after malloc
 * and read (checked) immediately before free, a minimal producer/consumer. Each thread
 * keeps a window of `window` live objects; every new object replaces a random one of
 * them, and the replaced object is freed either by this thread or — with probability
 * sharing % — by a randomly chosen other thread, to which it is sent through that
 * thread's inbox (a lock-free multi-producer stack the owner drains whole). sharing 0:
 * every free is local; 100: every free is done by a random other thread. With one thread
 * sharing means nothing (all frees are local), as the paper notes.
 *
 * Object layout: a header {next, tag, size} (written after malloc; next links the object
 * into an inbox) followed by stamped payload; min size is therefore the header size. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "workload.h"

static long threads = 2, pairs = 3000000, sharing = 50, window = 64, min_size = 24, max_size = 128,
            seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads, each doing the same work"},
    {"pairs", &pairs, 1, 1L << 40, "malloc/free pairs per thread"},
    {"sharing", &sharing, 0, 100, "percent of objects freed by a random other thread"},
    {"window", &window, 1, 1L << 20, "live objects per thread before one is freed"},
    {"min", &min_size, 24, 1L << 24, "smallest object size in bytes (>= 24, the header)"},
    {"max", &max_size, 24, 1L << 24, "largest object size in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "machias",
    "McRT's Machias: malloc then write, read then free, with --sharing percent of the\n"
    "objects freed by a randomly chosen other thread instead of their allocator.",
    "pairs", options, sizeof options / sizeof options[0]};

typedef struct object_header {
  struct object_header *next; /* inbox link while in flight */
  uint64_t tag;
  uint64_t size;
} object_header;

typedef struct inbox {
  _Alignas(64) _Atomic(object_header *) top;
} inbox;

typedef struct thread_totals {
  _Alignas(64) uint64_t local_frees, remote_frees;
} thread_totals;

static inbox *inboxes;
static thread_totals *totals;
static atomic_long producers_done;

static object_header *new_object(bench_rng *rng, uint64_t stream, uint64_t counter) {
  size_t size = wl_size_between(rng, min_size, max_size);
  object_header *h = wl_malloc(size);
  h->next = NULL;
  h->tag = wl_tag(stream, counter);
  h->size = size;
  wl_stamp(h + 1, size - sizeof *h, h->tag); /* write after malloc */
  return h;
}

static void check_and_free(object_header *h) { /* read before free */
  wl_check("object before free", h + 1, h->size - sizeof *h, h->tag);
  free(h);
}

static void send(inbox *to, object_header *h) {
  object_header *top = atomic_load_explicit(&to->top, memory_order_relaxed);
  do h->next = top;
  while (!atomic_compare_exchange_weak_explicit(&to->top, &top, h, memory_order_release,
                                                memory_order_relaxed));
}

/* Frees everything other threads sent to `index`; returns how many. Taking the whole
 * list with one exchange leaves no ABA window. */
static uint64_t drain(int index) {
  object_header *h = atomic_exchange_explicit(&inboxes[index].top, NULL, memory_order_acquire);
  uint64_t n = 0;
  while (h) {
    object_header *next = h->next;
    check_and_free(h);
    h = next;
    n++;
  }
  return n;
}

static void worker(int index, void *arg) {
  (void)arg;
  thread_totals *mine = &totals[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  object_header **live = wl_calloc((size_t)window, sizeof *live);
  for (long i = 0; i < pairs; i++) {
    object_header *h = new_object(&rng, (uint64_t)index + 1, (uint64_t)i);
    object_header **place = &live[bench_rng_below(&rng, (uint64_t)window)];
    object_header *old = *place;
    *place = h;
    if (old) {
      if (threads > 1 && (long)bench_rng_below(&rng, 100) < sharing) {
        long to = (long)bench_rng_below(&rng, (uint64_t)threads - 1);
        send(&inboxes[to >= index ? to + 1 : to], old);
      } else {
        check_and_free(old);
        mine->local_frees++;
      }
    }
    if ((i & 63) == 63) mine->remote_frees += drain(index);
  }
  for (long w = 0; w < window; w++)
    if (live[w]) {
      check_and_free(live[w]);
      mine->local_frees++;
    }
  free(live);
  /* Everything sent to us was sent before its sender counted itself done. */
  atomic_fetch_add_explicit(&producers_done, 1, memory_order_acq_rel);
  while (atomic_load_explicit(&producers_done, memory_order_acquire) < threads) {
    uint64_t n = drain(index);
    mine->remote_frees += n;
    if (!n) sched_yield();
  }
  mine->remote_frees += drain(index);
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "local_frees", sum->local_frees);
  bench_json_uint(j, "remote_frees", sum->remote_frees);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  inboxes = aligned_alloc(64, (size_t)threads * sizeof *inboxes);
  totals = aligned_alloc(64, (size_t)threads * sizeof *totals);
  if (!inboxes || !totals) exit(1);
  for (long t = 0; t < threads; t++) {
    atomic_init(&inboxes[t].top, NULL);
    totals[t].local_frees = totals[t].remote_frees = 0;
  }
  double time_s = wl_run_threads(&program, worker, NULL);
  thread_totals sum = {0, 0};
  for (long t = 0; t < threads; t++) {
    sum.local_frees += totals[t].local_frees;
    sum.remote_frees += totals[t].remote_frees;
  }
  free(inboxes);
  free(totals);
  bool valid = sum.local_frees + sum.remote_frees == (uint64_t)pairs * (uint64_t)threads;
  /* ops: malloc/free pairs */
  return wl_report(&program, time_s, (uint64_t)pairs * (uint64_t)threads, extra, &sum, valid);
}
