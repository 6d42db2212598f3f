/* cache_false_sharing.h: the run of cache-thrash and cache-scratch. */
#include "cache_false_sharing.h"

#include <stdlib.h>

#include "false_sharing.h"
#include "workload.h"

static long threads = 2, iterations = 100000, size = 8, repetitions = 1000, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads"},
    {"iterations", &iterations, 1, 1L << 40, "malloc/write/free cycles per thread"},
    {"size", &size, 1, 1L << 20, "object size in bytes"},
    {"repetitions", &repetitions, 1, 1L << 30, "times each object is written in full"},
    {"seed", &seed, 0, 1L << 62, "varies the written values"},
};

/* cache-scratch only: initial[i] is the main thread's object for thread i; NULL otherwise. */
static void **initial;

static void worker(int index, void *arg) {
  (void)arg;
  if (initial) {
    unsigned salt = (unsigned)(seed + index);
    if (!fs_check(initial[index], (size_t)size, 1, salt))
      wl_corrupt("object from the main thread", initial[index], salt);
    free(initial[index]);
  }
  for (long i = 0; i < iterations; i++) {
    void *object = wl_malloc((size_t)size);
    unsigned salt = (unsigned)(seed + index + i);
    fs_write(object, (size_t)size, repetitions, salt);
    if (!fs_check(object, (size_t)size, repetitions, salt))
      wl_corrupt("object before free", object, salt);
    free(object);
  }
}

int cache_false_sharing_main(int argc, char **argv, const char *name, const char *summary,
                             bool passive) {
  const wl_program program = {name, summary, "iterations", options,
                              sizeof options / sizeof options[0]};
  wl_parse(&program, argc, argv);
  if (passive) {
    /* Neighbours, likely on one cache line; object t goes to thread t. */
    initial = wl_malloc((size_t)threads * sizeof *initial);
    for (long t = 0; t < threads; t++) {
      initial[t] = wl_malloc((size_t)size);
      fs_write(initial[t], (size_t)size, 1, (unsigned)(seed + t));
    }
  }
  double time_s = wl_run_threads(&program, worker, NULL);
  free(initial);
  /* ops: malloc/write/free cycles */
  return wl_report(&program, time_s, (uint64_t)iterations * (uint64_t)threads, NULL, NULL, true);
}
