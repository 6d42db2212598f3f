/* cache-thrash (Hoard suite, Berger et al. ASPLOS 2000): active false sharing. Each thread
 * repeatedly mallocs a small object, writes it `repetitions` times and frees it. An
 * allocator that hands objects on one cache line to different threads makes their writes
 * fight over the line; one that gives each thread its own memory does not.
 * The run is cache_false_sharing.c's, without cache-scratch's start. */
#include "cache_false_sharing.h"

int main(int argc, char **argv) {
  return cache_false_sharing_main(
      argc, argv, "cache-thrash",
      "Hoard's cache-thrash (active false sharing): each thread mallocs a small object, writes\n"
      "it repetitions times and frees it, iterations times.",
      false);
}
