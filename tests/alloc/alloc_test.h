/* Helpers shared by the allocator tests (tests/alloc/test_*.c): a deterministic RNG, a
 * content pattern that detects corruption and aliasing, and thread start-up helpers.
 *
 * Worker threads never call CHECK (check.h's counters are not thread-safe): they count
 * problems in an atomic counter that the main thread CHECKs after joining them. */
#ifndef TXALLOC_TESTS_ALLOC_TEST_H
#define TXALLOC_TESTS_ALLOC_TEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txalloc/txalloc.h"

/* splitmix64: deterministic, seedable, good enough to pick sizes and victims. */
typedef struct test_rng {
  uint64_t state;
} test_rng;

static inline uint64_t test_rng_next(test_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static inline uint64_t test_rng_below(test_rng *r, uint64_t n) { return test_rng_next(r) % n; }

/* A size mostly small, sometimes medium, rarely large-ish (<= max), never 0. */
static inline size_t test_rng_size(test_rng *r, size_t max) {
  uint64_t k = test_rng_below(r, 100);
  size_t lim = k < 80 ? 256 : k < 97 ? 4096 : max;
  if (lim > max) lim = max;
  return 1 + (size_t)test_rng_below(r, lim);
}

static inline int test_is_aligned(const void *p, size_t alignment) {
  return ((uintptr_t)p & (alignment - 1)) == 0;
}

/* The pattern byte at offset i of an object tagged `tag`. */
static inline unsigned char test_pattern_byte(uint64_t tag, size_t i) {
  return (unsigned char)((tag * 0x9e3779b1u) >> 24 ^ (uint64_t)i * 131u ^ tag);
}

/* Writes the object's pattern: every byte of small objects; the first and last 256 bytes
 * and every 4 KiB in between for larger ones (cheap, yet catches two objects sharing
 * memory and writes past a neighbour's end). The tag should be unique per live object. */
static inline void test_fill(void *p, size_t n, uint64_t tag) {
  unsigned char *b = (unsigned char *)p;
  if (n <= 1024) {
    for (size_t i = 0; i < n; i++) b[i] = test_pattern_byte(tag, i);
    return;
  }
  for (size_t i = 0; i < 256; i++) b[i] = test_pattern_byte(tag, i);
  for (size_t i = n - 256; i < n; i++) b[i] = test_pattern_byte(tag, i);
  for (size_t i = 4096; i < n - 256; i += 4096) b[i] = test_pattern_byte(tag, i);
}

/* 1 when the object still holds the pattern test_fill wrote, 0 otherwise. */
static inline int test_check(const void *p, size_t n, uint64_t tag) {
  const unsigned char *b = (const unsigned char *)p;
  if (n <= 1024) {
    for (size_t i = 0; i < n; i++)
      if (b[i] != test_pattern_byte(tag, i)) return 0;
    return 1;
  }
  for (size_t i = 0; i < 256; i++)
    if (b[i] != test_pattern_byte(tag, i)) return 0;
  for (size_t i = n - 256; i < n; i++)
    if (b[i] != test_pattern_byte(tag, i)) return 0;
  for (size_t i = 4096; i < n - 256; i += 4096)
    if (b[i] != test_pattern_byte(tag, i)) return 0;
  return 1;
}

/* A live test object: its address, size and the tag of its pattern (test_fill). */
typedef struct test_obj {
  void *p;
  size_t size;
  uint64_t tag;
} test_obj;

/* Checks the pattern of o (a mismatch adds one to *bad), frees it with txalloc_free and
 * empties the slot; an empty slot is left as it is. */
static inline void test_obj_free(test_obj *o, long *bad) {
  if (!o->p) return;
  if (!test_check(o->p, o->size, o->tag)) (*bad)++;
  txalloc_free(o->p);
  *o = (test_obj){0};
}

/* Checks the pattern of o (a mismatch adds one to *bad) and swaps it with slot `e` of a
 * shared exchange under `lock`: returns what was there (an object another thread allocated,
 * or an empty slot), so that objects travel between threads and their frees are remote. */
static inline test_obj test_exchange_swap(pthread_mutex_t *lock, test_obj *exchange, int e,
                                          test_obj o, long *bad) {
  if (!test_check(o.p, o.size, o.tag)) (*bad)++;
  pthread_mutex_lock(lock);
  test_obj other = exchange[e];
  exchange[e] = o;
  pthread_mutex_unlock(lock);
  return other;
}

/* What an error hook saw: the reports since the test last reset `reports`, and the latest
 * kind and pointer. */
typedef struct test_error_log {
  int reports;
  txalloc_error_kind kind;
  const void *ptr;
} test_error_log;

/* A txalloc_error_fn recording into the test_error_log that `arg` points to. */
static inline void test_error_record(txalloc_error_kind kind, const void *ptr, const char *message,
                                     void *arg) {
  (void)message;
  test_error_log *log = (test_error_log *)arg;
  log->reports++;
  log->kind = kind;
  log->ptr = ptr;
}

/* Whether the log holds exactly one report since its last reset, of `kind` about `ptr`;
 * resets it for the next expectation. */
static inline int test_error_one(test_error_log *log, txalloc_error_kind kind, const void *ptr) {
  int one = log->reports == 1 && log->kind == kind && log->ptr == ptr;
  *log = (test_error_log){0};
  return one;
}

/* Starts `n` (<= 64) threads running fn(&args[i * arg_size]) and joins them; exits the
 * test (status 2) if a thread cannot be created. */
static inline void test_run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size) {
  pthread_t t[64];
  if (n < 0 || n > 64) {
    fprintf(stderr, "test_run_threads: %d threads, at most 64\n", n);
    exit(2);
  }
  for (int i = 0; i < n; i++) {
    if (pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * arg_size) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      exit(2);
    }
  }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

#endif
