/* The allocation profile by region (txmem.h): a known sequence of calls lands in the right
 * region and size bucket, with exact counts.
 *   seq  the main thread allocates one object at each bucket's edges (and a calloc) before
 *        any parallel region opens, and frees them after it closed;
 *   par  inside txmem_parallel_begin/end, TX_WORKERS threads allocate and free outside
 *        transactions (txmem_free and txmem_retire), and one more thread does only that
 *        (never set up by a transaction: its first call must register it);
 *   tx   the workers' transactions: committed ones that allocate and free, an aborted one
 *        (its call counts), a nested level's calloc, a free of an object allocated outside.
 * The counts are read after the threads exited, so they are exact. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "txmem_test.h"

#define TX_WORKERS 3
#define OUTSIDE 5    /* per worker: allocations of 48 bytes outside transactions */
#define COMMITTED 10 /* per worker: transactions allocating 24 and 2000 bytes, freeing the 24 */
#define PLAIN_ONLY 7 /* the plain-only thread: allocations of 300 bytes */

static _Atomic int worker_failures;

static void *tx_worker(void *arg) {
  (void)arg;
  void *out[OUTSIDE], *kept[COMMITTED];
  for (int i = 0; i < OUTSIDE; i++) out[i] = txmem_malloc(48);
  for (int i = 0; i < OUTSIDE - 1; i++) txmem_free(out[i]);
  txmem_retire(out[OUTSIDE - 1]);
  for (int i = 0; i < COMMITTED; i++) {
    txmem_tx_begin(1);
    void *p = txmem_malloc(24);
    kept[i] = txmem_malloc(2000);
    txmem_free(p);
    txmem_tx_commit(1);
  }
  txmem_tx_begin(1); /* an aborted attempt: its allocation was a call all the same */
  if (!txmem_malloc(8)) atomic_fetch_add(&worker_failures, 1); /* CHECK is not thread-safe */
  txmem_tx_abort(1);
  txmem_tx_begin(1);
  txmem_tx_begin(2);
  void *nested = txmem_calloc(4, 25);
  txmem_tx_commit(2);
  txmem_tx_commit(1);
  void *published = txmem_malloc(5000);
  txmem_tx_begin(1);
  txmem_free(published);
  txmem_tx_commit(1);
  for (int i = 0; i < COMMITTED; i++) txmem_free(kept[i]);
  txmem_free(nested);
  return NULL;
}

static void *plain_worker(void *arg) {
  (void)arg;
  void *p[PLAIN_ONLY];
  for (int i = 0; i < PLAIN_ONLY; i++) p[i] = txmem_malloc(300);
  for (int i = 0; i < PLAIN_ONLY; i++) txmem_free(p[i]);
  return NULL;
}

static void check_region(const txmem_profile *p, txmem_region r, uint64_t mallocs, uint64_t frees,
                         uint64_t bytes, const uint64_t sizes[TXMEM_PROFILE_BUCKETS]) {
  const txmem_region_profile *g = &p->region[r];
  const char *name = txmem_region_name(r);
  CHECKF(g->mallocs == mallocs, "%s mallocs %llu, expected %llu", name,
         (unsigned long long)g->mallocs, (unsigned long long)mallocs);
  CHECKF(g->frees == frees, "%s frees %llu, expected %llu", name, (unsigned long long)g->frees,
         (unsigned long long)frees);
  CHECKF(g->bytes == bytes, "%s bytes %llu, expected %llu", name, (unsigned long long)g->bytes,
         (unsigned long long)bytes);
  for (int b = 0; b < TXMEM_PROFILE_BUCKETS; b++)
    CHECKF(g->sizes[b] == sizes[b], "%s bucket %d: %llu, expected %llu", name, b,
           (unsigned long long)g->sizes[b], (unsigned long long)sizes[b]);
}

/* Parallel regions nest, and an end without a begin is ignored. */
static void check_marks(void) {
  txmem_profile before, after;
  txmem_profile_get(&before);
  txmem_parallel_begin();
  txmem_parallel_begin();
  txmem_parallel_end();
  txmem_free(txmem_malloc(1)); /* one region still open: par */
  txmem_parallel_end();
  txmem_parallel_end();        /* ignored */
  txmem_free(txmem_malloc(1)); /* seq */
  txmem_profile_get(&after);
  for (int r = TXMEM_REGION_SEQ; r <= TXMEM_REGION_PAR; r++) {
    CHECK(after.region[r].mallocs == before.region[r].mallocs + 1);
    CHECK(after.region[r].frees == before.region[r].frees + 1);
    CHECK(after.region[r].sizes[0] == before.region[r].sizes[0] + 1);
  }
}

int main(void) {
  static const size_t limits[TXMEM_PROFILE_BUCKETS] = {16, 32, 64, 128, 256, 1024, 4096, SIZE_MAX};
  for (unsigned b = 0; b < TXMEM_PROFILE_BUCKETS; b++)
    CHECK(txmem_profile_bucket_limit(b) == limits[b]);

  /* seq: each bucket's smallest and largest request (the last bucket's smallest only) */
  static const size_t seq_sizes[] = {1,   16,  17,  32,   33,   64,   65,  128,
                                     129, 256, 257, 1024, 1025, 4096, 4097};
  enum { SEQ_N = sizeof seq_sizes / sizeof seq_sizes[0] };
  void *seq[SEQ_N + 1];
  uint64_t seq_bytes = 0;
  for (int i = 0; i < SEQ_N; i++) {
    seq[i] = txmem_malloc(seq_sizes[i]);
    seq_bytes += seq_sizes[i];
  }
  seq[SEQ_N] = txmem_calloc(3, 100);
  seq_bytes += 300;

  txmem_parallel_begin();
  pthread_t tids[TX_WORKERS + 1];
  for (int i = 0; i < TX_WORKERS; i++) pthread_create(&tids[i], NULL, tx_worker, NULL);
  pthread_create(&tids[TX_WORKERS], NULL, plain_worker, NULL);
  for (int i = 0; i <= TX_WORKERS; i++) pthread_join(tids[i], NULL);
  CHECK(atomic_load(&worker_failures) == 0);
  txmem_parallel_end();
  for (int i = 0; i <= SEQ_N; i++) txmem_free(seq[i]);

  txmem_profile p;
  txmem_profile_get(&p);
  const uint64_t seq_buckets[] = {2, 2, 2, 2, 2, 3, 2, 1};
  check_region(&p, TXMEM_REGION_SEQ, SEQ_N + 1, SEQ_N + 1, seq_bytes, seq_buckets);
  const uint64_t w = TX_WORKERS;
  const uint64_t par_buckets[] = {0, 0, OUTSIDE * w, 0, 0, PLAIN_ONLY, 0, w};
  check_region(&p, TXMEM_REGION_PAR, (OUTSIDE + 1) * w + PLAIN_ONLY,
               (OUTSIDE + COMMITTED + 1) * w + PLAIN_ONLY,
               (48 * OUTSIDE + 5000) * w + 300 * PLAIN_ONLY, par_buckets);
  const uint64_t tx_buckets[] = {w, COMMITTED * w, 0, w, 0, 0, COMMITTED * w, 0};
  check_region(&p, TXMEM_REGION_TX, (2 * COMMITTED + 2) * w, (COMMITTED + 1) * w,
               ((24 + 2000) * COMMITTED + 8 + 100) * w, tx_buckets);

  check_marks();
  return check_exit();
}
