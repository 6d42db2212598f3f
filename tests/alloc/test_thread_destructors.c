/* Allocation inside thread-exit machinery: pthread key destructors, which may run before
 * or after txalloc's own key destructor handed the thread's heap back, must be able to
 * malloc and free, and the late heaps this creates must be handed back too.
 *
 * Workload: 600 threads in batches of 8 (more than cores). Each thread sets two keys
 * (one created before the allocator's first use, one after) whose destructors allocate
 * 20 objects, free 10 locally and leave 10 in a global table; the second destructor also
 * re-sets its key once, so glibc runs a second destructor round. The main thread frees
 * the table's objects after each batch (remote frees into blocks of exited threads).
 * Afterwards: all patterns intact, live bytes back at the start, and the blocks owned by
 * thread heaps did not grow with the number of threads (late heaps are not leaked). */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { THREADS = 600, BATCH = 8, PER_DESTRUCTOR = 20 };

typedef struct obj {
  void *p;
  uint64_t tag;
} obj;

static pthread_key_t early_key, late_key;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static obj table[BATCH * 3 * PER_DESTRUCTOR];
static int table_n;
static atomic_long bad;

static void allocate_in_destructor(uint64_t base) {
  void *p[PER_DESTRUCTOR];
  for (int i = 0; i < PER_DESTRUCTOR; i++) {
    p[i] = txalloc_malloc(32 + (size_t)i * 8);
    if (!p[i])
      bad++;
    else
      test_fill(p[i], 32, base + (uint64_t)i);
  }
  for (int i = 0; i < PER_DESTRUCTOR; i += 2) {
    if (p[i] && !test_check(p[i], 32, base + (uint64_t)i)) bad++;
    txalloc_free(p[i]);
  }
  pthread_mutex_lock(&table_lock);
  for (int i = 1; i < PER_DESTRUCTOR; i += 2)
    if (p[i] && table_n < (int)(sizeof table / sizeof table[0]))
      table[table_n++] = (obj){p[i], base + (uint64_t)i};
    else
      txalloc_free(p[i]);
  pthread_mutex_unlock(&table_lock);
}

static void early_destructor(void *v) { allocate_in_destructor((uint64_t)(uintptr_t)v << 8); }

static void late_destructor(void *v) {
  uintptr_t x = (uintptr_t)v;
  allocate_in_destructor(((uint64_t)x << 8) | 0x80);
  if (x & 1) pthread_setspecific(late_key, (void *)(x + 1)); /* another round */
}

static void *run(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  void *p = txalloc_malloc(100); /* the thread's heap exists before the destructors */
  txalloc_free(p);
  pthread_setspecific(early_key, (void *)(id * 4 + 2));
  pthread_setspecific(late_key, (void *)(id * 4 + 1));
  return NULL;
}

int main(void) {
  pthread_key_create(&early_key, early_destructor); /* before the allocator's own key */
  txalloc_free(txalloc_malloc(1));
  pthread_key_create(&late_key, late_destructor); /* after it */
  txalloc_stats s0, s1;
  txalloc_stats_get(&s0);
  uint64_t max_blocks = 0;
  for (int t = 0; t < THREADS; t += BATCH) {
    pthread_t th[BATCH];
    for (int i = 0; i < BATCH; i++)
      if (pthread_create(&th[i], NULL, run, (void *)(uintptr_t)(t + i + 1)) != 0) return 2;
    for (int i = 0; i < BATCH; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < table_n; i++) {
      if (!test_check(table[i].p, 32, table[i].tag)) bad++;
      txalloc_free(table[i].p);
    }
    table_n = 0;
    txalloc_stats_get(&s1);
    if (s1.blocks_in_use > max_blocks) max_blocks = s1.blocks_in_use;
  }
  txalloc_stats_get(&s1);
  CHECKF(bad == 0, "%ld objects corrupted or not allocated in destructors", (long)bad);
  CHECKF(s1.live_bytes == s0.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)s0.live_bytes, (unsigned long long)s1.live_bytes);
  /* With heaps handed back, the blocks in use stay bounded by a few batches' worth; a
   * leaked heap per thread would hold at least one block each (600+). */
  CHECKF(max_blocks < 200, "blocks in use reached %llu over %d exited threads",
         (unsigned long long)max_blocks, THREADS);
  fprintf(stderr, "blocks in use: at most %llu; abandoned %llu, adopted %llu\n",
          (unsigned long long)max_blocks,
          (unsigned long long)(s1.blocks_abandoned - s0.blocks_abandoned),
          (unsigned long long)(s1.blocks_adopted - s0.blocks_adopted));
  return check_exit();
}
