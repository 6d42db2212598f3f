/* threadtest (Hoard benchmark suite, Berger et al. ASPLOS 2000): each of T threads runs
 * `rounds` rounds; a round allocates objects/T objects of `size` bytes, then frees them
 * all. No object crosses threads, so the workload measures the raw malloc/free path and
 * its scalability; the total work is fixed, split among the threads, as in Hoard.
 * Each object is stamped after malloc and checked before free. */
#include <stdlib.h>

#include "workload.h"

static long threads = 2, rounds = 800, objects = 30000, size = 8, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "worker threads"},
    {"rounds", &rounds, 1, 1L << 30, "alloc-all/free-all rounds per thread"},
    {"objects", &objects, 1, 1L << 26,
     "objects per round, in total (each thread gets objects/threads)"},
    {"size", &size, 1, 1L << 20, "object size in bytes"},
    {"seed", &seed, 0, 1L << 62, "seed of the object tags"},
};
static const wl_program program = {
    "threadtest",
    "Hoard's threadtest: threads x rounds x objects x size; every round each thread mallocs its\n"
    "share of the objects, then frees them all (alloc-all then free-all, no sharing).",
    "rounds", options, sizeof options / sizeof options[0]};

static void worker(int index, void *arg) {
  (void)arg;
  long mine = objects / threads + (index < objects % threads ? 1 : 0);
  void **slots = wl_malloc((size_t)(mine ? mine : 1) * sizeof *slots);
  uint64_t counter = 0;
  for (long r = 0; r < rounds; r++) {
    uint64_t first = counter;
    for (long i = 0; i < mine; i++) {
      slots[i] = wl_malloc((size_t)size);
      wl_stamp(slots[i], (size_t)size, wl_tag((uint64_t)seed + (uint64_t)index, counter++));
    }
    for (long i = 0; i < mine; i++) {
      wl_check("object before free", slots[i], (size_t)size,
               wl_tag((uint64_t)seed + (uint64_t)index, first + (uint64_t)i));
      free(slots[i]);
    }
  }
  free(slots);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  double time_s = wl_run_threads(&program, worker, NULL);
  /* ops: mallocs plus frees */
  return wl_report(&program, time_s, 2ULL * (uint64_t)rounds * (uint64_t)objects, NULL, NULL, true);
}
