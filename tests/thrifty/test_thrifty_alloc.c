/* The bounded allocator alone (TXALLOC_THRIFTY_HEAP_MB=1, TXALLOC_THRIFTY_POOL_BYTES=4096,
 * set by ctest): first fit, split, coalesce, refill, exhaustion with ENOMEM, frees from
 * other threads, thread exit, fork. Pool contents are observed through the statistics'
 * gauges and through the addresses first fit must hand out. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "txalloc/thrifty.h"

static thrifty_stats stats(void) {
  thrifty_stats s;
  thrifty_stats_get(&s);
  return s;
}

/* Block bytes of a request: 16-byte header, 16-byte multiple, 32 at least. */
static size_t block(size_t size) {
  size_t b = (size + 16 + 15) & ~(size_t)15;
  return b < 32 ? 32 : b;
}

static void test_first_fit_split_coalesce(void) {
  thrifty_stats s0 = stats();
  char *a = thrifty_malloc(100);
  CHECK(a && ((uintptr_t)a & 15) == 0);
  thrifty_stats s1 = stats();
  CHECK(s1.heap_bytes == 1u << 20);
  CHECK(s1.pool_fills == s0.pool_fills + 1);
  CHECK(s1.allocated_bytes == s0.allocated_bytes + block(100));
  CHECK(s1.pool_bytes == 4096 - block(100));
  CHECK(thrifty_usable_size(a) == block(100) - 16);
  /* Split from the tail of the first fitting block: the next objects lie just below. */
  char *b = thrifty_malloc(100);
  char *c = thrifty_malloc(100);
  CHECK(b == a - block(100) && c == b - block(100));
  /* The rest of the pool, whole (a rest under 32 bytes would not be split off). */
  size_t front = 4096 - 3 * block(100);
  char *f = thrifty_malloc(front - 16);
  CHECK(f == c - front);
  CHECK(stats().pool_bytes == 0);
  /* A hole is found and handed out again... */
  thrifty_free(b);
  CHECK(stats().pool_bytes == block(100));
  char *d = thrifty_malloc(100);
  CHECK(d == b);
  /* ...and two neighbours freed are one block: a request of both fits at the lower. */
  thrifty_free(d);
  thrifty_free(a);
  char *e = thrifty_malloc(2 * block(100) - 16);
  CHECK(e == b);
  /* Everything freed coalesces into the one pool block again. */
  thrifty_free(e);
  thrifty_free(c);
  thrifty_free(f);
  thrifty_stats s2 = stats();
  CHECK(s2.allocated_bytes == s0.allocated_bytes);
  CHECK(s2.pool_bytes == 4096);
  char *whole = thrifty_malloc(4096 - 16);
  CHECK(whole == f);
  thrifty_free(whole);
  CHECK(s2.heap_bytes == s2.heap_free_bytes + s2.pool_bytes + s2.allocated_bytes);
}

static void test_refill(void) {
  thrifty_stats s0 = stats();
  /* More than the 4 KiB pool: refills with max(pool, 2 x request). */
  char *big = thrifty_malloc(10000);
  CHECK(big != NULL);
  thrifty_stats s1 = stats();
  CHECK(s1.refills == s0.refills + 1);
  CHECK(s1.pool_bytes == 2 * block(10000) - block(10000));
  memset(big, 1, 10000);
  thrifty_free(big);
}

static void test_exhaustion(void) {
  errno = 0;
  CHECK(thrifty_malloc((size_t)2 << 20) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(thrifty_malloc(SIZE_MAX - 8) == NULL && errno == ENOMEM);
  /* Fill the heap with 64 KiB objects until it refuses. */
  enum { MAX = 64 };
  void *held[MAX];
  int n = 0;
  errno = 0;
  while (n < MAX && (held[n] = thrifty_malloc(65536 - 16)) != NULL) n++;
  CHECKF(n >= 14 && n <= 16, "%d objects of 64 KiB in a 1 MiB heap", n);
  CHECK(n < MAX && errno == ENOMEM);
  CHECK(stats().enomem > 0 && stats().refill_failures > 0);
  for (int i = 0; i < n; i++) thrifty_free(held[i]);
  void *again = thrifty_malloc(65536 - 16);
  CHECK(again != NULL);
  thrifty_free(again);
  /* The frees filled this thread's pool: give it back for the tests that follow. */
  thrifty_thread_exit();
  thrifty_stats s = stats();
  CHECK(s.pool_bytes == 0 && s.heap_free_bytes + s.allocated_bytes == s.heap_bytes);
}

/* ---- Threads ---- */
static void *handed;
static pthread_barrier_t bar;

static void *allocate_and_exit(void *arg) {
  (void)arg;
  handed = thrifty_malloc(200);
  return NULL; /* the pool goes back to the heap at exit */
}

static void *free_remote(void *arg) {
  thrifty_free(arg);
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar); /* main reads the statistics while this pool holds it */
  return NULL;
}

static void test_threads(void) {
  thrifty_stats s0 = stats();
  pthread_t t;
  pthread_create(&t, NULL, allocate_and_exit, NULL);
  pthread_join(t, NULL);
  thrifty_stats s1 = stats();
  /* The thread's pool is back in the heap: only its object is out. */
  CHECK(s1.pool_bytes == s0.pool_bytes);
  CHECK(s1.allocated_bytes == s0.allocated_bytes + block(200));
  /* Freed by another thread: into that thread's pool (the paper's rule), counted remote. */
  pthread_barrier_init(&bar, NULL, 2);
  pthread_create(&t, NULL, free_remote, handed);
  pthread_barrier_wait(&bar);
  thrifty_stats s2 = stats();
  CHECK(s2.remote_frees == s1.remote_frees + 1);
  CHECK(s2.allocated_bytes == s0.allocated_bytes);
  CHECK(s2.pool_bytes == s0.pool_bytes + block(200));
  pthread_barrier_wait(&bar);
  pthread_join(t, NULL);
  CHECK(stats().pool_bytes == s0.pool_bytes);
  pthread_barrier_destroy(&bar);
}

static void test_fork(void) {
  void *p = thrifty_malloc(500);
  pid_t pid = fork();
  if (pid == 0) {
    /* The child allocates, frees the parent's object, and refills. */
    void *q = thrifty_malloc(500);
    thrifty_free(p);
    void *r = thrifty_malloc(50000);
    _exit(q && r ? 0 : 1);
  }
  CHECK(check_wait_child(pid, "fork"));
  thrifty_free(p);
}

int main(void) {
  test_first_fit_split_coalesce();
  test_refill();
  test_exhaustion();
  test_threads();
  test_fork();
  return check_exit();
}
