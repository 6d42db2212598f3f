/* Statistics read while other threads allocate, free and exit: txalloc_stats_get and the
 * printers must be race-free (ThreadSanitizer build) and coherent: counters never go
 * down between two reads, and after everything is joined they add up exactly.
 *
 * Workload: 6 worker threads (more than cores) each do R rounds of 200 mallocs of random
 * sizes (16 B .. 200 KiB, seed = thread id, small, medium and large objects), passing half
 * to the next worker through a mutex-protected mailbox (remote frees) and freeing the
 * rest; every 50 rounds a worker calls txalloc_thread_exit(). Meanwhile a reader thread
 * calls txalloc_stats_get in a loop and checks that every counter is at least its value
 * in the previous read, and every 64 reads prints the JSON to /dev/null. At the end
 * mallocs, frees and remote frees equal the workers' own counts. */
#include <fcntl.h>
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { WORKERS = 6, BATCH = 200, MAILBOX = 256 };

typedef struct worker {
  int id;
  long rounds, mallocs, frees, bad;
} worker;

static pthread_mutex_t mailbox_lock[WORKERS];
static void *mailbox[WORKERS][MAILBOX];
static int mailbox_n[WORKERS];
static atomic_int running;

static void *work(void *arg) {
  worker *w = (worker *)arg;
  test_rng rng = {(uint64_t)w->id + 11};
  void *mine[BATCH];
  for (long r = 0; r < w->rounds; r++) {
    for (int i = 0; i < BATCH; i++) {
      size_t s = test_rng_below(&rng, 40) == 0 ? 1 + (size_t)test_rng_below(&rng, 200 << 10)
                                               : test_rng_size(&rng, 4096);
      mine[i] = txalloc_malloc(s);
      if (!mine[i])
        w->bad++;
      else
        w->mallocs++;
    }
    int next = (w->id + 1) % WORKERS;
    pthread_mutex_lock(&mailbox_lock[next]);
    for (int i = 0; i < BATCH / 2 && mailbox_n[next] < MAILBOX; i += 1) {
      if (!mine[i]) continue;
      mailbox[next][mailbox_n[next]++] = mine[i];
      mine[i] = NULL;
    }
    pthread_mutex_unlock(&mailbox_lock[next]);
    for (int i = 0; i < BATCH; i++)
      if (mine[i]) {
        txalloc_free(mine[i]);
        w->frees++;
      }
    void *in[MAILBOX];
    int n;
    pthread_mutex_lock(&mailbox_lock[w->id]);
    n = mailbox_n[w->id];
    memcpy(in, mailbox[w->id], (size_t)n * sizeof in[0]);
    mailbox_n[w->id] = 0;
    pthread_mutex_unlock(&mailbox_lock[w->id]);
    for (int i = 0; i < n; i++) {
      txalloc_free(in[i]);
      w->frees++;
    }
    if (r % 50 == 49) txalloc_thread_exit();
  }
  atomic_fetch_sub(&running, 1);
  return NULL;
}

static long reader_bad, reads;

static void *read_stats(void *arg) {
  (void)arg;
  int devnull = open("/dev/null", O_WRONLY);
  txalloc_stats prev, cur;
  txalloc_stats_get(&prev);
  while (atomic_load(&running) > 0) {
    txalloc_stats_get(&cur);
    reads++;
#define MONOTONIC(name, doc)                                                                       \
  if (cur.name < prev.name) {                                                                      \
    reader_bad++;                                                                                  \
    fprintf(stderr, "counter %s went down: %llu -> %llu\n", #name, (unsigned long long)prev.name,  \
            (unsigned long long)cur.name);                                                         \
  }
    TXALLOC_STATS_COUNTERS(MONOTONIC)
#undef MONOTONIC
    prev = cur;
    if (reads % 64 == 0 && devnull >= 0) txalloc_stats_print_json(devnull);
  }
  if (devnull >= 0) close(devnull);
  return NULL;
}

int main(void) {
  long rounds = check_scaled(4000, 400);
  worker w[WORKERS];
  pthread_t t[WORKERS], reader;
  txalloc_stats before, after;
  for (int i = 0; i < WORKERS; i++) pthread_mutex_init(&mailbox_lock[i], NULL);
  txalloc_stats_get(&before);
  atomic_store(&running, WORKERS);
  if (pthread_create(&reader, NULL, read_stats, NULL) != 0) return 2;
  for (int i = 0; i < WORKERS; i++) {
    w[i] = (worker){.id = i, .rounds = rounds};
    if (pthread_create(&t[i], NULL, work, &w[i]) != 0) return 2;
  }
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
  pthread_join(reader, NULL);
  /* What is left in the mailboxes. */
  long mallocs = 0, frees = 0, bad = 0;
  for (int i = 0; i < WORKERS; i++) {
    for (int k = 0; k < mailbox_n[i]; k++) {
      txalloc_free(mailbox[i][k]);
      frees++;
    }
    mallocs += w[i].mallocs;
    frees += w[i].frees;
    bad += w[i].bad;
  }
  txalloc_stats_get(&after);
  fprintf(stderr, "%ld stats reads during the run\n", reads);
  CHECK(bad == 0);
  CHECKF(reader_bad == 0, "%ld counters went down between two reads", reader_bad);
  CHECKF(after.mallocs - before.mallocs == (uint64_t)mallocs, "mallocs +%llu, workers %ld",
         (unsigned long long)(after.mallocs - before.mallocs), mallocs);
  CHECKF(after.frees - before.frees == (uint64_t)frees, "frees +%llu, workers %ld",
         (unsigned long long)(after.frees - before.frees), frees);
  CHECKF(after.live_bytes == before.live_bytes, "live bytes %llu -> %llu",
         (unsigned long long)before.live_bytes, (unsigned long long)after.live_bytes);
  return check_exit();
}
