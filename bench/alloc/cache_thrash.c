/* cache-thrash (Hoard suite, Berger et al. ASPLOS 2000): active false sharing. Each thread
 * repeatedly mallocs a small object, writes it `repetitions` times and frees it. An
 * allocator that hands objects on one cache line to different threads makes their writes
 * fight over the line; one that gives each thread its own memory does not. */
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
static const wl_program program = {
    "cache-thrash",
    "Hoard's cache-thrash (active false sharing): each thread mallocs a small object, writes\n"
    "it repetitions times and frees it, iterations times.",
    "iterations", options, sizeof options / sizeof options[0]};

static void worker(int index, void *arg) {
  (void)arg;
  for (long i = 0; i < iterations; i++) {
    void *object = wl_malloc((size_t)size);
    unsigned salt = (unsigned)(seed + index + i);
    fs_write(object, (size_t)size, repetitions, salt);
    if (!fs_check(object, (size_t)size, repetitions, salt))
      wl_corrupt("object before free", object, salt);
    free(object);
  }
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  double start = bench_now();
  bench_run_threads((int)threads, worker, NULL);
  double time_s = bench_now() - start;
  /* ops: malloc/write/free cycles */
  return wl_report(&program, time_s, (uint64_t)iterations * (uint64_t)threads, NULL, NULL, true);
}
