/* fork() while other threads allocate: the child must be able to allocate and free
 * (txalloc's pthread_atfork handlers leave no lock held and no structure half-updated).
 *
 * Workload: 4 worker threads allocate and free objects of random sizes (16 B .. 256 KiB,
 * seed = thread id) in a loop, passing some to each other (remote frees) and sometimes
 * calling txalloc_collect() and txalloc_thread_exit(), so that every path that may hold a
 * lock (block store, large-object cache, decommit, region table) is busy at fork time.
 * Meanwhile the main thread forks 60 times. Each child (single-threaded, an alarm of 30 s
 * guards against a deadlock): frees the objects the workers had parked in a shared table
 * (remote frees into blocks whose owners do not exist in the child), allocates 1000
 * objects of every size range including large ones, checks their patterns, frees them,
 * starts a thread that allocates and frees too (inline in sanitizer builds), and exits 0. The
 * parent requires every child to exit 0 and its workers' patterns to stay intact. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { WORKERS = 4, PARKED = 64 };

typedef struct obj {
  void *p;
  size_t size;
  uint64_t tag;
} obj;

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static obj parked[PARKED];
static atomic_int stop;
static atomic_long worker_bad;

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  test_rng rng = {(uint64_t)id + 77};
  obj mine[32] = {{0}};
  uint64_t seq = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    int k = (int)test_rng_below(&rng, 32);
    if (mine[k].p) {
      if (!test_check(mine[k].p, mine[k].size, mine[k].tag)) worker_bad++;
      /* Swap with a parked object (which another worker allocated) or free. */
      if (test_rng_below(&rng, 4) == 0) {
        int j = (int)test_rng_below(&rng, PARKED);
        pthread_mutex_lock(&park_lock);
        obj t = parked[j];
        parked[j] = mine[k];
        pthread_mutex_unlock(&park_lock);
        mine[k] = (obj){0};
        if (t.p) {
          if (!test_check(t.p, t.size, t.tag)) worker_bad++;
          txalloc_free(t.p);
        }
      } else {
        txalloc_free(mine[k].p);
        mine[k] = (obj){0};
      }
    } else {
      size_t s = test_rng_below(&rng, 50) == 0 ? (size_t)test_rng_below(&rng, 256 << 10) + 1
                                               : test_rng_size(&rng, 8192);
      uint64_t tag = ((uint64_t)id << 48) | seq++;
      void *p = txalloc_malloc(s);
      if (!p) {
        worker_bad++;
        continue;
      }
      test_fill(p, s, tag);
      mine[k] = (obj){p, s, tag};
    }
    uint64_t r = test_rng_below(&rng, 20000);
    if (r == 0) txalloc_collect();
    if (r == 1) txalloc_thread_exit(); /* mine[] objects stay live in abandoned blocks */
  }
  for (int k = 0; k < 32; k++) txalloc_free(mine[k].p);
  return NULL;
}

static void *child_thread(void *arg) {
  long *bad = (long *)arg;
  for (int i = 0; i < 500; i++) {
    void *p = txalloc_malloc(16 + (size_t)i);
    if (!p)
      (*bad)++;
    else
      test_fill(p, 16 + (size_t)i, (uint64_t)i);
    if (p && !test_check(p, 16 + (size_t)i, (uint64_t)i)) (*bad)++;
    txalloc_free(p);
  }
  return NULL;
}

/* The child's work; returns its exit status. */
static int child(int round) {
  alarm(30);
  long bad = 0;
  /* The parent's park_lock was held across fork by this thread, so the table is stable. */
  for (int j = 0; j < PARKED; j++) {
    if (!parked[j].p) continue;
    if (!test_check(parked[j].p, parked[j].size, parked[j].tag)) bad++;
    txalloc_free(parked[j].p);
  }
  test_rng rng = {(uint64_t)round};
  static obj objs[1000];
  for (int i = 0; i < 1000; i++) {
    size_t s = i % 100 == 0 ? ((size_t)1 << 20) + (size_t)i : test_rng_size(&rng, 65536);
    void *p = txalloc_malloc(s);
    if (!p) {
      bad++;
      objs[i] = (obj){0};
      continue;
    }
    test_fill(p, s, (uint64_t)i + 1);
    objs[i] = (obj){p, s, (uint64_t)i + 1};
  }
  for (int i = 0; i < 1000; i++) {
    if (objs[i].p && !test_check(objs[i].p, objs[i].size, objs[i].tag)) bad++;
    txalloc_free(objs[i].p);
  }
  long tbad = 0;
/* Sanitizer builds run the thread's work inline: TSan kills a child of a threaded parent
 * that starts threads, and gcc 12's ASan does not lock its own allocator around fork, so
 * pthread_create in the child (which allocates through ASan's malloc) can wait forever on
 * a lock a parent thread held at the fork. txalloc is used the same way in both cases. */
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  pthread_t t;
  if (pthread_create(&t, NULL, child_thread, &tbad) != 0) return 3;
  pthread_join(t, NULL);
#else
  child_thread(&tbad);
#endif
  txalloc_collect();
  if (bad || tbad) {
    fprintf(stderr, "child %d: %ld bad objects, %ld in its thread\n", round, bad, tbad);
    return 1;
  }
  return 0;
}

int main(void) {
  pthread_t workers[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    if (pthread_create(&workers[i], NULL, worker, (void *)(intptr_t)i) != 0) return 2;

  long forks = check_scaled(60, 20);
  long failed = 0;
  for (long f = 0; f < forks; f++) {
    pthread_mutex_lock(&park_lock);
    pid_t pid = fork();
    if (pid == 0) _exit(child((int)f));
    pthread_mutex_unlock(&park_lock);
    CHECK(pid > 0);
    if (pid < 0) break;
    char label[32];
    snprintf(label, sizeof label, "fork %ld", f);
    if (!check_wait_child(pid, label)) failed++;
    /* Some work for the parent's main thread between forks. */
    void *p = txalloc_malloc(100 + (size_t)f);
    CHECK(p != NULL);
    txalloc_free(p);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < WORKERS; i++) pthread_join(workers[i], NULL);
  for (int j = 0; j < PARKED; j++) txalloc_free(parked[j].p);
  CHECKF(failed == 0, "%ld of %ld children failed", failed, forks);
  CHECKF(worker_bad == 0, "%ld objects corrupted in the parent", (long)worker_bad);
  return check_exit();
}
