/* larson (Larson & Krishnan, ISMM 1998; as distributed with Hoard): a server simulation.
 * Each of T slots owns an array of `objects` blocks of random sizes in [min, max],
 * allocated up front by the main thread. A slot's thread repeatedly picks a random victim,
 * frees it and puts a new block of random size in its place; after `rounds` x `objects`
 * such steps (one generation) it starts a successor thread, hands it the array and exits.
 * Blocks are therefore freed by threads other than the one that allocated them, including
 * threads that have exited — the pattern of a server whose connections move between
 * worker threads. The original runs for a fixed time; here each slot runs `generations`
 * generations, so the work is fixed and the result is a throughput.
 * Blocks are stamped after malloc and checked before free. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

static long threads = 2, generations = 300, rounds = 10, objects = 1000, min_size = 8,
            max_size = 1000, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "slots, each run by one thread at a time"},
    {"generations", &generations, 1, 1L << 30, "thread hand-offs per slot"},
    {"rounds", &rounds, 1, 1L << 20, "steps per generation, in units of --objects"},
    {"objects", &objects, 1, 1L << 24, "blocks per slot"},
    {"min", &min_size, 1, 1L << 24, "smallest block size in bytes"},
    {"max", &max_size, 1, 1L << 24, "largest block size in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "larson",
    "Larson's server simulation (Hoard suite): each slot replaces random victims in its array\n"
    "of blocks with new blocks of random size in [min, max]; after each generation of\n"
    "rounds x objects steps its thread hands the array to a new thread and exits, so blocks\n"
    "are freed by threads that did not allocate them.",
    "generations", options, sizeof options / sizeof options[0]};

typedef struct block {
  void *object;
  uint32_t size;
  uint64_t tag;
} block;

typedef struct slot {
  WL_OWN_LINE int index; /* its thread writes rng and counter at every step */
  block *blocks;
  bench_rng rng;
  uint64_t counter; /* tags issued */
  long generation;
  uint64_t steps;
} slot;

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static long slots_done;
static pthread_barrier_t start_barrier;

static void new_block(slot *s, block *b) {
  b->size = (uint32_t)wl_size_between(&s->rng, min_size, max_size);
  b->tag = wl_tag((uint64_t)s->index + 1, s->counter++);
  b->object = wl_malloc(b->size);
  wl_stamp(b->object, b->size, b->tag);
}

static void *slot_thread(void *arg);

/* Starts the thread that runs the slot's next generation, detached: nobody joins it; the
 * last generation signals done_cond instead. */
static void start_generation(slot *s) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t tid;
  int rc = pthread_create(&tid, &attr, slot_thread, s);
  pthread_attr_destroy(&attr);
  if (rc) {
    fprintf(stderr, "larson: pthread_create: %s\n", strerror(rc));
    exit(1);
  }
}

static void *slot_thread(void *arg) {
  slot *s = arg;
  if (s->generation == 0) pthread_barrier_wait(&start_barrier);
  uint64_t steps = (uint64_t)rounds * (uint64_t)objects;
  for (uint64_t i = 0; i < steps; i++) {
    block *victim = &s->blocks[bench_rng_below(&s->rng, (uint64_t)objects)];
    wl_check("block before free", victim->object, victim->size, victim->tag);
    free(victim->object);
    new_block(s, victim);
  }
  s->steps += steps;
  if (++s->generation < generations) {
    start_generation(s); /* the successor takes over the array; this thread ends */
  } else {
    pthread_mutex_lock(&done_lock);
    slots_done++;
    pthread_cond_signal(&done_cond);
    pthread_mutex_unlock(&done_lock);
  }
  return NULL;
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  slot *slots = wl_calloc_lines((size_t)threads, sizeof *slots);
  /* Warm-up, as in the original: the main thread allocates every slot's blocks. */
  for (long t = 0; t < threads; t++) {
    slot *s = &slots[t];
    s->index = (int)t;
    bench_rng_seed(&s->rng, (uint64_t)seed, (uint64_t)t);
    s->blocks = wl_malloc((size_t)objects * sizeof *s->blocks);
    for (long i = 0; i < objects; i++) new_block(s, &s->blocks[i]);
  }
  pthread_barrier_init(&start_barrier, NULL, (unsigned)threads + 1);
  for (long t = 0; t < threads; t++) start_generation(&slots[t]);
  pthread_barrier_wait(&start_barrier);
  double start = bench_now();
  pthread_mutex_lock(&done_lock);
  while (slots_done < threads) pthread_cond_wait(&done_cond, &done_lock);
  pthread_mutex_unlock(&done_lock);
  double time_s = bench_now() - start;
  pthread_barrier_destroy(&start_barrier);

  uint64_t steps = 0;
  bool valid = true;
  for (long t = 0; t < threads; t++) {
    slot *s = &slots[t];
    steps += s->steps;
    valid &= s->generation == generations;
    for (long i = 0; i < objects; i++) {
      wl_check("block at end", s->blocks[i].object, s->blocks[i].size, s->blocks[i].tag);
      free(s->blocks[i].object);
    }
    free(s->blocks);
  }
  free(slots);
  /* ops: steps, each one free and one malloc, as larson counts them */
  return wl_report(&program, time_s, steps, NULL, NULL, valid);
}
