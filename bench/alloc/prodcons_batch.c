/* prodcons-batch: producer/consumer with batches, the pattern of a pipeline stage that
 * builds work items in bulk for another stage (as in mimalloc-bench's xmalloc and the
 * "batch" variants of producer/consumer allocator tests; our own implementation).
 * With T threads, ceil(T/2) producers each build `batches` batches of `batch` objects of
 * random size in [min, max] (the batch's pointer array is malloc'd too) and push them onto
 * one shared bounded queue; floor(T/2) consumers pop whole batches, check and free every
 * object and the array. Every object is freed by a thread other than its allocator; with
 * one thread, it alternates producing and consuming. */
#include <pthread.h>
#include <stdlib.h>

#include "workload.h"

static long threads = 2, batches = 40000, batch = 100, depth = 16, min_size = 8, max_size = 512,
            seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads: ceil(T/2) producers, floor(T/2) consumers"},
    {"batches", &batches, 1, 1L << 40, "batches each producer builds"},
    {"batch", &batch, 1, 1L << 20, "objects per batch"},
    {"depth", &depth, 1, 1L << 20, "capacity of the shared queue, in batches"},
    {"min", &min_size, 1, 1L << 24, "smallest object size in bytes"},
    {"max", &max_size, 1, 1L << 24, "largest object size in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "prodcons-batch",
    "Batch producer/consumer: producers malloc batches of objects and pass whole batches\n"
    "through a shared bounded queue to consumers, which free them.",
    "batches", options, sizeof options / sizeof options[0]};

typedef struct batch_of {
  uint64_t stream, first; /* object k has tag wl_tag(stream, first + k) */
  long count;
  void **objects;
  uint32_t *sizes;
} batch_of;

/* The shared queue: a ring of `depth` batches under one mutex. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static batch_of *ring;
static long ring_head, ring_count;
static long producers, consumers, producers_done;
static uint64_t objects_consumed, batches_consumed;

static batch_of make_batch(bench_rng *rng, uint64_t stream, uint64_t first) {
  batch_of b = {stream, first, batch, wl_malloc((size_t)batch * sizeof(void *)),
                wl_malloc((size_t)batch * sizeof(uint32_t))};
  for (long k = 0; k < batch; k++) {
    b.sizes[k] = (uint32_t)wl_size_between(rng, min_size, max_size);
    b.objects[k] = wl_malloc(b.sizes[k]);
    wl_stamp(b.objects[k], b.sizes[k], wl_tag(stream, first + (uint64_t)k));
  }
  return b;
}

static void free_batch(batch_of *b) {
  for (long k = 0; k < b->count; k++) {
    wl_check("object from the producer", b->objects[k], b->sizes[k],
             wl_tag(b->stream, b->first + (uint64_t)k));
    free(b->objects[k]);
  }
  free(b->objects);
  free(b->sizes);
}

static void push(batch_of b) {
  pthread_mutex_lock(&lock);
  while (ring_count == depth) pthread_cond_wait(&not_full, &lock);
  ring[(ring_head + ring_count) % depth] = b;
  ring_count++;
  pthread_cond_signal(&not_empty);
  pthread_mutex_unlock(&lock);
}

/* Pops a batch; false once the queue is empty and every producer has finished. */
static bool pop(batch_of *b) {
  pthread_mutex_lock(&lock);
  while (ring_count == 0 && producers_done < producers) pthread_cond_wait(&not_empty, &lock);
  bool got = ring_count > 0;
  if (got) {
    *b = ring[ring_head];
    ring_head = (ring_head + 1) % depth;
    ring_count--;
    pthread_cond_signal(&not_full);
  }
  pthread_mutex_unlock(&lock);
  return got;
}

static void account(long objects) {
  pthread_mutex_lock(&lock);
  objects_consumed += (uint64_t)objects;
  batches_consumed++;
  pthread_mutex_unlock(&lock);
}

static void producer(int index) {
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  for (long i = 0; i < batches; i++)
    push(make_batch(&rng, (uint64_t)index + 1, (uint64_t)i * (uint64_t)batch));
  pthread_mutex_lock(&lock);
  producers_done++;
  pthread_cond_broadcast(&not_empty); /* consumers waiting on an empty queue may finish */
  pthread_mutex_unlock(&lock);
}

static void consumer(void) {
  batch_of b;
  while (pop(&b)) {
    long n = b.count;
    free_batch(&b);
    account(n);
  }
}

static void worker(int index, void *arg) {
  (void)arg;
  if (threads == 1) { /* both roles in turn */
    bench_rng rng;
    bench_rng_seed(&rng, (uint64_t)seed, 0);
    for (long i = 0; i < batches; i++) {
      batch_of b = make_batch(&rng, 1, (uint64_t)i * (uint64_t)batch);
      free_batch(&b);
      account(b.count);
    }
  } else if (index < producers) {
    producer(index);
  } else {
    consumer();
  }
}

static void extra(bench_json *j, void *ctx) {
  (void)ctx;
  bench_json_int(j, "producers", producers);
  bench_json_int(j, "consumers", consumers);
  bench_json_uint(j, "batches_passed", batches_consumed);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  producers = threads == 1 ? 1 : (threads + 1) / 2;
  consumers = threads == 1 ? 1 : threads / 2;
  ring = wl_malloc((size_t)depth * sizeof *ring);
  double time_s = wl_run_threads(&program, worker, NULL);
  free(ring);
  uint64_t expected = (uint64_t)producers * (uint64_t)batches * (uint64_t)batch;
  bool valid = objects_consumed == expected && ring_count == 0;
  /* ops: objects passed (one malloc and one free each) */
  return wl_report(&program, time_s, objects_consumed, extra, NULL, valid);
}
