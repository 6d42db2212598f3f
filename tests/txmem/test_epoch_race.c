/* Races of the epoch reclamation (docs/txmem.md, "Safe reuse"), aimed at sticky
 * announcements: a top-level begin publishes its epoch with a plain store that may still sit
 * in the store buffer while the transaction reads, and scans pass threads between
 * transactions only after a membarrier. Bugs there are windows of a few hundred cycles;
 * this test makes them as wide and as frequent as it can:
 *   - short readers: tiny read transactions separated by gaps, so that scans usually find
 *     them between transactions (an old epoch, not running), and a burst of stores to cold
 *     cache lines right before every begin, so that the announcement waits behind them in
 *     the store buffer (TSO drains stores in order) while the transaction already reads;
 *   - a sleepy reader that stays idle for up to a millisecond between transactions (its
 *     record then holds the oldest epoch of all, and every scan must pass it);
 *   - fresh readers: short-lived threads whose first transaction runs on a new or reused
 *     record; half of them (all in phase 2) are set up outside a transaction first
 *     (txmem_flush), so that no setup barrier drains the store buffer before that first
 *     begin (such a record must not show 0, which scans skip without a membarrier);
 *   - writers that unlink the list's first node at every commit, free it (inside the
 *     transaction or with txmem_retire after it), mostly force a scan at once (txmem_flush)
 *     and are replaced by new threads after 16 to 100 commits, the last one not flushed, so
 *     that limbo entries held back by readers become orphans while other threads scan (a
 *     scan may release only orphans tagged before it began);
 *   - more threads than the machine has cores.
 * Phase 1 runs all of them; phase 2 only one writer and fresh readers, so that no reader
 * between transactions makes the scans run membarrier on the fresh readers' behalf.
 *
 * Detector: every node carries a generation (unique per allocation) and, in its first word,
 * a seal derived from it. A reader takes the first node after validating the pointer, so
 * the node was linked after the reader's announcement and must stay intact until the reader
 * ends, doomed or not. It checks the seal, holds the node a while (a writer unlinks and
 * frees it meanwhile), and reads both words again: a broken seal (allocators keep their
 * free-list links in the first words) or a new generation (the memory was allocated again,
 * usually at the writer's next commit) is a reuse under a running transaction. (ASan builds
 * report the read of freed memory themselves.) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "txmem_test.h"

#define LIST_LENGTH 2
#define MAX_WRITER_SLOTS 2
#define MAX_SHORT_READERS 3
#define FRESH_ROUNDS 2 /* transactions of a fresh reader thread */
#define SEAL_KEY 0x5eA1ed0dDeadC0deull
#define HAZARD_REPORTS 10 /* hazards described on stderr (all are counted) */

/* Store-buffer filler: a region larger than the last-level cache, written at random lines. */
#define COLD_BYTES ((size_t)64 << 20)
#define COLD_LINES_PER_BEGIN 32

typedef struct node {
  uint64_t seal; /* gen ^ SEAL_KEY */
  uint64_t gen;
  struct node *_Atomic next;
  uint64_t pad[5];
} node;

typedef struct phase {
  const char *name;
  int writer_slots;
  int writer_life;      /* most commits of one writer thread (at least 16) */
  int short_readers;    /* with a sleepy reader when sleepy_rounds > 0 */
  long short_rounds;    /* per short reader */
  long sleepy_rounds;   /* 0: no sleepy reader */
  long fresh_threads;   /* FRESH_ROUNDS each */
  bool fresh_set_up;    /* all fresh readers are set up outside a transaction first */
  bool expect_overlaps; /* enough rounds that some must span a writer's commit */
} phase;

static const phase *cur;
static node head;
static _Atomic uint64_t next_gen = 1;
static _Atomic int stop_writers;
static _Atomic long hazards, rounds_done, held_unlinked, fresh_started;
static unsigned char *cold;

static node *new_node(void) {
  node *n = txmem_malloc(sizeof *n);
  uint64_t gen = atomic_fetch_add_explicit(&next_gen, 1, memory_order_relaxed);
  __atomic_store_n(&n->gen, gen, __ATOMIC_RELAXED);
  __atomic_store_n(&n->seal, gen ^ SEAL_KEY, __ATOMIC_RELAXED);
  atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
  return n;
}

/* ---- Writers ---- */
/* One write transaction: unlink the first node, append a new one. Returns the victim. */
static node *replace_first(mtm_tx *tx, bool free_inside) {
  mtm_begin_write(tx);
  node *victim = mtm_read_ptr((void *_Atomic *)&head.next);
  mtm_write_ptr(tx, (void *_Atomic *)&head.next, mtm_read_ptr((void *_Atomic *)&victim->next));
  node *tail = &head;
  for (node *x; (x = mtm_read_ptr((void *_Atomic *)&tail->next));) tail = x;
  mtm_write_ptr(tx, (void *_Atomic *)&tail->next, new_node());
  if (free_inside) txmem_free(victim);
  mtm_commit(tx);
  return victim;
}

static void *writer(void *argp) {
  uint64_t rng = *(const uint64_t *)argp;
  mtm_tx *tx = calloc(1, sizeof *tx);
  int life = 16 + (int)(txmem_test_rand(&rng) % (uint64_t)(cur->writer_life - 15));
  for (int i = 0; i < life && !atomic_load(&stop_writers); i++) {
    uint64_t r = txmem_test_rand(&rng);
    bool free_inside = r & 1;
    node *victim = replace_first(tx, free_inside);
    if (!free_inside) txmem_retire(victim);
    /* 7 commits in 8 scan at once (right after the unlink: the narrowest gap to a reader's
     * begin), with a membarrier whenever a reader is between transactions; after the
     * others the batch of 64 decides. The last one exits with its limbo instead. */
    if ((r >> 1) % 8 != 0 && i + 1 < life) txmem_flush();
  }
  free(tx);
  /* Every third writer leaves through the thread-exit destructor, the others explicitly;
   * both hand a held-back limbo over as orphans. */
  if (rng % 3) txmem_thread_exit();
  return NULL;
}

/* Keeps one writer running: a new thread (new or reused record) when one exits. */
static void *writer_slot(void *arg) {
  uint64_t rng = (uint64_t)(uintptr_t)arg;
  while (!atomic_load(&stop_writers)) {
    uint64_t seed = txmem_test_rand(&rng);
    pthread_t t;
    if (pthread_create(&t, NULL, writer, &seed) != 0) abort();
    pthread_join(t, NULL);
  }
  return NULL;
}

/* ---- Readers ---- */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void spin(uint64_t n) {
  for (uint64_t i = 0; i < n; i++) cpu_relax();
}

/* Stores to lines that are most likely in no cache of this core: a store issued after them
 * (the announcement) becomes visible only after all of them. */
static void fill_store_buffer(uint64_t *rng) {
  for (int i = 0; i < COLD_LINES_PER_BEGIN; i++) {
    size_t line = (size_t)(txmem_test_rand(rng) % (COLD_BYTES / 64));
    __atomic_store_n(&cold[line * 64], (unsigned char)i, __ATOMIC_RELAXED);
  }
}

static bool node_intact(const node *p, uint64_t gen) {
  return __atomic_load_n(&p->gen, __ATOMIC_RELAXED) == gen &&
         __atomic_load_n(&p->seal, __ATOMIC_RELAXED) == (gen ^ SEAL_KEY);
}

/* One read transaction. Returns false when it found no validated node (retry). `hold`:
 * pause iterations the node is held. A quarter of the rounds hold it inside a nested
 * level (nested levels announce nothing: the top level's announcement covers them). */
static bool read_round(mtm_tx *tx, uint64_t *rng, uint64_t hold) {
  uint64_t r = txmem_test_rand(rng);
  fill_store_buffer(rng);
  mtm_begin_read(tx);
  node *p = mtm_read_ptr((void *_Atomic *)&head.next);
  if (!mtm_valid(tx)) { /* never dereference an unvalidated pointer */
    mtm_abort(tx);
    return false;
  }
  uint64_t gen = __atomic_load_n(&p->gen, __ATOMIC_RELAXED);
  bool nested = (r & 3) == 0;
  if (nested) mtm_child_begin(tx);
  bool intact = node_intact(p, gen);
  spin(hold / 2);
  intact = intact && node_intact(p, gen);
  spin(hold - hold / 2);
  /* A doomed reader still reads what it holds: the very access safe reuse protects. */
  intact = intact && node_intact(p, gen);
  bool moved = atomic_load(&mtm_clock) >= tx->start + 2;
  if (nested) {
    if (r & 4)
      mtm_child_abort(tx);
    else
      mtm_child_commit(tx);
  }
  if (!intact && atomic_fetch_add(&hazards, 1) < HAZARD_REPORTS)
    fprintf(stderr, "reader saw node %p (generation %llu) freed or reused while running\n",
            (void *)p, (unsigned long long)gen);
  if (moved) atomic_fetch_add_explicit(&held_unlinked, 1, memory_order_relaxed);
  if (mtm_valid(tx))
    mtm_commit(tx);
  else
    mtm_abort(tx);
  atomic_fetch_add_explicit(&rounds_done, 1, memory_order_relaxed);
  return true;
}

/* Holds: mostly a few hundred cycles, sometimes long enough for several writer commits. */
static uint64_t pick_hold(uint64_t *rng) {
  uint64_t r = txmem_test_rand(rng);
  return (r & 7) == 0 ? 2000 + r % 8000 : r % 300;
}

typedef struct reader_arg {
  uint64_t rng;
  long rounds;
  bool sleepy;
} reader_arg;

static void *reader(void *argp) {
  reader_arg *arg = argp;
  mtm_tx *tx = calloc(1, sizeof *tx);
  for (long done = 0; done < arg->rounds;) {
    if (read_round(tx, &arg->rng, pick_hold(&arg->rng))) done++;
    /* Between transactions: the record shows an old epoch, not running. */
    uint64_t r = txmem_test_rand(&arg->rng);
    if (arg->sleepy)
      usleep(50 + (useconds_t)(r % 1000));
    else if ((r & 1023) == 0)
      sched_yield();
    else
      spin(r % 500);
  }
  free(tx);
  txmem_thread_exit();
  return NULL;
}

static void *fresh_reader(void *argp) {
  uint64_t rng = *(const uint64_t *)argp;
  mtm_tx *tx = calloc(1, sizeof *tx);
  atomic_fetch_add_explicit(&fresh_started, 1, memory_order_relaxed);
  /* Sets the thread up outside a transaction: the first begin then runs no setup. */
  if (cur->fresh_set_up || (rng & 2)) txmem_flush();
  for (int done = 0; done < FRESH_ROUNDS;)
    if (read_round(tx, &rng, pick_hold(&rng))) done++;
  free(tx);
  if (rng & 1) txmem_thread_exit(); /* else the thread-exit destructor */
  return NULL;
}

/* Starts fresh readers one after the other: each first transaction runs on a record that
 * showed no announcement (a new one, or one an exited thread left). */
static void *fresh_spawner(void *arg) {
  uint64_t rng = (uint64_t)(uintptr_t)arg;
  for (long i = 0; i < cur->fresh_threads; i++) {
    uint64_t seed = txmem_test_rand(&rng);
    pthread_t t;
    if (pthread_create(&t, NULL, fresh_reader, &seed) != 0) abort();
    pthread_join(t, NULL);
  }
  return NULL;
}

static void run_phase(const phase *ph) {
  cur = ph;
  atomic_store(&stop_writers, 0);
  atomic_store(&hazards, 0);
  atomic_store(&rounds_done, 0);
  atomic_store(&held_unlinked, 0);
  atomic_store(&fresh_started, 0);
  fprintf(stderr,
          "%s: %d writer slots (16..%d commits per thread), %d short readers x %ld rounds, "
          "sleepy reader x %ld, %ld fresh readers (%s set up first)\n",
          ph->name, ph->writer_slots, ph->writer_life, ph->short_readers, ph->short_rounds,
          ph->sleepy_rounds, ph->fresh_threads, ph->fresh_set_up ? "all" : "half");

  pthread_t slots[MAX_WRITER_SLOTS], readers[MAX_SHORT_READERS + 1], spawner;
  reader_arg rargs[MAX_SHORT_READERS + 1];
  int nreaders = 0;
  for (int i = 0; i < ph->writer_slots; i++)
    pthread_create(&slots[i], NULL, writer_slot, (void *)(uintptr_t)(0x9e37 * (i + 1)));
  for (int i = 0; i < ph->short_readers; i++) {
    rargs[nreaders] = (reader_arg){0x51ed + 977u * (unsigned)i, ph->short_rounds, false};
    pthread_create(&readers[nreaders], NULL, reader, &rargs[nreaders]);
    nreaders++;
  }
  if (ph->sleepy_rounds) {
    rargs[nreaders] = (reader_arg){0x5eeb, ph->sleepy_rounds, true};
    pthread_create(&readers[nreaders], NULL, reader, &rargs[nreaders]);
    nreaders++;
  }
  pthread_create(&spawner, NULL, fresh_spawner, (void *)(uintptr_t)0xf7e5);

  for (int i = 0; i < nreaders; i++) pthread_join(readers[i], NULL);
  pthread_join(spawner, NULL);
  atomic_store(&stop_writers, 1);
  for (int i = 0; i < ph->writer_slots; i++) pthread_join(slots[i], NULL);

  long h = atomic_load(&hazards);
  long expected =
      ph->short_readers * ph->short_rounds + ph->sleepy_rounds + FRESH_ROUNDS * ph->fresh_threads;
  fprintf(stderr, "%s: rounds %ld, held across a writer's commit %ld, hazards %ld\n", ph->name,
          atomic_load(&rounds_done), atomic_load(&held_unlinked), h);
  CHECKF(h == 0, "%s: %ld reads saw a node freed or reused under a running transaction", ph->name,
         h);
  CHECKF(atomic_load(&rounds_done) == expected, "%s: rounds %ld, expected %ld", ph->name,
         atomic_load(&rounds_done), expected);
  CHECK(atomic_load(&fresh_started) == ph->fresh_threads);
  /* The race was really run: readers held nodes that writers unlinked. */
  if (ph->expect_overlaps)
    CHECKF(atomic_load(&held_unlinked) > 0, "%s: no reader held a node across a commit", ph->name);
}

int main(void) {
  fprintf(stderr, "strategy %s, membarrier %d\n", txmem_strategy_name(txmem_get_strategy()),
          txmem_membarrier_in_force());
  CHECK(txmem_safe_reuse());
  cold = mmap(NULL, COLD_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (cold == MAP_FAILED) abort();

  node *tail = &head;
  for (int i = 0; i < LIST_LENGTH; i++) {
    node *n = new_node();
    atomic_store(&tail->next, n);
    tail = n;
  }

  const phase mixed = {.name = "phase 1 (all kinds)",
                       .writer_slots = 2,
                       .writer_life = 100,
                       .short_readers = 3,
                       .short_rounds = check_scaled(50000, 5000),
                       .sleepy_rounds = check_scaled(400, 50),
                       .fresh_threads = check_scaled(800, 100),
                       .expect_overlaps = true};
  const phase fresh = {.name = "phase 2 (fresh readers)",
                       .writer_slots = 1,
                       .writer_life = 100,
                       .fresh_threads = check_scaled(5000, 500),
                       .fresh_set_up = true};
  run_phase(&mixed);
  run_phase(&fresh);

  txmem_stats s;
  txmem_stats_get(&s);
  fprintf(stderr, "scans %llu, scan barriers %llu, orphaned %llu, generations %llu\n",
          (unsigned long long)s.reclaim_scans, (unsigned long long)s.scan_barriers,
          (unsigned long long)s.orphaned, (unsigned long long)atomic_load(&next_gen));
  /* With sticky announcements the scans had to pass readers between transactions. */
  if (txmem_membarrier_in_force())
    CHECKF(s.scan_barriers > 0, "sticky announcements, yet no scan ran membarrier");
  else
    CHECKF(s.scan_barriers == 0, "%llu scan barriers without sticky announcements",
           (unsigned long long)s.scan_barriers);

  for (node *n = atomic_load(&head.next), *next; n; n = next) {
    next = atomic_load(&n->next);
    txmem_free(n);
  }
  txmem_flush();
  txmem_stats_get(&s);
  CHECKF(s.limbo_objects == 0, "limbo %llu after the final flush",
         (unsigned long long)s.limbo_objects);
  CHECK(s.active_transactions == 0);
  munmap(cold, COLD_BYTES);
  return check_exit();
}
