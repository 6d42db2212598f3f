/* Counting for the allocation profile by region (include/txalloc/txmem.h): the counters a
 * thread keeps, the region its calls outside transactions fall in, and a request's size
 * bucket. The allocation paths (txmem.c) count with plain increments of the thread's
 * counters; txmem_hot_publish copies them into the thread's record for other readers.
 *
 * Inside transactions only the size buckets are counted here: the region's mallocs, frees
 * and bytes are the hot statistics counters tx_mallocs, tx_frees and speculative_bytes,
 * which the transactional paths already keep. */
#ifndef TXALLOC_TXMEM_PROFILE_H
#define TXALLOC_TXMEM_PROFILE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "txalloc/txmem.h"

typedef struct txmem_profile_counts {
  uint64_t sizes[TXMEM_REGION_COUNT][TXMEM_PROFILE_BUCKETS];
  uint64_t frees[TXMEM_REGION_TX]; /* seq and par */
  uint64_t bytes[TXMEM_REGION_TX];
} txmem_profile_counts;

#define TXMEM_PROFILE_WORDS (sizeof(txmem_profile_counts) / sizeof(uint64_t))

/* Parallel regions open now: txmem_parallel_begin calls minus txmem_parallel_end calls. */
extern __attribute__((visibility("hidden"))) _Atomic unsigned txmem_parallel_open;

/* The region of a call outside transactions (TXMEM_REGION_SEQ or TXMEM_REGION_PAR). */
static inline unsigned txmem_profile_outside(void) {
  return atomic_load_explicit(&txmem_parallel_open, memory_order_relaxed) != 0;
}

/* Bucket by the bit length of size - 1 (at least 4: requests up to 16 bytes share one). */
extern __attribute__((visibility("hidden"))) const uint8_t txmem_profile_bucket_of_bits[65];
static inline unsigned txmem_profile_bucket(size_t size) {
  size_t last = (size - (size != 0)) | 15;
  return txmem_profile_bucket_of_bits[64 - __builtin_clzl(last)];
}

static inline void txmem_profile_count_malloc(txmem_profile_counts *c, unsigned region,
                                              size_t size) {
  c->sizes[region][txmem_profile_bucket(size)]++;
  c->bytes[region] += size;
}

/* A free outside transactions, in its region. */
static inline void txmem_profile_count_free(txmem_profile_counts *c) {
  c->frees[txmem_profile_outside()]++;
}

/* A transactional allocation: its bucket (the rest is in the hot counters). */
static inline void txmem_profile_count_tx_malloc(txmem_profile_counts *c, size_t size) {
  c->sizes[TXMEM_REGION_TX][txmem_profile_bucket(size)]++;
}

/* Copies the thread's counters into its record's (relaxed stores: other threads read them). */
static inline void txmem_profile_publish(const txmem_profile_counts *c, txmem_profile_counts *rec) {
  const uint64_t *from = (const uint64_t *)c;
  uint64_t *to = (uint64_t *)rec;
  for (size_t i = 0; i < TXMEM_PROFILE_WORDS; i++)
    __atomic_store_n(&to[i], from[i], __ATOMIC_RELAXED);
}

/* A thread that starts using a record adds the record's totals (an exited thread's counts) to
 * what it counted before it had one. */
static inline void txmem_profile_adopt(txmem_profile_counts *c, const txmem_profile_counts *rec) {
  uint64_t *to = (uint64_t *)c;
  const uint64_t *from = (const uint64_t *)rec;
  for (size_t i = 0; i < TXMEM_PROFILE_WORDS; i++) to[i] += from[i];
}

#endif
