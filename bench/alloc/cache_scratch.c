/* cache-scratch (Hoard suite, Berger et al. ASPLOS 2000): passive false sharing. The main
 * thread mallocs one small object per thread — neighbours, likely on one cache line — and
 * hands object i to thread i, which frees it first. Then each thread repeatedly mallocs an
 * object, writes it `repetitions` times and frees it. An allocator that reuses the freed
 * neighbour for the thread that freed it keeps the threads on one line (passive false
 * sharing); one that returns frees to their owner's heap does not.
 * The run is cache_false_sharing.c's, with the passive start. */
#include "cache_false_sharing.h"

int main(int argc, char **argv) {
  return cache_false_sharing_main(
      argc, argv, "cache-scratch",
      "Hoard's cache-scratch (passive false sharing): the main thread mallocs one object per\n"
      "thread and gives it away; each thread frees it, then mallocs, writes (repetitions\n"
      "times) and frees an object, iterations times.",
      true);
}
