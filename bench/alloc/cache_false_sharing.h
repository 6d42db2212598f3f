/* Hoard's cache-thrash and cache-scratch (Berger et al. ASPLOS 2000) are one run with one
 * difference: in cache-scratch the main thread first mallocs one small object per thread
 * and each thread frees its object before its loop (passive false sharing: an allocator
 * that reuses that neighbour for the freeing thread keeps the threads on one cache line);
 * cache-thrash has no such start (active false sharing: objects handed to different
 * threads on one line). Each thread then mallocs an object, writes it `repetitions` times
 * and frees it, `iterations` times. */
#ifndef TXALLOC_BENCH_ALLOC_CACHE_FALSE_SHARING_H
#define TXALLOC_BENCH_ALLOC_CACHE_FALSE_SHARING_H

#include <stdbool.h>

/* Parses the options, runs, prints the JSON object; returns the exit status. `name` and
 * `summary` are the program's (wl_program); `passive`: the cache-scratch start. */
int cache_false_sharing_main(int argc, char **argv, const char *name, const char *summary,
                             bool passive);

#endif
