/* xmalloc (after Lever & Boreham's xmalloc-test, "malloc() performance in a multithreaded
 * Linux environment", USENIX 2000): producer/consumer. Here the T threads form a ring:
 * thread i mallocs objects of random size in [min, max], stamps them and passes each one
 * through a bounded single-producer/single-consumer queue to thread i+1, which checks and
 * frees it. Every thread is both a producer and a consumer, so every free is a remote
 * free (with one thread the ring closes on itself and nothing is shared). */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "workload.h"

static long threads = 2, objects = 2000000, queue = 1024, min_size = 8, max_size = 256, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads in the producer/consumer ring"},
    {"objects", &objects, 1, 1L << 40, "objects each thread produces"},
    {"queue", &queue, 1, 1L << 20, "capacity of each thread's outgoing queue (objects)"},
    {"min", &min_size, 1, 1L << 24, "smallest object size in bytes"},
    {"max", &max_size, 1, 1L << 24, "largest object size in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "xmalloc",
    "xmalloc-style producer/consumer ring: each thread mallocs objects and hands them one by\n"
    "one through a bounded queue to the next thread, which frees them (remote frees).",
    "objects", options, sizeof options / sizeof options[0]};

typedef struct item {
  void *object;
  uint64_t tag;
  size_t size;
} item;

/* Single producer (thread i), single consumer (thread i+1). head and tail only grow; the
 * producer owns tail, the consumer owns head; release/acquire pairs publish the items. */
typedef struct spsc {
  _Alignas(64) atomic_ulong head;
  _Alignas(64) atomic_ulong tail;
  _Alignas(64) item *items;
  unsigned long capacity;
} spsc;

static spsc *queues; /* queues[i]: from thread i to thread (i+1) % threads */

static bool spsc_push(spsc *q, item it) {
  unsigned long tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
  if (tail - atomic_load_explicit(&q->head, memory_order_acquire) == q->capacity) return false;
  q->items[tail % q->capacity] = it;
  atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
  return true;
}

static bool spsc_pop(spsc *q, item *it) {
  unsigned long head = atomic_load_explicit(&q->head, memory_order_relaxed);
  if (atomic_load_explicit(&q->tail, memory_order_acquire) == head) return false;
  *it = q->items[head % q->capacity];
  atomic_store_explicit(&q->head, head + 1, memory_order_release);
  return true;
}

typedef struct worker_state {
  WL_OWN_LINE uint64_t consumed;
} worker_state;

/* Frees what the predecessor sent; returns how many. */
static uint64_t consume(spsc *in) {
  uint64_t n = 0;
  item it;
  while (spsc_pop(in, &it)) {
    wl_check("object from the producer", it.object, it.size, it.tag);
    free(it.object);
    n++;
  }
  return n;
}

static void worker(int index, void *arg) {
  worker_state *states = arg;
  spsc *out = &queues[index];
  spsc *in = &queues[(index + threads - 1) % threads];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  uint64_t consumed = 0;
  for (long i = 0; i < objects; i++) {
    item it = {NULL, wl_tag((uint64_t)index + 1, (uint64_t)i),
               wl_size_between(&rng, min_size, max_size)};
    it.object = wl_malloc(it.size);
    wl_stamp(it.object, it.size, it.tag);
    while (!spsc_push(out, it)) { /* full: make room downstream by doing our own share */
      uint64_t n = consume(in);
      consumed += n;
      if (!n) sched_yield();
    }
    if ((i & 63) == 63) consumed += consume(in);
  }
  /* The predecessor produces exactly `objects`: wait for the rest. */
  while (consumed < (uint64_t)objects) {
    uint64_t n = consume(in);
    consumed += n;
    if (!n) sched_yield();
  }
  states[index].consumed = consumed;
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  queues = aligned_alloc(64, (size_t)threads * sizeof *queues);
  if (!queues) exit(1);
  for (long t = 0; t < threads; t++) {
    atomic_init(&queues[t].head, 0);
    atomic_init(&queues[t].tail, 0);
    queues[t].capacity = (unsigned long)queue;
    queues[t].items = wl_malloc((size_t)queue * sizeof(item));
  }
  double time_s;
  worker_state *states = wl_run_counting(&program, sizeof *states, worker, &time_s);
  bool valid = true;
  for (long t = 0; t < threads; t++) {
    valid &= states[t].consumed == (uint64_t)objects;
    valid &= atomic_load(&queues[t].head) == atomic_load(&queues[t].tail);
    free(queues[t].items);
  }
  free(states);
  free(queues);
  /* ops: objects passed (one malloc and one free each) */
  return wl_report(&program, time_s, (uint64_t)objects * (uint64_t)threads, NULL, NULL, valid);
}
