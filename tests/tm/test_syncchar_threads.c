/* The Syncchar recorder under threads: more threads than cores start together (a barrier)
 * and each runs blocks that read one shared word and write a word of its own. Every
 * thread's records must come back whole: its sections, each with exactly its own write and
 * the shared read, and a THREAD record whose counts match them (with TXALLOC_SYNCCHAR_SAMPLE
 * below 100, a sample of them). */
#include <stdint.h>
#include <unistd.h>

#include "syncchar_read.h"
#include "tm_test.h"

#define THREADS 8
#define SLOT_WORDS 16 /* 128 bytes apart: a stripe (shift <= 7) or line of its own */

static uint64_t hot[SLOT_WORDS] __attribute__((aligned(128)));
static uint64_t slots[THREADS][SLOT_WORDS] __attribute__((aligned(128)));
static pthread_barrier_t start;
static int next_index;
static int blocks;

TM_TEST_TX static void block(uint64_t *mine) {
  TM_ATOMIC { tm_store(mine, tm_load(&hot[0]) + tm_load(mine)); }
}

static void *worker(void *arg) {
  (void)arg;
  int me = flag_add(&next_index, 1) - 1;
  pthread_barrier_wait(&start);
  for (int i = 0; i < blocks; i++) block(&slots[me][0]);
  return NULL; /* the thread's exit flushes its records */
}

int main(void) {
  tm_test_watchdog(120);
  blocks = (int)(400 * check_scale()) + 20;
  char path[] = "/tmp/txalloc-syncchar-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  test_set_option("syncchar", path);
  tm_test_print_config("syncchar_threads");
  tm_thread_init();
  pthread_barrier_init(&start, NULL, THREADS);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);

  sc_trace t;
  CHECK(sc_trace_read(path, &t) == 0);
  unlink(path);
  unsigned s = t.unit_shift;
  uint64_t hot_unit = (uint64_t)(uintptr_t)&hot[0] >> s << s;
  /* Per recorder id: its sections, the unit it wrote, its THREAD record's counts. */
  enum { IDS = 64 };
  size_t sections[IDS] = {0}, bad[IDS] = {0};
  uint64_t wrote[IDS] = {0}, counted[IDS] = {0}, sampled[IDS] = {0};
  SC_FOR_EACH(&t, r) {
    if (sc_kind(r) == 1) {
      unsigned id = sc_thread(r);
      CHECK(id < IDS);
      if (id >= IDS) continue;
      sections[id]++;
      if (sc_nreads(r) != 1 || sc_nwrites(r) != 1 || sc_reads(r)[0] != hot_unit ||
          (wrote[id] && sc_writes(r)[0] != wrote[id]))
        bad[id]++;
      else
        wrote[id] = sc_writes(r)[0];
    } else if (sc_kind(r) == 2 && r[1] < IDS) {
      counted[r[1]] = r[2];
      sampled[r[1]] = r[3];
    }
  }
  int workers = 0;
  for (unsigned id = 0; id < IDS; id++) {
    if (!counted[id]) continue;
    workers++;
    CHECKF(counted[id] == (uint64_t)blocks, "thread %u: %llu blocks", id,
           (unsigned long long)counted[id]);
    CHECKF(sampled[id] == sections[id], "thread %u: %llu sampled, %zu records", id,
           (unsigned long long)sampled[id], sections[id]);
    CHECKF(bad[id] == 0, "thread %u: %zu records with other sets", id, bad[id]);
    if (t.sample_percent == 100)
      CHECK(sections[id] == (size_t)blocks);
    else
      CHECKF(sections[id] > 0 && sections[id] < (size_t)blocks, "thread %u: %zu sampled", id,
             sections[id]);
    /* Distinct threads wrote distinct slots. */
    for (unsigned other = 0; other < id; other++)
      if (counted[other] && wrote[id]) CHECK(wrote[other] != wrote[id]);
  }
  CHECKF(workers == THREADS, "%d threads recorded", workers);
  free(t.words);
  return check_exit();
}
