/* 16 threads on (typically) 2 cores drive the hook contract through the miniature TM:
 * write transactions replace, clear and allocate-and-free objects in a shared table of
 * slots, inside nested levels with child aborts and top-level aborts injected at random
 * (publication: objects allocated in one thread's transaction, freed in another's);
 * optimistic read transactions check the contents of every object they reach. An object
 * a reader reached through a validated read must stay intact for the reader's whole
 * transaction (safe reuse), and no object may be lost or released twice: at the end the
 * allocator's live bytes return to their start (txalloc; ASan/LSan check the others). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "txmem_test.h"

#define THREADS 16
#define SLOTS 64

typedef struct obj {
  uint64_t tag;
  uint64_t nwords;
  uint64_t words[];
} obj;

static obj *_Atomic slots[SLOTS];
static _Atomic uint64_t next_tag = 1;
static _Atomic long corrupt, reads_checked, commits, aborts;
static long iterations;

static obj *new_obj(uint64_t *rng) {
  uint64_t n = 1 + txmem_test_rand(rng) % 30;
  obj *o = txmem_malloc(sizeof *o + n * 8);
  o->tag = atomic_fetch_add(&next_tag, 1);
  o->nwords = n;
  for (uint64_t i = 0; i < n; i++) o->words[i] = o->tag ^ (i * 0x9E3779B97F4A7C15ull);
  return o;
}

static bool obj_intact(const obj *o) {
  if (o->nwords < 1 || o->nwords > 30) return false;
  for (uint64_t i = 0; i < o->nwords; i++)
    if (o->words[i] != (o->tag ^ (i * 0x9E3779B97F4A7C15ull))) return false;
  return true;
}

static void write_transaction(mtm_tx *tx, uint64_t *rng) {
  mtm_begin_write(tx);
  int ops = 1 + (int)(txmem_test_rand(rng) % 12);
  for (int op = 0; op < ops; op++) {
    uint64_t x = txmem_test_rand(rng) % 100;
    obj *_Atomic *slot = &slots[txmem_test_rand(rng) % SLOTS];
    if (x < 40) { /* replace */
      obj *old = mtm_read_ptr((void *_Atomic *)slot);
      if (old && !obj_intact(old)) atomic_fetch_add(&corrupt, 1);
      mtm_write_ptr(tx, (void *_Atomic *)slot, new_obj(rng));
      txmem_free(old);
    } else if (x < 50) { /* clear */
      obj *old = mtm_read_ptr((void *_Atomic *)slot);
      mtm_write_ptr(tx, (void *_Atomic *)slot, NULL);
      txmem_free(old);
    } else if (x < 65) { /* balanced temporary */
      obj *t = new_obj(rng);
      if (!obj_intact(t)) atomic_fetch_add(&corrupt, 1);
      txmem_free(t);
    } else if (x < 80 && tx->depth < 4) {
      mtm_child_begin(tx);
    } else if (x < 90 && tx->depth > 1) {
      mtm_child_commit(tx);
    } else if (tx->depth > 1) {
      mtm_child_abort(tx);
    }
  }
  while (tx->depth > 1) mtm_child_commit(tx);
  if (txmem_test_rand(rng) % 5 == 0) {
    mtm_abort(tx);
    atomic_fetch_add(&aborts, 1);
  } else {
    mtm_commit(tx);
    atomic_fetch_add(&commits, 1);
  }
}

static void read_transaction(mtm_tx *tx, uint64_t *rng) {
  mtm_begin_read(tx);
  const obj *held[4];
  int n = 0;
  for (int i = 0; i < 4; i++) {
    const obj *o = mtm_read_ptr((void *_Atomic *)&slots[txmem_test_rand(rng) % SLOTS]);
    if (!mtm_valid(tx)) break; /* doomed: stop before using the value */
    if (o) held[n++] = o;
    sched_yield(); /* let writers free what we hold */
  }
  /* Everything reached through a validated read must still be intact, doomed or not. */
  for (int i = 0; i < n; i++) {
    if (!obj_intact(held[i])) atomic_fetch_add(&corrupt, 1);
    atomic_fetch_add(&reads_checked, 1);
  }
  if (mtm_valid(tx))
    mtm_commit(tx);
  else
    mtm_abort(tx);
}

static void *worker(void *arg) {
  uint64_t index = (uint64_t)(uintptr_t)arg;
  uint64_t rng = index * 1000003 + 17;
  mtm_tx *tx = calloc(1, sizeof *tx);
  for (long i = 0; i < iterations; i++) {
    if (txmem_test_rand(&rng) % 3 == 0)
      read_transaction(tx, &rng);
    else
      write_transaction(tx, &rng);
  }
  free(tx);
  if (index & 1) txmem_thread_exit(); /* the others rely on the thread-exit destructor */
  return NULL;
}

int main(void) {
  iterations = check_scaled(1500, 150);
  fprintf(stderr, "strategy %s, safe_reuse %d, %d threads x %ld transactions\n",
          txmem_strategy_name(txmem_get_strategy()), txmem_safe_reuse(), THREADS, iterations);
  if (!txmem_safe_reuse()) {
    fprintf(stderr, "needs safe_reuse=1 (readers check what they hold)\n");
    return 1;
  }
  long long l0 = txmem_test_live_bytes();
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  fprintf(stderr, "commits %ld, aborts %ld, objects checked by readers %ld\n",
          atomic_load(&commits), atomic_load(&aborts), atomic_load(&reads_checked));
  CHECKF(atomic_load(&corrupt) == 0, "%ld corrupt objects seen", atomic_load(&corrupt));
  CHECK(atomic_load(&reads_checked) > 0);
  for (int i = 0; i < SLOTS; i++) {
    obj *o = atomic_load(&slots[i]);
    if (o) CHECK(obj_intact(o));
    txmem_free(o);
  }
  txmem_flush();
  txmem_stats s;
  txmem_stats_get(&s);
  CHECK(s.limbo_objects == 0 && s.active_transactions == 0);
  CHECK(s.aborted_allocs > 0 && s.speculative_frees > 0);
  if (txmem_get_strategy() == TXMEM_TXALLOC) CHECK(s.balanced_recycles > 0);
  if (txmem_get_strategy() == TXMEM_TXALLOC && l0 >= 0)
    CHECKF(txmem_test_live_bytes() == l0, "live bytes %lld, expected %lld", txmem_test_live_bytes(),
           l0);
  txmem_stats_print_json(2);
  fputc('\n', stderr);
  return check_exit();
}
