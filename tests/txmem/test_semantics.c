/* Single-thread semantics of the hook contract, for the strategy in TXALLOC_TXMEM:
 *   Figure 3 (malloc/free loop in one transaction) runs in constant space (txalloc);
 *   Figure 4 (aborted transactions that allocate) leaves zero live bytes;
 *   Figures 5 and 7, exactly, with a child or top-level abort injected at every point:
 *     which objects are released when, which survive, contents of survivors intact;
 *   a speculatively freed object survives an abort unchanged (flat and nested);
 *   how each path of txmem_free classifies a free (balanced or speculative), and that a
 *     commit forgets the undo log's index;
 *   privatization and publication; calloc; the depth queries;
 *   a randomized differential test of nested begin/commit/abort with malloc/free against a
 *     model of closed nesting (contents of every visible object checked at every step,
 *     live bytes and allocator errors checked at the end). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "txmem_test.h"

static bool balanced; /* strategy txalloc recycles balanced frees at once */
static long long L0;  /* live bytes at the start of a scenario */
static int alloc_errors;
static bool warmup; /* first pass: bookkeeping arrays grow; live bytes are not compared */

static void count_error(txalloc_error_kind kind, const void *ptr, const char *msg, void *arg) {
  (void)kind, (void)ptr, (void)arg;
  fprintf(stderr, "allocator error: %s\n", msg);
  alloc_errors++;
}

/* Live bytes relative to the scenario start, after the limbo and caches were flushed
 * (only outside transactions); -1 when not measurable. */
static long long live(void) {
  if (warmup) return -1;
  /* wrap-cache keeps released objects in its thread cache until a flush */
  if (txmem_in_tx() && txmem_get_strategy() == TXMEM_WRAP_CACHE) return -1;
  if (!txmem_in_tx()) txmem_flush();
  long long l = txmem_test_live_bytes();
  return l < 0 ? -1 : l - L0;
}
static void start(void) {
  txmem_flush();
  L0 = txmem_test_live_bytes();
}
#define CHECK_LIVE(expected)                                                                       \
  do {                                                                                             \
    long long l_ = live();                                                                         \
    if (l_ >= 0)                                                                                   \
      CHECKF(l_ == (long long)(expected), "live %lld, expected %lld", l_, (long long)(expected));  \
  } while (0)

/* Size of the allocator's accounting for p: usable size for txalloc, chunk size for glibc's
 * mallinfo (usable + 8, at least 32). */
static long long acct_bytes(const void *p) {
  if (txmem_get_strategy() == TXMEM_TXALLOC) return (long long)txalloc_usable_size(p);
  size_t u = malloc_usable_size((void *)p);
  return (long long)(u + 8 < 32 ? 32 : u + 8);
}

static txmem_stats stats_now(void) {
  txmem_stats s;
  txmem_stats_get(&s);
  return s;
}

static void test_outside_and_depth(void) {
  CHECK(!txmem_in_tx() && txmem_depth() == 0);
  void *p = txmem_malloc(100);
  CHECK(p != NULL);
  txmem_free(p);
  txmem_free(NULL);
  txmem_tx_begin(1);
  CHECK(txmem_in_tx() && txmem_depth() == 1);
  txmem_tx_begin(2);
  CHECK(txmem_depth() == 2);
  txmem_tx_commit(2);
  txmem_tx_begin(2);
  txmem_tx_begin(3);
  txmem_tx_abort(2); /* aborts 3 and 2 */
  CHECK(txmem_depth() == 1);
  txmem_tx_commit(1);
  CHECK(!txmem_in_tx());
}

static void test_figure4(void) {
  long n = check_scaled(1000000, 20000);
  /* warm-up: logs and caches reach their size before the baseline is taken */
  for (int i = 0; i < 1000; i++) {
    txmem_tx_begin(1);
    txmem_test_fill(txmem_malloc(64), 64, 1);
    txmem_tx_abort(1);
  }
  start();
  txmem_stats s0 = stats_now();
  for (long i = 0; i < n; i++) {
    txmem_tx_begin(1);
    size_t size = 16 + (size_t)(i % 64) * 8;
    void *p = txmem_malloc(size);
    txmem_test_fill(p, size, (uint64_t)i);
    txmem_tx_abort(1);
  }
  txmem_stats s1 = stats_now();
  CHECK_LIVE(0);
  CHECKF(s1.aborted_allocs - s0.aborted_allocs == (uint64_t)n, "aborted %llu of %ld",
         (unsigned long long)(s1.aborted_allocs - s0.aborted_allocs), n);
  CHECK(s1.transactions - s0.transactions == (uint64_t)n);
}

static void test_figure3(void) {
  long n = balanced ? check_scaled(10000000, 200000) : 10000;
  txmem_tx_begin(1);
  txmem_tx_abort(1);
  start();
  txmem_stats s0 = stats_now();
  long long worst = 0;
  txmem_tx_begin(1);
  for (long i = 0; i < n; i++) {
    void *foo = txmem_malloc(48);
    *(volatile long *)foo = i;
    txmem_free(foo);
    if (balanced && (i & 0xffff) == 0) {
      long long l = live();
      if (l > worst) worst = l;
    }
  }
  txmem_tx_commit(1);
  txmem_stats s1 = stats_now();
  if (balanced) {
    /* "within a few blocks": never more than 64 KiB live during the loop */
    CHECKF(worst <= 65536, "footprint grew to %lld bytes", worst);
    CHECK(s1.balanced_recycles - s0.balanced_recycles == (uint64_t)n);
    CHECK(s1.speculative_frees == s0.speculative_frees);
  } else {
    /* wrap defers every transactional free to the commit (not safe for space) */
    CHECK(s1.speculative_frees - s0.speculative_frees == (uint64_t)n);
    CHECK(s1.balanced_recycles == s0.balanced_recycles);
  }
  CHECK_LIVE(0);
}

/* Figure 3 across nesting levels (txalloc): an object allocated by a committed child and
 * freed by the parent, and one allocated by the parent and freed by a child that commits,
 * are both balanced and recycled at once: the footprint stays flat. */
static void test_figure3_nested(void) {
  if (!balanced) return;
  long n = check_scaled(1000000, 50000);
  start();
  long long worst = 0;
  txmem_tx_begin(1);
  for (long i = 0; i < n; i++) {
    txmem_tx_begin(2);
    void *a = txmem_malloc(48);
    txmem_tx_commit(2);
    txmem_free(a); /* allocated by a committed child: balanced */
    void *b = txmem_malloc(48);
    txmem_tx_begin(2);
    txmem_free(b);      /* speculative here ... */
    txmem_tx_commit(2); /* ... balanced once the child committed into level 1 */
    if ((i & 0xffff) == 0) {
      long long l = live();
      if (l > worst) worst = l;
    }
  }
  txmem_tx_commit(1);
  CHECKF(worst <= 65536, "nested footprint grew to %lld bytes", worst);
  CHECK_LIVE(0);
}

static void test_speculative_free_survives_abort(void) {
  start();
  size_t size = 200;
  void *p = txmem_malloc(size);
  txmem_test_fill(p, size, 77);
  long long a = acct_bytes(p);
  txmem_tx_begin(1);
  txmem_free(p);
  for (int i = 0; i < 100; i++) txmem_test_fill(txmem_malloc(size), size, 5); /* tempt reuse */
  txmem_tx_abort(1);
  CHECK(txmem_test_intact(p, size, 77));
  CHECK_LIVE(a);
  /* nested: a child's abort restores the free, the parent commits */
  txmem_tx_begin(1);
  txmem_tx_begin(2);
  txmem_free(p);
  txmem_tx_abort(2);
  for (int i = 0; i < 100; i++) {
    void *q = txmem_malloc(size);
    txmem_test_fill(q, size, 6);
    txmem_free(q);
  }
  txmem_tx_commit(1);
  CHECK(txmem_test_intact(p, size, 77));
  CHECK_LIVE(a);
  /* a committed free releases it (after the limbo, which flush drains) */
  txmem_tx_begin(1);
  txmem_free(p);
  CHECK(txmem_test_intact(p, size, 77)); /* still valid inside the transaction */
  txmem_tx_commit(1);
  CHECK_LIVE(0);
}

/* Figure 5:
 *   transaction { foo = malloc(s1); goo = malloc(s2);
 *     transaction { free(foo); bar = malloc(s3); free(bar); }
 *     free(goo); }
 * inject: 0 none; 1 abort child after free(foo); 2 after malloc(bar); 3 after free(bar);
 *         4 abort top after the child committed; 5 abort top after free(goo). */
static void figure5(int inject) {
  start();
  txmem_stats s0 = stats_now();
  txmem_tx_begin(1);
  void *foo = txmem_malloc(64), *goo = txmem_malloc(128);
  txmem_test_fill(foo, 64, 1);
  txmem_test_fill(goo, 128, 2);
  long long afoo = acct_bytes(foo), agoo = acct_bytes(goo);
  txmem_tx_begin(2);
  txmem_free(foo); /* not balanced */
  CHECK_LIVE(afoo + agoo);
  bool child_aborted = false;
  if (inject == 1) {
    txmem_tx_abort(2);
    child_aborted = true;
  } else {
    void *bar = txmem_malloc(256);
    txmem_test_fill(bar, 256, 3);
    long long abar = acct_bytes(bar);
    CHECK_LIVE(afoo + agoo + abar);
    if (inject == 2) {
      txmem_tx_abort(2);
      child_aborted = true;
    } else {
      txmem_free(bar); /* balanced */
      CHECK_LIVE(afoo + agoo + (balanced ? 0 : abar));
      if (inject == 3) {
        txmem_tx_abort(2);
        child_aborted = true;
      } else {
        txmem_tx_commit(2);
        /* foo became balanced with the child's commit: txalloc recycles it now */
        CHECK_LIVE(agoo + (balanced ? 0 : afoo + abar));
      }
    }
  }
  if (child_aborted) {
    CHECK_LIVE(afoo + agoo);
    CHECK(txmem_test_intact(foo, 64, 1));
  }
  if (inject == 4) {
    txmem_tx_abort(1);
    CHECK_LIVE(0);
    return;
  }
  CHECK(txmem_test_intact(goo, 128, 2));
  txmem_free(goo); /* balanced */
  if (inject == 5) {
    txmem_tx_abort(1);
    CHECK_LIVE(0);
    if (child_aborted) CHECK(0); /* not a combination we run */
    return;
  }
  txmem_tx_commit(1);
  txmem_stats s1 = stats_now();
  if (child_aborted) {
    CHECK(txmem_test_intact(foo, 64, 1)); /* allocated by the committed top level, never freed */
    CHECK_LIVE(afoo);
    txmem_free(foo); /* privatized: freed outside */
    CHECK_LIVE(0);
  } else {
    CHECK_LIVE(0);
    CHECK(s1.balanced_recycles - s0.balanced_recycles == (balanced ? 3u : 0u));
    CHECK(s1.speculative_frees - s0.speculative_frees == (balanced ? 0u : 3u));
  }
}

/* Figure 7:
 *   transaction {                      seq 1
 *     transaction { transaction {      seq 2, 3
 *       foo = malloc(); bar = malloc(); } }
 *     transaction { free(foo); }       seq 4: 3 < 4, speculative
 *     free(bar);                       3 > 1, balanced
 *   }
 * inject: 0 none; 1 abort level 3 after the mallocs; 2 abort level 2 after level 3
 *         committed; 3 abort the seq-4 child after free(foo); 4 abort the top at the end. */
static void figure7(int inject) {
  start();
  txmem_stats s0 = stats_now();
  txmem_tx_begin(1);
  txmem_tx_begin(2);
  txmem_tx_begin(3);
  void *foo = txmem_malloc(96), *bar = txmem_malloc(160);
  txmem_test_fill(foo, 96, 11);
  txmem_test_fill(bar, 160, 12);
  long long afoo = acct_bytes(foo), abar = acct_bytes(bar);
  if (inject == 1) {
    txmem_tx_abort(3);
    txmem_tx_commit(2);
    CHECK_LIVE(0);
    foo = bar = NULL;
  } else {
    txmem_tx_commit(3);
    if (inject == 2) {
      txmem_tx_abort(2);
      CHECK_LIVE(0);
      foo = bar = NULL;
    } else {
      txmem_tx_commit(2);
    }
  }
  txmem_tx_begin(2); /* seq 4 */
  txmem_free(foo);   /* speculative: allocated by seq 3 < 4 */
  if (foo) CHECK_LIVE(afoo + abar);
  bool foo_survives = false;
  if (inject == 3) {
    txmem_tx_abort(2);
    CHECK(txmem_test_intact(foo, 96, 11));
    foo_survives = true;
  } else {
    txmem_tx_commit(2); /* foo is now balanced w.r.t. level 1 */
    if (foo) CHECK_LIVE(abar + (balanced ? 0 : afoo));
  }
  if (bar) CHECK(txmem_test_intact(bar, 160, 12));
  txmem_free(bar); /* balanced: seq 3 >= 1 */
  if (bar) CHECK_LIVE((foo_survives || !balanced ? afoo : 0) + (balanced ? 0 : abar));
  if (inject == 4) {
    txmem_tx_abort(1);
    CHECK_LIVE(0);
    return;
  }
  txmem_tx_commit(1);
  txmem_stats s1 = stats_now();
  if (foo_survives) {
    CHECK(txmem_test_intact(foo, 96, 11));
    CHECK_LIVE(afoo);
    txmem_free(foo);
  }
  CHECK_LIVE(0);
  if (inject == 0) {
    CHECK(s1.balanced_recycles - s0.balanced_recycles == (balanced ? 2u : 0u));
    CHECK(s1.speculative_frees - s0.speculative_frees == (balanced ? 0u : 2u));
  }
}

static void test_privatization_publication_calloc(void) {
  start();
  txmem_tx_begin(1);
  unsigned char *c = txmem_calloc(100, 3);
  bool zero = true;
  for (int i = 0; i < 300; i++) zero = zero && c[i] == 0;
  CHECK(zero);
  void *priv = txmem_malloc(500);
  txmem_test_fill(priv, 500, 9);
  txmem_tx_commit(1);
  CHECK(txmem_test_intact(priv, 500, 9));
  txmem_free(priv); /* privatized: plain free outside */
  txmem_tx_begin(1);
  txmem_free(c); /* published before, freed in a transaction */
  txmem_tx_commit(1);
  CHECK_LIVE(0);
  CHECK(txmem_calloc((size_t)1 << 62, 8) == NULL);
}

/* txalloc strategy: an object of the process's malloc freed inside a transaction goes back
 * to the process's free at the commit (ASan reports a wrong free or a leak), and survives an
 * abort. */
static void test_foreign_object(void) {
  if (!balanced) return;
  int errors = alloc_errors;
  char *p = malloc(100);
  memset(p, 7, 100);
  txmem_tx_begin(1);
  txmem_free(p);
  txmem_tx_abort(1);
  CHECK(p[0] == 7 && p[99] == 7);
  txmem_tx_begin(1);
  txmem_free(p);
  txmem_tx_commit(1);
  txmem_flush();
  CHECK(alloc_errors == errors);
}

/* ---- Randomized differential test against a model of closed nesting ---- */
#define MAXOBJ 512
typedef struct model_obj {
  void *p;
  size_t size;
  uint64_t tag;
  int alloc_level; /* level holding its allocation (0: committed/pre-existing) */
  int freed_level; /* level that freed it in the running transaction, 0: not freed */
  bool exists;
} model_obj;
static model_obj objs[MAXOBJ];

static void model_child_commit(int depth) {
  txmem_tx_commit((unsigned)depth);
  for (int i = 0; i < MAXOBJ; i++) {
    if (objs[i].exists && objs[i].alloc_level == depth) objs[i].alloc_level = depth - 1;
    if (objs[i].exists && objs[i].freed_level == depth) objs[i].freed_level = depth - 1;
  }
}

static void random_test(void) {
  start();
  uint64_t rng = 12345;
  uint64_t next_tag = 1000;
  long rounds = check_scaled(3000, 300);
  for (long r = 0; r < rounds; r++) {
    int depth = 1;
    txmem_tx_begin(1);
    int ops = 1 + (int)(txmem_test_rand(&rng) % 200);
    for (int op = 0; op < ops; op++) {
      uint64_t x = txmem_test_rand(&rng) % 100;
      int slot = (int)(txmem_test_rand(&rng) % MAXOBJ);
      model_obj *o = &objs[slot];
      if (x < 35 && !o->exists) { /* malloc */
        o->size = 16 + (size_t)(txmem_test_rand(&rng) % 40) * 8;
        o->p = txmem_malloc(o->size);
        o->tag = next_tag++;
        txmem_test_fill(o->p, o->size, o->tag);
        o->exists = true;
        o->alloc_level = depth;
        o->freed_level = 0;
      } else if (x < 70 && o->exists && !o->freed_level) { /* free */
        CHECK(txmem_test_intact(o->p, o->size, o->tag));
        txmem_free(o->p);
        o->freed_level = depth;
      } else if (x < 80 && depth < 12) {
        txmem_tx_begin(++depth);
      } else if (x < 90 && depth > 1) { /* child commit: merge into the parent */
        model_child_commit(depth--);
      } else if (x < 95 && depth > 1) { /* child abort */
        int to =
            2 + (int)(txmem_test_rand(&rng) % (unsigned)(depth - 1)); /* abort levels to..depth */
        txmem_tx_abort((unsigned)to);
        for (int i = 0; i < MAXOBJ; i++) {
          if (objs[i].exists && objs[i].alloc_level >= to) objs[i].exists = false;
          if (objs[i].exists && objs[i].freed_level >= to) objs[i].freed_level = 0;
        }
        depth = to - 1;
      }
      for (int i = 0; i < MAXOBJ; i++)
        if (objs[i].exists && !objs[i].freed_level &&
            !txmem_test_intact(objs[i].p, objs[i].size, objs[i].tag)) {
          CHECKF(0, "round %ld op %d: object %d (tag %llu) overwritten", r, op, i,
                 (unsigned long long)objs[i].tag);
          objs[i].exists = false;
        }
    }
    while (depth > 1) model_child_commit(depth--);
    bool commit = txmem_test_rand(&rng) % 4 != 0;
    if (commit)
      txmem_tx_commit(1);
    else
      txmem_tx_abort(1);
    for (int i = 0; i < MAXOBJ; i++) {
      model_obj *o = &objs[i];
      if (!o->exists) continue;
      if (commit) {
        if (o->freed_level) o->exists = false;
        o->alloc_level = 0;
      } else if (o->alloc_level) {
        o->exists = false;
      }
      o->freed_level = 0;
    }
    CHECK(txmem_depth() == 0);
  }
  long long expected = 0;
  for (int i = 0; i < MAXOBJ; i++) {
    if (!objs[i].exists) continue;
    CHECK(txmem_test_intact(objs[i].p, objs[i].size, objs[i].tag));
    expected += acct_bytes(objs[i].p);
  }
  CHECK_LIVE(expected);
  for (int i = 0; i < MAXOBJ; i++)
    if (objs[i].exists) {
      txmem_free(objs[i].p);
      objs[i].exists = false;
    }
  CHECK_LIVE(0);
}

/* The "transactions" statistic counts top-level transactions exactly (committed and
 * aborted, not their nested levels), across its internal batches of 256 and across
 * threads that exit; a top-level transaction after an abort of the top level from deep
 * inside starts from clean levels (its free of its own allocation is balanced, and a
 * child's free of it becomes balanced when the child commits). */
static void *count_thread(void *arg) {
  long n = (long)(intptr_t)arg;
  for (long i = 0; i < n; i++) {
    txmem_tx_begin(1);
    if (i % 3 == 0) txmem_free(txmem_malloc(32));
    txmem_tx_commit(1);
  }
  return NULL;
}

static void test_transaction_count(void) {
  start();
  txmem_stats s0 = stats_now();
  const long n = 1000; /* not a multiple of 256 */
  for (long i = 0; i < n; i++) {
    txmem_tx_begin(1);
    if (i % 2) {
      txmem_tx_begin(2);
      if (i % 5 == 1) txmem_tx_begin(3), txmem_tx_commit(3);
      txmem_tx_commit(2);
    }
    if (i % 7 == 0)
      txmem_tx_abort(1);
    else
      txmem_tx_commit(1);
  }
  txmem_stats s1 = stats_now();
  CHECKF(s1.transactions - s0.transactions == (uint64_t)n, "counted %llu of %ld",
         (unsigned long long)(s1.transactions - s0.transactions), n);
  for (long k = 1; k <= 2; k++) { /* the second thread may reuse the first one's record */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, count_thread, (void *)(intptr_t)(300 * k + 7)) == 0);
    CHECK(pthread_join(th, NULL) == 0);
  }
  txmem_stats s2 = stats_now();
  CHECKF(s2.transactions - s1.transactions == 300 + 7 + 600 + 7, "counted %llu",
         (unsigned long long)(s2.transactions - s1.transactions));

  /* Abort of the top level while levels 2 and 3 are open. */
  txmem_tx_begin(1);
  void *a = txmem_malloc(64);
  txmem_tx_begin(2);
  txmem_tx_begin(3);
  void *b = txmem_malloc(48);
  txmem_test_fill(b, 48, 3);
  txmem_tx_abort(1);
  (void)a;
  CHECK_LIVE(0);
  txmem_stats s3 = stats_now();
  txmem_tx_begin(1);
  void *c = txmem_malloc(80);
  txmem_test_fill(c, 80, 4);
  txmem_free(c); /* balanced */
  void *d = txmem_malloc(80);
  txmem_test_fill(d, 80, 5);
  txmem_tx_begin(2);
  txmem_free(d); /* speculative in the child, balanced once it commits */
  txmem_tx_commit(2);
  txmem_tx_commit(1);
  txmem_stats s4 = stats_now();
  CHECK_LIVE(0);
  CHECK(s4.balanced_recycles - s3.balanced_recycles == (balanced ? 2u : 0u));
  CHECK(s4.speculative_frees - s3.speculative_frees == (balanced ? 0u : 2u));
  CHECK(txmem_depth() == 0);
}

/* txalloc: each free goes where its level's undo log says, whichever path classifies it
 * (txmem.c): the newest entry (balanced), an older or indexed entry of the level
 * (balanced), an object the level did not allocate while the level has no undo entry
 * (speculative, without a lookup), the same while it has entries (speculative, after the
 * lookup); and a commit forgets the log's index, so an object the previous transaction
 * allocated (and indexed) is speculative in the next. */
static void test_free_classification(void) {
  if (!balanced) return;
  enum { N = 9 }; /* the 9th allocation indexes the first 8 (TXMEM_INDEX_PENDING) */
  start();
  void *old = txmem_malloc(64);
  txmem_test_fill(old, 64, 1);
  txmem_stats s0 = stats_now();
  txmem_tx_begin(1);
  void *made[N];
  for (int i = 0; i < N; i++) txmem_test_fill(made[i] = txmem_malloc(64), 64, 10 + (uint64_t)i);
  txmem_free(made[8]); /* the newest: balanced, and every entry left is indexed */
  txmem_free(made[0]); /* indexed, the level's: balanced */
  txmem_tx_begin(2);
  txmem_free(made[1]); /* the child has no entry: speculative at once */
  txmem_free(old);     /* the same, an object older than the transaction */
  txmem_tx_abort(2);   /* both frees forgotten */
  CHECK(txmem_test_intact(made[1], 64, 11) && txmem_test_intact(old, 64, 1));
  txmem_tx_begin(2);
  txmem_free(made[1]); /* speculative in the child ... */
  txmem_tx_commit(2);  /* ... balanced once it committed into level 1 */
  txmem_tx_commit(1);  /* the undo log and its index are forgotten */
  txmem_stats s1 = stats_now();
  CHECKF(s1.balanced_recycles - s0.balanced_recycles == 3, "%llu balanced, want 3",
         (unsigned long long)(s1.balanced_recycles - s0.balanced_recycles));
  CHECK(s1.speculative_frees == s0.speculative_frees);
  txmem_tx_begin(1);
  void *fresh = txmem_malloc(64); /* the level has an entry: the next free looks up */
  txmem_free(made[5]);            /* allocated (and indexed) by the previous transaction */
  txmem_free(old);                /* speculative after the lookup too */
  txmem_free(fresh);              /* balanced */
  txmem_tx_commit(1);
  txmem_stats s2 = stats_now();
  CHECKF(s2.speculative_frees - s1.speculative_frees == 2, "%llu speculative, want 2",
         (unsigned long long)(s2.speculative_frees - s1.speculative_frees));
  CHECK(s2.balanced_recycles - s1.balanced_recycles == 1);
  for (int i = 2; i < N - 1; i++) {
    if (i == 5) continue;
    CHECK(txmem_test_intact(made[i], 64, 10 + (uint64_t)i));
    txmem_free(made[i]);
  }
  CHECK_LIVE(0);
}

static void scenarios(void) {
  test_outside_and_depth();
  test_figure4();
  test_figure3();
  test_figure3_nested();
  test_speculative_free_survives_abort();
  test_free_classification();
  for (int inject = 0; inject <= 5; inject++) figure5(inject);
  for (int inject = 0; inject <= 4; inject++) figure7(inject);
  test_privatization_publication_calloc();
  test_foreign_object();
  test_transaction_count();
  random_test();
}

int main(int argc, char **argv) {
  (void)argc;
  balanced = txmem_get_strategy() == TXMEM_TXALLOC;
  /* glibc's tcache counts cached chunks as in use in mallinfo2: measure without it */
  if (!balanced && !TXMEM_TEST_SANITIZED && !getenv("TXMEM_TEST_REEXEC")) {
    setenv("TXMEM_TEST_REEXEC", "1", 1);
    setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
    execv("/proc/self/exe", argv);
    perror("re-exec without tcache");
    return 1;
  }
  txalloc_set_error_hook(count_error, NULL);
  fprintf(stderr, "strategy %s, safe_reuse %d\n", txmem_strategy_name(txmem_get_strategy()),
          txmem_safe_reuse());
  if (!balanced) { /* deterministic pass that lets txmem's bookkeeping reach its size */
    warmup = true;
    scenarios();
    warmup = false;
  }
  scenarios();
  CHECK(alloc_errors == 0);
  txmem_stats s = stats_now();
  CHECK(s.limbo_objects == 0);
  txmem_stats_print_json(2);
  fputc('\n', stderr);
  txmem_thread_exit();
  return check_exit();
}
