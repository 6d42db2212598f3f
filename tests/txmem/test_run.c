/* The transactional run (src/txmem/txmem_run.c): transactions that allocate mostly one size
 * take their objects from a per-thread run of reserved objects, abort by resetting its bump
 * index and commit by letting the survivors go. Whatever the strategy, the layer must keep
 * closed-nesting semantics; under txalloc the allocator's live bytes must follow every step
 * exactly, inside transactions too.
 *
 * 1. model: one thread, deterministic seeds; nested transactions (up to 6 levels) of
 *    mallocs (mostly one size, so the run serves them; some other sizes, some too large for
 *    it), frees in and out of allocation order, child commits that make a parent's
 *    objects balanced, and aborts at random points of random levels. After every operation
 *    every live object still holds its contents, and under txalloc the allocator's live
 *    bytes equal the model's: objects allocated and not yet released, where a balanced free
 *    and an abort release at once and a speculative free at the top-level commit.
 * 2. placement: a conflict geometry set after the run was filled is obeyed at once.
 * 3. threads: 8 threads (more than the cores) start together at a barrier and run random
 *    nested transactions with aborts; committed objects pass through a shared exchange, so
 *    other threads free them inside their transactions (speculative frees of remote
 *    objects). Contents are checked at every free (an object handed out twice shows).
 *    Half the threads flush before they exit, half leave their run to the thread-exit
 *    path. Afterwards the allocator's live bytes are back at the baseline. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "txmem_test.h"

#define MAXOBJ 256
#define MAXDEPTH 6

typedef struct obj {
  uint64_t *p;
  size_t size;
  uint64_t tag;
  int alloc_level; /* level holding the allocation; 0: committed */
  int freed_level; /* level that freed it; 0: not freed */
  bool released;   /* the allocator has it back (balanced free, abort, or committed free) */
  bool exists;     /* the model still tracks it */
} obj;

/* Mostly the run's size; some others; a few too large for the run (medium objects). */
static size_t pick_size(uint64_t *rng) {
  uint64_t x = txmem_test_rand(rng) % 100;
  if (x < 70) return 40;
  if (x < 85) return 24;
  if (x < 95) return 104;
  return 2048;
}

/* ---- 1. The single-thread model ---- */
static obj objs[MAXOBJ];
static bool txalloc_strategy;
static long long base_live;

static long long model_live(void) {
  long long sum = 0;
  for (int i = 0; i < MAXOBJ; i++)
    if (objs[i].exists && !objs[i].released) sum += (long long)txalloc_usable_size(objs[i].p);
  return sum;
}

static void check_state(long round, int op) {
  for (int i = 0; i < MAXOBJ; i++) {
    obj *o = &objs[i];
    if (o->exists && !o->freed_level && !txmem_test_intact(o->p, o->size, o->tag)) {
      CHECKF(0, "round %ld op %d: object %d overwritten", round, op, i);
      o->exists = false;
    }
  }
  if (!txalloc_strategy) return;
  if (!txmem_in_tx()) txmem_flush(); /* committed frees wait in the limbo until then */
  txalloc_stats s;
  txalloc_stats_get(&s);
  long long live = (long long)s.live_bytes - base_live, want = model_live();
  CHECKF(live == want, "round %ld op %d (depth %u): live %lld, model %lld", round, op,
         txmem_depth(), live, want);
}

/* Level `depth` commits into its parent: its allocations and frees become the parent's; its
 * frees of objects the parent allocated become balanced (released now, under txalloc). */
static void child_commit(int depth) {
  txmem_tx_commit((unsigned)depth);
  for (int i = 0; i < MAXOBJ; i++) {
    obj *o = &objs[i];
    if (!o->exists) continue;
    if (o->alloc_level == depth) o->alloc_level = depth - 1;
    if (o->freed_level == depth) {
      o->freed_level = depth - 1;
      if (txalloc_strategy && o->alloc_level >= depth - 1) o->released = true;
    }
  }
}

/* Levels `to`..depth roll back: their allocations are released, their frees forgotten. */
static void abort_to(int to) {
  txmem_tx_abort((unsigned)to);
  for (int i = 0; i < MAXOBJ; i++) {
    obj *o = &objs[i];
    if (!o->exists) continue;
    if (o->alloc_level >= to) {
      o->exists = false;
      continue;
    }
    if (o->freed_level >= to) o->freed_level = 0;
  }
}

static void top_end(bool commit) {
  if (commit)
    txmem_tx_commit(1);
  else
    txmem_tx_abort(1);
  for (int i = 0; i < MAXOBJ; i++) {
    obj *o = &objs[i];
    if (!o->exists) continue;
    if (!commit && o->alloc_level) {
      o->exists = false;
      continue;
    }
    if (commit && o->freed_level) {
      o->exists = false; /* released through the limbo */
      continue;
    }
    o->alloc_level = 0;
    o->freed_level = 0;
  }
}

static void model_test(uint64_t seed) {
  txmem_flush();
  txalloc_stats s;
  txalloc_stats_get(&s);
  base_live = (long long)s.live_bytes;
  uint64_t rng = seed, next_tag = 1;
  long rounds = check_scaled(1500, 150);
  for (long r = 0; r < rounds; r++) {
    int depth = 1;
    txmem_tx_begin(1);
    int ops = 1 + (int)(txmem_test_rand(&rng) % 60);
    for (int op = 0; op < ops; op++) {
      uint64_t x = txmem_test_rand(&rng) % 100;
      obj *o = &objs[txmem_test_rand(&rng) % MAXOBJ];
      if (x < 40 && !o->exists) {
        o->size = pick_size(&rng);
        o->p = txmem_malloc(o->size);
        o->tag = next_tag++;
        txmem_test_fill(o->p, o->size, o->tag);
        o->alloc_level = depth;
        o->freed_level = 0;
        o->released = false;
        o->exists = true;
      } else if (x < 55) {
        /* free the newest live object of this level if there is one (the run's fast
         * path), else the slot's */
        obj *newest = NULL;
        for (int i = 0; i < MAXOBJ; i++)
          if (objs[i].exists && !objs[i].freed_level && objs[i].alloc_level == depth &&
              (!newest || objs[i].tag > newest->tag))
            newest = &objs[i];
        if (newest) o = newest;
        if (o->exists && !o->freed_level) {
          CHECK(txmem_test_intact(o->p, o->size, o->tag));
          txmem_free(o->p);
          o->freed_level = depth;
          if (txalloc_strategy && o->alloc_level >= depth) o->released = true;
        }
      } else if (x < 70 && o->exists && !o->freed_level) { /* any live object */
        CHECK(txmem_test_intact(o->p, o->size, o->tag));
        txmem_free(o->p);
        o->freed_level = depth;
        if (txalloc_strategy && o->alloc_level >= depth) o->released = true;
      } else if (x < 80 && depth < MAXDEPTH) {
        txmem_tx_begin((unsigned)++depth);
      } else if (x < 90 && depth > 1) {
        child_commit(depth--);
      } else if (x < 96 && depth > 1) { /* abort levels to..depth */
        int to = 2 + (int)(txmem_test_rand(&rng) % (uint64_t)(depth - 1));
        abort_to(to);
        depth = to - 1;
      } else if (x >= 96) { /* the top level ends early, at a random point */
        break;
      }
      check_state(r, op);
    }
    while (depth > 1) child_commit(depth--);
    top_end(txmem_test_rand(&rng) % 3 != 0);
    CHECK(txmem_depth() == 0);
    check_state(r, -1);
    /* now and then free committed objects outside transactions */
    if (txmem_test_rand(&rng) % 8 == 0) {
      for (int i = 0; i < MAXOBJ; i++) {
        if (objs[i].exists && txmem_test_rand(&rng) % 2) {
          CHECK(txmem_test_intact(objs[i].p, objs[i].size, objs[i].tag));
          txmem_free(objs[i].p);
          objs[i].exists = false;
        }
      }
      check_state(r, -2);
    }
  }
  for (int i = 0; i < MAXOBJ; i++) {
    if (!objs[i].exists) continue;
    CHECK(txmem_test_intact(objs[i].p, objs[i].size, objs[i].tag));
    txmem_free(objs[i].p);
    objs[i].exists = false;
  }
  check_state(rounds, -3);
}

/* ---- 2. Placement changes reach a filled run ---- */
static void placement_test(void) {
  if (!txalloc_strategy) return;
  for (unsigned shift = 5; shift <= 6; shift++) {
    txmem_set_conflict_geometry(shift, (uint64_t)1 << 20);
    size_t stripe = txmem_placement_stripe();
    CHECK(stripe == (size_t)1 << shift);
    for (int round = 0; round < 3; round++) {
      txmem_tx_begin(1);
      void *a = txmem_malloc(40), *b = txmem_malloc(40);
      CHECKF((uintptr_t)a % stripe == 0 && (uintptr_t)b % stripe == 0 &&
                 txalloc_usable_size(a) == stripe * ((40 + stripe - 1) / stripe),
             "stripe %zu: %p, %p of %zu bytes", stripe, a, b, txalloc_usable_size(a));
      txmem_free(b);
      if (round == 1) {
        txmem_tx_abort(1);
      } else {
        txmem_free(a);
        txmem_tx_commit(1);
      }
    }
  }
  txmem_set_conflict_geometry(0, 0);
  CHECK(txmem_placement_stripe() == 0);
}

/* ---- 3. Threads ---- */
#define THREADS 8
#define SLOTS 64
static void *_Atomic exchange[SLOTS]; /* committed objects, tag in word 0, size in word 1 */
static pthread_barrier_t barrier;
static _Atomic long thread_errors;

static uint64_t *make_shared(size_t size, uint64_t tag) {
  uint64_t *p = txmem_malloc(size);
  p[0] = tag;
  p[1] = size;
  for (size_t i = 2; i < size / 8; i++) p[i] = tag + i;
  return p;
}
static bool shared_intact(const uint64_t *p) {
  size_t size = (size_t)p[1];
  if (size < 16 || size > 4096) return false;
  for (size_t i = 2; i < size / 8; i++)
    if (p[i] != p[0] + i) return false;
  return true;
}

static void *thread_main(void *arg) {
  long id = (long)(intptr_t)arg;
  uint64_t rng = 0x1234567ull * (uint64_t)(id + 1), tag = (uint64_t)id << 40;
  long rounds = check_scaled(20000, 2000), errors = 0;
  pthread_barrier_wait(&barrier);
  for (long r = 0; r < rounds; r++) {
    uint64_t *mine[16];
    int n = 0, depth = 1;
    txmem_tx_begin(1);
    int ops = 1 + (int)(txmem_test_rand(&rng) % 12);
    int level_start[MAXDEPTH + 1] = {0, 0};
    for (int op = 0; op < ops; op++) {
      uint64_t x = txmem_test_rand(&rng) % 100;
      if (x < 45 && n < 16) {
        mine[n++] = make_shared(pick_size(&rng) < 100 ? 40 : 104, ++tag);
      } else if (x < 70 && n > level_start[depth]) { /* balanced: newest or any of the level */
        int k = x < 60 ? n - 1
                       : level_start[depth] +
                             (int)(txmem_test_rand(&rng) % (uint64_t)(n - level_start[depth]));
        if (!shared_intact(mine[k])) errors++;
        txmem_free(mine[k]);
        mine[k] = mine[--n];
      } else if (x < 80 && depth < MAXDEPTH) {
        txmem_tx_begin((unsigned)++depth);
        level_start[depth] = n;
      } else if (x < 88 && depth > 1) {
        txmem_tx_commit((unsigned)depth--);
      } else if (x < 93 && depth > 1) {
        txmem_tx_abort((unsigned)depth);
        n = level_start[depth--];
      }
    }
    while (depth > 1) txmem_tx_commit((unsigned)depth--);
    /* a speculative free of another thread's committed object */
    void *other = atomic_exchange(&exchange[txmem_test_rand(&rng) % SLOTS], NULL);
    if (other) {
      if (!shared_intact(other)) errors++;
      txmem_free(other);
    }
    bool commit = txmem_test_rand(&rng) % 4 != 0;
    if (commit) {
      txmem_tx_commit(1);
      /* publish the survivors; what was in the slot is freed outside a transaction */
      for (int k = 0; k < n; k++) {
        void *old = atomic_exchange(&exchange[txmem_test_rand(&rng) % SLOTS], mine[k]);
        if (old) {
          if (!shared_intact(old)) errors++;
          txmem_retire(old);
        }
      }
    } else {
      txmem_tx_abort(1);
      if (other) { /* the free was rolled back: the object is still ours to dispose of */
        if (!shared_intact(other)) errors++;
        txmem_free(other);
      }
    }
  }
  if (id % 2 == 0) txmem_flush(); /* the others leave their run to the thread-exit path */
  atomic_fetch_add(&thread_errors, errors);
  return NULL;
}

static void threads_test(void) {
  txmem_flush();
  txalloc_stats s0;
  txalloc_stats_get(&s0);
  pthread_barrier_init(&barrier, NULL, THREADS);
  pthread_t th[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  CHECKF(atomic_load(&thread_errors) == 0, "%ld objects found overwritten",
         atomic_load(&thread_errors));
  for (int i = 0; i < SLOTS; i++) {
    void *p = atomic_exchange(&exchange[i], NULL);
    if (!p) continue;
    CHECK(shared_intact(p));
    txmem_free(p);
  }
  txmem_flush();
  if (txalloc_strategy) {
    txalloc_stats s1;
    txalloc_stats_get(&s1);
    CHECKF(s1.live_bytes == s0.live_bytes, "live bytes %llu after the threads, %llu before",
           (unsigned long long)s1.live_bytes, (unsigned long long)s0.live_bytes);
  }
  txmem_stats t;
  txmem_stats_get(&t);
  CHECK(t.active_transactions == 0 && t.limbo_objects == 0);
}

int main(void) {
  txalloc_strategy = txmem_get_strategy() == TXMEM_TXALLOC;
  fprintf(stderr, "strategy %s\n", txmem_strategy_name(txmem_get_strategy()));
  for (uint64_t seed = 1; seed <= 4; seed++) model_test(seed * 7919);
  placement_test();
  threads_test();
  return check_exit();
}
