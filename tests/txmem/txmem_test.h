/* Shared helpers of the txmem tests: the strategy under test, a live-bytes probe of the
 * allocator under it, and a miniature TM that drives the hook contract the way an STM does:
 *   - write transactions are serialised by a global version clock (odd = a writer runs);
 *     they write shared words in place and keep an undo log per nesting level, so a child
 *     abort restores exactly the child's writes;
 *   - read transactions are optimistic (invisible): they remember the clock at begin and
 *     validate after every shared read, before using the value (TinySTM's rule: never
 *     dereference a pointer read from an uncommitted write). A reader that finds the clock
 *     moved is doomed; what it reads before it notices is exactly what safe reuse guards.
 * txmem_tx_commit(1) is called after the commit is visible, as the contract requires. */
#ifndef TXALLOC_TESTS_TXMEM_TEST_H
#define TXALLOC_TESTS_TXMEM_TEST_H

#include <malloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "set_option.h"
#include "txalloc/txalloc.h"
#include "txalloc/txmem.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TXMEM_TEST_SANITIZED 1
#else
#define TXMEM_TEST_SANITIZED 0
#endif

/* Bytes live in the allocator the strategy uses, or -1 when it cannot be measured (the
 * process malloc of a sanitizer build: there ASan/LSan check leaks and double frees). */
static inline long long txmem_test_live_bytes(void) {
  if (txmem_get_strategy() == TXMEM_TXALLOC) {
    txalloc_stats s;
    txalloc_stats_get(&s);
    return (long long)s.live_bytes;
  }
#if TXMEM_TEST_SANITIZED
  return -1;
#else
  return (long long)mallinfo2().uordblks;
#endif
}

/* ---- The miniature TM ---- */
static _Atomic uint64_t mtm_clock;

typedef struct mtm_write {
  void *_Atomic *addr;
  void *old;
} mtm_write;

#define MTM_MAX_WRITES 4096
#define MTM_MAX_DEPTH 16
typedef struct mtm_tx {
  uint64_t start; /* clock at begin (readers); the odd clock value held (writers) */
  unsigned depth;
  bool writer;
  size_t nwrites;
  size_t level_start[MTM_MAX_DEPTH + 1];
  mtm_write writes[MTM_MAX_WRITES];
} mtm_tx;

static inline void mtm_begin_write(mtm_tx *tx) {
  for (;;) {
    uint64_t c = atomic_load(&mtm_clock);
    if (!(c & 1) && atomic_compare_exchange_weak(&mtm_clock, &c, c + 1)) {
      tx->start = c + 1;
      break;
    }
    sched_yield();
  }
  tx->writer = true;
  tx->depth = 1;
  tx->nwrites = 0;
  tx->level_start[1] = 0;
  txmem_tx_begin(1);
}

static inline void mtm_begin_read(mtm_tx *tx) {
  uint64_t c;
  while ((c = atomic_load(&mtm_clock)) & 1) sched_yield();
  tx->start = c;
  tx->writer = false;
  tx->depth = 1;
  txmem_tx_begin(1);
}

/* Readers: the clock still equals the begin value (nothing committed or running since). */
static inline bool mtm_valid(const mtm_tx *tx) { return atomic_load(&mtm_clock) == tx->start; }

static inline void *mtm_read_ptr(void *_Atomic *addr) {
  return atomic_load_explicit(addr, memory_order_acquire);
}

static inline void mtm_write_ptr(mtm_tx *tx, void *_Atomic *addr, void *value) {
  if (tx->nwrites == MTM_MAX_WRITES) abort();
  tx->writes[tx->nwrites++] = (mtm_write){addr, atomic_load_explicit(addr, memory_order_relaxed)};
  atomic_store_explicit(addr, value, memory_order_release);
}

static inline void mtm_child_begin(mtm_tx *tx) {
  tx->depth++;
  tx->level_start[tx->depth] = tx->nwrites;
  txmem_tx_begin(tx->depth);
}

static inline void mtm_child_commit(mtm_tx *tx) { txmem_tx_commit(tx->depth--); }

static inline void mtm_child_abort(mtm_tx *tx) {
  while (tx->nwrites > tx->level_start[tx->depth]) {
    mtm_write *w = &tx->writes[--tx->nwrites];
    atomic_store_explicit(w->addr, w->old, memory_order_release);
  }
  txmem_tx_abort(tx->depth--);
}

static inline void mtm_commit(mtm_tx *tx) {
  if (tx->writer) atomic_store(&mtm_clock, tx->start + 1); /* the commit point */
  tx->depth = 0;
  txmem_tx_commit(1);
}

static inline void mtm_abort(mtm_tx *tx) {
  if (tx->writer) {
    while (tx->nwrites) {
      mtm_write *w = &tx->writes[--tx->nwrites];
      atomic_store_explicit(w->addr, w->old, memory_order_release);
    }
    txmem_tx_abort(1);
    atomic_store(&mtm_clock, tx->start + 1);
  } else {
    txmem_tx_abort(1);
  }
  tx->depth = 0;
}

/* An object's words from its tag, and whether they are still there. */
static inline void txmem_test_fill(void *p, size_t size, uint64_t tag) {
  uint64_t *w = (uint64_t *)p;
  for (size_t i = 0; i < size / 8; i++) w[i] = tag * 0x9E3779B97F4A7C15ull + i;
}
static inline bool txmem_test_intact(const void *p, size_t size, uint64_t tag) {
  const uint64_t *w = (const uint64_t *)p;
  for (size_t i = 0; i < size / 8; i++)
    if (w[i] != tag * 0x9E3779B97F4A7C15ull + i) return false;
  return true;
}

/* Deterministic per-thread random numbers. */
static inline uint64_t txmem_test_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#endif
