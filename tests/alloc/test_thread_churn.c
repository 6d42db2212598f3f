/* Threads that exit while other threads still free their objects, and threads that start
 * and adopt the abandoned blocks, all at the same time.
 *
 * Workload: generations of T threads (T = 2, then 16: more threads than cores). The main
 * thread starts generation g before joining generation g-1, so two generations overlap.
 * Thread i of generation g, released together with its generation by a barrier:
 *   1. allocates M objects of random small sizes (16..1024 B, seed = g*T+i), writes a pattern
 *      tagged (g, i, k), publishes them and raises its "published" flag;
 *   2. waits for thread i of generation g-1 to publish, then frees the odd-numbered
 *      objects of that thread, which is exiting at this very moment (remote frees racing
 *      with the abandonment of the blocks they land in);
 *   3. frees the even-numbered objects of thread i of generation g-2, whose thread has
 *      exited (remote frees into abandoned, possibly already adopted blocks);
 *   4. exits with its M objects still live (its blocks are abandoned).
 * Every object's pattern is checked before it is freed, so two live objects sharing memory
 * or a write into a live object are caught. At the end all objects are freed, stats must
 * show blocks abandoned and adopted, and live bytes back at their start value. */
#include <sched.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { MAX_T = 16, M = 300, SLOTS = 4 };

typedef struct obj {
  void *p;
  size_t size;
  uint64_t tag;
} obj;

typedef struct thread_slot {
  obj objs[M];
  atomic_int published;
} thread_slot;

static thread_slot slots[SLOTS][MAX_T];
static pthread_barrier_t barriers[SLOTS];
static atomic_long bad, done_frees;

typedef struct arg {
  int g, i, t;
} arg;

static void free_checked(obj *o) {
  if (!o->p) return;
  if (!test_check(o->p, o->size, o->tag)) bad++;
  txalloc_free(o->p);
  o->p = NULL;
  done_frees++;
}

static void *generation_thread(void *varg) {
  arg a = *(arg *)varg;
  thread_slot *mine = &slots[a.g % SLOTS][a.i];
  test_rng rng = {(uint64_t)a.g * (uint64_t)a.t + (uint64_t)a.i};
  pthread_barrier_wait(&barriers[a.g % SLOTS]);

  for (int k = 0; k < M; k++) {
    size_t s = 16 + (size_t)test_rng_below(&rng, 1009);
    uint64_t tag = ((uint64_t)a.g << 32) | ((uint64_t)a.i << 16) | (uint64_t)k;
    void *p = txalloc_malloc(s);
    if (!p)
      bad++;
    else
      test_fill(p, s, tag);
    mine->objs[k] = (obj){p, s, tag};
  }
  atomic_store_explicit(&mine->published, 1, memory_order_release);

  if (a.g >= 1) {
    thread_slot *prev = &slots[(a.g - 1) % SLOTS][a.i];
    while (!atomic_load_explicit(&prev->published, memory_order_acquire)) sched_yield();
    for (int k = 1; k < M; k += 2) free_checked(&prev->objs[k]);
  }
  if (a.g >= 2) {
    thread_slot *old = &slots[(a.g - 2) % SLOTS][a.i];
    for (int k = 0; k < M; k += 2) free_checked(&old->objs[k]);
  }
  return NULL;
}

static void generations(int t, int ngen) {
  static pthread_t threads[2][MAX_T];
  static arg args[2][MAX_T];
  txalloc_stats before, after;
  txalloc_stats_get(&before);
  for (int g = 0; g < ngen; g++) {
    for (int i = 0; i < t; i++) atomic_store(&slots[g % SLOTS][i].published, 0);
    pthread_barrier_init(&barriers[g % SLOTS], NULL, (unsigned)t);
    for (int i = 0; i < t; i++) {
      args[g % 2][i] = (arg){g, i, t};
      if (pthread_create(&threads[g % 2][i], NULL, generation_thread, &args[g % 2][i]) != 0)
        exit(2);
    }
    if (g >= 1) {
      for (int i = 0; i < t; i++) pthread_join(threads[(g - 1) % 2][i], NULL);
      pthread_barrier_destroy(&barriers[(g - 1) % SLOTS]);
    }
  }
  for (int i = 0; i < t; i++) pthread_join(threads[(ngen - 1) % 2][i], NULL);
  pthread_barrier_destroy(&barriers[(ngen - 1) % SLOTS]);
  /* What the last two generations still hold. */
  for (int g = ngen - 2; g < ngen; g++)
    for (int i = 0; i < t; i++)
      for (int k = 0; k < M; k++) free_checked(&slots[g % SLOTS][i].objs[k]);
  txalloc_stats_get(&after);

  CHECKF(bad == 0, "%d threads x %d generations: %ld objects corrupted or missing", t, ngen,
         (long)bad);
  CHECKF(after.blocks_abandoned > before.blocks_abandoned, "%d threads: no block abandoned", t);
  CHECKF(after.blocks_adopted > before.blocks_adopted, "%d threads: no block adopted", t);
  CHECKF(after.live_bytes == before.live_bytes, "%d threads: live bytes %llu -> %llu", t,
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  CHECKF(after.frees - before.frees == (uint64_t)t * (uint64_t)ngen * M,
         "%d threads: stats frees +%llu, want %llu", t,
         (unsigned long long)(after.frees - before.frees),
         (unsigned long long)((uint64_t)t * (uint64_t)ngen * M));
  fprintf(stderr, "%d threads x %d generations: abandoned %llu, adopted %llu, remote frees %llu\n",
          t, ngen, (unsigned long long)(after.blocks_abandoned - before.blocks_abandoned),
          (unsigned long long)(after.blocks_adopted - before.blocks_adopted),
          (unsigned long long)(after.remote_frees - before.remote_frees));
}

int main(void) {
  generations(2, (int)check_scaled(1500, 150));
  generations(16, (int)check_scaled(200, 30));
  return check_exit();
}
