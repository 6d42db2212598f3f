/* The inner loop of Hoard's cache-scratch and cache-thrash: write every byte of a small
 * object `repetitions` times, as a thread working on its own object would. When the
 * allocator has put objects of different threads on one cache line, these writes make the
 * line bounce between cores (false sharing), which is what the two benchmarks expose. */
#ifndef TXALLOC_BENCH_ALLOC_FALSE_SHARING_H
#define TXALLOC_BENCH_ALLOC_FALSE_SHARING_H

#include <stdbool.h>
#include <stddef.h>

/* volatile: every write must reach the cache line, none may be merged or dropped. */
static inline void fs_write(void *object, size_t size, long repetitions, unsigned salt) {
  volatile unsigned char *p = object;
  for (long r = 0; r < repetitions; r++)
    for (size_t k = 0; k < size; k++) p[k] = (unsigned char)(k + (size_t)r + salt);
}

/* The bytes the last repetition wrote are still there. */
static inline bool fs_check(const void *object, size_t size, long repetitions, unsigned salt) {
  const volatile unsigned char *p = object;
  for (size_t k = 0; k < size; k++)
    if (p[k] != (unsigned char)(k + (size_t)(repetitions - 1) + salt)) return false;
  return true;
}

#endif
