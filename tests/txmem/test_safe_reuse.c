/* Figure 9 of the McRT paper: concurrent deleters and readers of a linked list with reuse.
 *
 * Writers (write transactions of the miniature TM) delete the first node of a short list,
 * free it (inside the transaction with txmem_free, or after it with txmem_retire: the
 * literal Figure 9), and append a newly allocated node, so freed nodes are quickly
 * allocated again. Readers (optimistic transactions) take the first node p, read its id,
 * hold p while the writers commit at least K times (p is then certainly deleted and freed
 * by a committed transaction), and read p's id again: a reader that started before the free
 * is still running, so with safe reuse the memory must be untouched. A changed id means the
 * memory was freed or reused under a running transaction: the hazard that crashes yada.
 *
 * TXALLOC_SAFE_REUSE=1: the hazard must never be seen, and readers must really have held
 * freed nodes (else the test proves nothing). TXALLOC_SAFE_REUSE=0: the hazard must be seen
 * (the detector works). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "txmem_test.h"

#define LIST_LENGTH 4
#define K_COMMITS 8
#define WRITERS 2
#define READERS 2

typedef struct node {
  uint64_t id; /* unique per allocation; first word: a free overwrites it in most allocators */
  struct node *_Atomic next;
  uint64_t payload[6];
} node;

static node head;
static _Atomic uint64_t next_id = 1;
static _Atomic int stop;
static _Atomic long hazards, held_freed, reads_done;
static long reader_rounds;

static node *new_node(void) {
  node *n = txmem_malloc(sizeof *n);
  __atomic_store_n(&n->id, atomic_fetch_add(&next_id, 1), __ATOMIC_RELAXED);
  atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
  for (int i = 0; i < 6; i++) __atomic_store_n(&n->payload[i], 0, __ATOMIC_RELAXED);
  return n;
}

static void *writer(void *arg) {
  uint64_t rng = (uint64_t)(uintptr_t)arg;
  mtm_tx *tx = calloc(1, sizeof *tx);
  while (!atomic_load(&stop)) {
    bool retire_after = txmem_test_rand(&rng) & 1;
    mtm_begin_write(tx);
    node *victim = mtm_read_ptr((void *_Atomic *)&head.next);
    if (victim) {
      mtm_write_ptr(tx, (void *_Atomic *)&head.next, mtm_read_ptr((void *_Atomic *)&victim->next));
      if (!retire_after) txmem_free(victim);
    }
    node *n = new_node();
    node *tail = &head;
    for (node *x; (x = mtm_read_ptr((void *_Atomic *)&tail->next));) tail = x;
    mtm_write_ptr(tx, (void *_Atomic *)&tail->next, n);
    mtm_commit(tx);
    if (victim && retire_after) txmem_retire(victim); /* Figure 9: free after the commit */
  }
  free(tx);
  txmem_thread_exit();
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  mtm_tx *tx = calloc(1, sizeof *tx);
  /* A round counts once the reader got a validated pointer; writers may doom attempts. */
  for (long r = 0, attempts = 0; r < reader_rounds && attempts < 100 * reader_rounds; attempts++) {
    mtm_begin_read(tx);
    node *p = mtm_read_ptr((void *_Atomic *)&head.next);
    if (!p || !mtm_valid(tx)) { /* never dereference an unvalidated pointer */
      mtm_abort(tx);
      continue;
    }
    uint64_t id1 = __atomic_load_n(&p->id, __ATOMIC_RELAXED);
    for (long spin = 0; spin < 200000 && atomic_load(&mtm_clock) < tx->start + 2 * K_COMMITS;
         spin++)
      sched_yield();
    bool freed = atomic_load(&mtm_clock) >= tx->start + 2 * K_COMMITS;
    /* A doomed reader still reads what it holds: this read is the hazard. */
    uint64_t id2 = __atomic_load_n(&p->id, __ATOMIC_RELAXED);
    if (freed) atomic_fetch_add(&held_freed, 1);
    if (id2 != id1) atomic_fetch_add(&hazards, 1);
    if (mtm_valid(tx))
      mtm_commit(tx);
    else
      mtm_abort(tx);
    atomic_fetch_add(&reads_done, 1);
    r++;
  }
  free(tx);
  txmem_thread_exit();
  return NULL;
}

int main(void) {
  bool safe = txmem_safe_reuse();
  reader_rounds = check_scaled(300, 60);
  fprintf(stderr, "strategy %s, safe_reuse %d, %ld rounds per reader\n",
          txmem_strategy_name(txmem_get_strategy()), safe, reader_rounds);
  long long l0 = txmem_test_live_bytes();
  node *tail = &head;
  for (int i = 0; i < LIST_LENGTH; i++) {
    node *n = new_node();
    atomic_store(&tail->next, n);
    tail = n;
  }
  pthread_t w[WRITERS], r[READERS];
  for (int i = 0; i < WRITERS; i++)
    pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)(i * 7919 + 1));
  for (int i = 0; i < READERS; i++) pthread_create(&r[i], NULL, reader, NULL);
  for (int i = 0; i < READERS; i++) pthread_join(r[i], NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < WRITERS; i++) pthread_join(w[i], NULL);

  long h = atomic_load(&hazards), held = atomic_load(&held_freed);
  fprintf(stderr, "reads %ld, held a freed node %ld, hazards %ld\n", atomic_load(&reads_done), held,
          h);
  if (safe) {
    CHECKF(h == 0, "%ld reads saw freed or reused memory under a running transaction", h);
    CHECKF(atomic_load(&reads_done) == READERS * reader_rounds, "readers completed %ld rounds",
           atomic_load(&reads_done));
    CHECKF(held >= READERS * reader_rounds / 4, "readers held freed nodes only %ld times", held);
  } else {
    CHECKF(h > 0, "the hazard was never seen: the detector does not work");
  }
  for (node *n = atomic_load(&head.next), *next; n; n = next) {
    next = atomic_load(&n->next);
    txmem_free(n);
  }
  txmem_flush();
  txmem_stats s;
  txmem_stats_get(&s);
  CHECK(s.limbo_objects == 0);
  CHECK(s.active_transactions == 0);
  if (txmem_get_strategy() == TXMEM_TXALLOC && l0 >= 0)
    CHECKF(txmem_test_live_bytes() == l0, "live bytes %lld, expected %lld", txmem_test_live_bytes(),
           l0);
  txmem_stats_print_json(2);
  fputc('\n', stderr);
  return check_exit();
}
