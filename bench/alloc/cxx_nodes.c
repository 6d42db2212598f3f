/* cxx-nodes: a C++ program's allocation pattern, for what operator new and delete cost on
 * each allocator. Each thread, `rounds` times, fills a std::map<int, std::string> with
 * `keys` entries whose strings are 16..79 characters (each owns a heap buffer: no
 * short-string optimisation), reads every entry back, erases the odd keys, inserts them
 * again with new strings, and destroys the map. Every map node and string buffer is one
 * operator new and one operator delete: ops counts those pairs. The work is C++
 * (cxx_nodes_work.cc); this file is the program around it. Single-threaded by default;
 * --threads N runs N independent copies. */
#include <stdlib.h>

#include "workload.h"

uint64_t cxx_nodes_run(long rounds, long keys, uint64_t seed);

static long threads = 1, rounds = 1000, keys = 1000, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "independent copies of the program run in parallel"},
    {"rounds", &rounds, 1, 1L << 30, "times each thread fills and empties its map"},
    {"keys", &keys, 1, 1L << 24, "entries of the map"},
    {"seed", &seed, 0, 1L << 62, "picks the string lengths"},
};
static const wl_program program = {
    "cxx-nodes",
    "std::map<int, std::string> filled, read back, half replaced and destroyed, round after\n"
    "round: every node and string buffer is one C++ operator new/delete pair.",
    "rounds", options, sizeof options / sizeof options[0]};

typedef struct thread_pairs {
  WL_OWN_LINE uint64_t pairs; /* UINT64_MAX: the thread's check failed */
} thread_pairs;

static void worker(int index, void *arg) {
  ((thread_pairs *)arg)[index].pairs = cxx_nodes_run(rounds, keys, (uint64_t)(seed + index));
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  double time_s;
  thread_pairs *pairs = wl_run_counting(&program, sizeof *pairs, worker, &time_s);
  uint64_t total = 0;
  bool valid = true;
  for (long t = 0; t < threads; t++) {
    valid &= pairs[t].pairs != UINT64_MAX;
    if (pairs[t].pairs != UINT64_MAX) total += pairs[t].pairs;
  }
  free(pairs);
  wl_uint_member key_count = {"keys", (uint64_t)keys};
  /* ops: operator new/delete pairs */
  return wl_report(&program, time_s, total, wl_extra_uint, &key_count, valid);
}
