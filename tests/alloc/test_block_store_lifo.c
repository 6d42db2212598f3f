/* Block-store ABA torture at the source: the store's LIFO driven directly (through the
 * allocator's internal interface, src/alloc/internal.h), millions of pops and pushes by
 * more threads than cores, with nothing else in between to narrow the race window.
 *
 * The ABA scenario: thread T reads top = A and A->next = B, is preempted; others pop A,
 * pop B, push A back; T's CAS must fail (the version tag changed), else B — now owned by
 * someone — would be on the stack again and handed out twice, and A would be lost.
 * Honest limit: the window is a few instructions; on a 2-core machine preemption lands in
 * it rarely, so a removed version tag is not caught every run (it was not in three 20 s
 * trials with a 20 us interrupt timer). What the test does guarantee under heavy
 * contention: mutual exclusion of popped blocks, and no block lost or duplicated.
 *
 * Workload: 8 fresh 16 KiB blocks (few: most are held at any moment, so pops and pushes
 * hit the same few blocks and empty stacks) are pushed on the empty-block stack (after draining
 * whatever the stack held). 16 threads (then 3), started by a barrier, each repeat R
 * times: pop a block (retry if the stack is momentarily empty), write (thread, sequence)
 * into it past its header, sometimes pop a second block (if one is there) and push them back in
 * the other order, yield now and then, re-read the mark (another owner would have overwritten it),
 * push the block back. At the end the stack must hold exactly the 8 blocks, each once:
 * no block lost, none duplicated. The decommit threshold and delay are set high so the
 * purge (which also walks the stack) runs rarely; it is exercised by the other tests. */
#include <sched.h>
#include <time.h>

#include "alloc/internal.h"
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { BLOCKS = 8, MAX_THREADS = 16, MARK_OFFSET = TXA_BLOCK_HEADER + 64 };

typedef struct worker {
  int id;
  long rounds, bad, empty_pops;
  int lost;
} worker;

static pthread_barrier_t start;
static long pushes; /* blocks pushed back by the workers (atomic) */

static volatile uint64_t *mark_of(txa_block *b) {
  return (volatile uint64_t *)((char *)b + MARK_OFFSET);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void push_block(txa_block *b) {
  txa_store_push_empty(b);
  __atomic_add_fetch(&pushes, 1, __ATOMIC_RELEASE);
}

/* A block, or NULL when the stack stayed empty for 10 s with no push by any thread: blocks
 * were lost (a broken stack can drop its contents), which the caller reports. While other
 * threads push, the wait goes on: under a heavy load a thread can lose every race for a
 * block for seconds (others pop each block pushed) without anything being wrong. */
static txa_block *pop_block(worker *w) {
  double since = 0;
  long seen = -1;
  for (long tries = 0;; tries++) {
    txa_block *b = txa_store_pop_empty(TXA_KIND_SMALL);
    if (b) return b;
    w->empty_pops++; /* all blocks are held by other threads right now */
    if (tries % 256 == 0) {
      double t = now_s();
      long now_pushes = __atomic_load_n(&pushes, __ATOMIC_ACQUIRE);
      if (now_pushes != seen) {
        seen = now_pushes;
        since = t;
      } else if (t - since > 10) {
        break;
      }
    }
    sched_yield();
  }
  w->lost = 1;
  return NULL;
}

static void *run(void *arg) {
  worker *w = (worker *)arg;
  test_rng rng = {(uint64_t)w->id + 99};
  pthread_barrier_wait(&start);
  for (long r = 0; r < w->rounds; r++) {
    uint64_t mark = ((uint64_t)w->id << 48) | (uint64_t)r;
    txa_block *a = pop_block(w);
    if (!a) break;
    *mark_of(a) = mark;
    uint64_t k = test_rng_below(&rng, 8);
    if (k == 0) {
      /* A second block, only if one is there right now: waiting for it while holding a
       * block could deadlock (every block held by a waiting thread). */
      txa_block *b = txa_store_pop_empty(TXA_KIND_SMALL);
      if (b) {
        *mark_of(b) = mark ^ 1;
        if (a == b) w->bad++;
        if (*mark_of(b) != (mark ^ 1)) w->bad++;
        push_block(b);
      }
    } else if (k == 1) {
      sched_yield(); /* hold the block across a preemption */
    }
    if (*mark_of(a) != mark) w->bad++;
    push_block(a);
  }
  return NULL;
}

static int cmp_ptr(const void *x, const void *y) {
  uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
  return (a > b) - (a < b);
}

/* Pops everything; returns how many blocks, storing up to `cap` of them. */
static int drain(txa_block **out, int cap) {
  int n = 0;
  txa_block *b;
  while ((b = txa_store_pop_empty(TXA_KIND_SMALL)) != NULL) {
    if (n < cap) out[n] = b;
    n++;
  }
  return n;
}

static void torture(int nthreads, long rounds, txa_block **blocks) {
  for (int i = 0; i < BLOCKS; i++) txa_store_push_empty(blocks[i]);
  worker w[MAX_THREADS];
  pthread_barrier_init(&start, NULL, (unsigned)nthreads);
  for (int i = 0; i < nthreads; i++) w[i] = (worker){.id = i, .rounds = rounds};
  test_run_threads(nthreads, run, w, sizeof w[0]);
  pthread_barrier_destroy(&start);
  long bad = 0, empty = 0, lost = 0;
  for (int i = 0; i < nthreads; i++) {
    bad += w[i].bad;
    empty += w[i].empty_pops;
    lost += w[i].lost;
  }
  CHECKF(lost == 0, "%d threads: %ld threads found the stack empty for 10 s without a push",
         nthreads, lost);
  txa_block *back[BLOCKS * 2];
  int n = drain(back, BLOCKS * 2);
  CHECKF(bad == 0, "%d threads: %ld times a held block was also held by another thread", nthreads,
         bad);
  CHECKF(n == BLOCKS, "%d threads: the stack holds %d blocks after the torture, want %d", nthreads,
         n, BLOCKS);
  if (n > BLOCKS * 2) n = BLOCKS * 2;
  qsort(back, (size_t)n, sizeof back[0], cmp_ptr);
  int dup = 0, foreign = 0;
  for (int i = 0; i < n; i++) {
    if (i && back[i] == back[i - 1]) dup++;
    if (!bsearch(&back[i], blocks, BLOCKS, sizeof blocks[0], cmp_ptr)) foreign++;
  }
  CHECKF(dup == 0 && foreign == 0, "%d threads: %d duplicated and %d unknown blocks on the stack",
         nthreads, dup, foreign);
  fprintf(stderr, "%d threads x %ld rounds: %ld pops found the stack empty\n", nthreads, rounds,
          empty);
  for (int i = 0; i < BLOCKS; i++) blocks[i] = i < n ? back[i] : blocks[i];
}

int main(void) {
  setenv("TXALLOC_DECOMMIT_THRESHOLD_MB", "1048576", 1);
  setenv("TXALLOC_DECOMMIT_DELAY_MS", "86400000", 1);
  txalloc_free(txalloc_malloc(1)); /* initialises the allocator */

  static txa_block *earlier[4096];
  int had = drain(earlier, 4096); /* blocks some earlier activity left in the store */
  static txa_block *blocks[BLOCKS];
  for (int i = 0; i < BLOCKS; i++) {
    blocks[i] = txa_region_fresh_block(TXA_KIND_SMALL);
    if (!blocks[i]) return 2;
    blocks[i]->span_kind = TXA_KIND_SMALL; /* what txa_block_init would set */
  }
  qsort(blocks, BLOCKS, sizeof blocks[0], cmp_ptr);

  torture(16, check_scaled(100000, 20000), blocks);
  torture(3, check_scaled(200000, 40000), blocks);

  /* Hand everything back to the store for the allocator. */
  for (int i = 0; i < BLOCKS; i++) txa_store_push_empty(blocks[i]);
  for (int i = 0; i < had && i < 4096; i++) txa_store_push_empty(earlier[i]);
  void *p = txalloc_malloc(100);
  CHECK(p != NULL);
  txalloc_free(p);
  return check_exit();
}
