/* Abandoned blocks: a thread that exits hands its part-used blocks to the block store;
 * frees into them still work; other threads adopt them.
 *
 * Workload, deterministic and single-threaded at each step (threads run one after the
 * other): (1) thread A allocates 4000 objects of 64 B and 2000 of 400 B, frees every
 * other one, and exits with the rest live: the stats must show blocks abandoned. (2) The
 * main thread frees a quarter of A's survivors (remote frees into abandoned blocks).
 * (3) Thread B allocates the same classes: it must adopt abandoned blocks (stats), and its
 * objects must not overlap A's survivors (patterns checked on both sides). (4) Thread C
 * frees everything that is left (A's survivors and B's objects, B having exited).
 * (5) The explicit txalloc_thread_exit(): the main thread abandons its own heap with live
 * objects, allocates again (a new heap), frees the old objects; everything still checks.
 * Finally live_bytes is back to where it started. */
#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

enum { SMALL_N = 4000, MEDIUM_N = 2000, N = SMALL_N + MEDIUM_N };

typedef struct obj {
  void *p;
  size_t size;
  uint64_t tag;
} obj;

static obj a_objs[N], b_objs[N];
static atomic_long bad;

static size_t size_of(int i) { return i < SMALL_N ? 64 : 400; }

static void *thread_a(void *arg) {
  (void)arg;
  for (int i = 0; i < N; i++) {
    size_t s = size_of(i);
    a_objs[i] = (obj){txalloc_malloc(s), s, 0xA000000u + (uint64_t)i};
    if (!a_objs[i].p) {
      bad++;
      continue;
    }
    test_fill(a_objs[i].p, s, a_objs[i].tag);
  }
  for (int i = 0; i < N; i += 2) {
    if (!test_check(a_objs[i].p, a_objs[i].size, a_objs[i].tag)) bad++;
    txalloc_free(a_objs[i].p);
    a_objs[i].p = NULL;
  }
  return NULL; /* exits with N/2 live objects: its blocks are abandoned */
}

static void *thread_b(void *arg) {
  (void)arg;
  for (int i = 0; i < N; i++) {
    size_t s = size_of(i);
    b_objs[i] = (obj){txalloc_malloc(s), s, 0xB000000u + (uint64_t)i};
    if (!b_objs[i].p) {
      bad++;
      continue;
    }
    test_fill(b_objs[i].p, s, b_objs[i].tag);
  }
  return NULL;
}

static void free_all(obj *o, int n) {
  for (int i = 0; i < n; i++) {
    if (!o[i].p) continue;
    if (!test_check(o[i].p, o[i].size, o[i].tag)) bad++;
    txalloc_free(o[i].p);
    o[i].p = NULL;
  }
}

static void *thread_c(void *arg) {
  (void)arg;
  free_all(a_objs, N);
  free_all(b_objs, N);
  return NULL;
}

static void run_one(void *(*fn)(void *)) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, NULL) != 0) exit(2);
  pthread_join(t, NULL);
}

int main(void) {
  txalloc_stats s0, s1, s2, s3;
  txalloc_stats_get(&s0);

  run_one(thread_a);
  txalloc_stats_get(&s1);
  CHECKF(s1.blocks_abandoned > s0.blocks_abandoned, "no block abandoned by an exiting thread");
  CHECK(bad == 0);

  /* (2) remote frees into abandoned blocks */
  for (int i = 1; i < N; i += 8) {
    if (!test_check(a_objs[i].p, a_objs[i].size, a_objs[i].tag)) bad++;
    txalloc_free(a_objs[i].p);
    a_objs[i].p = NULL;
  }
  CHECK(bad == 0);

  /* (3) adoption */
  run_one(thread_b);
  txalloc_stats_get(&s2);
  CHECKF(s2.blocks_adopted > s1.blocks_adopted, "thread B adopted no abandoned block (%llu)",
         (unsigned long long)(s2.blocks_adopted - s1.blocks_adopted));
  for (int i = 0; i < N; i++) {
    if (a_objs[i].p && !test_check(a_objs[i].p, a_objs[i].size, a_objs[i].tag)) bad++;
    if (b_objs[i].p && !test_check(b_objs[i].p, b_objs[i].size, b_objs[i].tag)) bad++;
  }
  CHECKF(bad == 0, "%ld objects overlap after adoption", (long)bad);

  /* (4) everything freed by a third thread */
  run_one(thread_c);
  CHECK(bad == 0);

  /* (5) explicit thread exit of the main thread's heap, then a new heap. */
  static obj mine[1000];
  for (int i = 0; i < 1000; i++) {
    mine[i] =
        (obj){txalloc_malloc(48 + (size_t)i % 100), 48 + (size_t)i % 100, 0xC00000u + (uint64_t)i};
    CHECK(mine[i].p != NULL);
    test_fill(mine[i].p, mine[i].size, mine[i].tag);
  }
  txalloc_thread_exit();
  static obj again[1000];
  for (int i = 0; i < 1000; i++) {
    again[i] =
        (obj){txalloc_malloc(48 + (size_t)i % 100), 48 + (size_t)i % 100, 0xD00000u + (uint64_t)i};
    CHECK(again[i].p != NULL);
    test_fill(again[i].p, again[i].size, again[i].tag);
  }
  free_all(mine, 1000);
  free_all(again, 1000);
  txalloc_thread_exit(); /* twice in a row, and with an empty heap: harmless */
  txalloc_thread_exit();
  void *p = txalloc_malloc(10);
  CHECK(p != NULL);
  txalloc_free(p);
  CHECKF(bad == 0, "%ld objects corrupted around txalloc_thread_exit", (long)bad);

  txalloc_stats_get(&s3);
  CHECKF(s3.live_bytes == s0.live_bytes, "live bytes %llu at start, %llu at end",
         (unsigned long long)s0.live_bytes, (unsigned long long)s3.live_bytes);
  CHECK(s3.mallocs - s0.mallocs == s3.frees - s0.frees);
  return check_exit();
}
