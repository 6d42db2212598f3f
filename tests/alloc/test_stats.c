/* The statistics reflect what the program did, and print as JSON/text without allocating.
 *
 * Workload: (1) 10000 small mallocs of known sizes: mallocs +10000, live_bytes grows by
 * exactly the sum of their usable sizes; freeing them: frees +10000, live_bytes back.
 * Every entry point counts as one malloc (calloc, realloc of NULL, the aligned ones).
 * (2) 20 large objects of 4 MiB: large_mallocs +20. (3) 200 malloc/free pairs of the same
 * 2 MiB size: served from the large-object cache (large_cache_hits grows, os_maps grows by
 * far fewer than 200). (4) 1000 objects freed by another thread: remote_frees +1000.
 * (5) Gauges: reserved >= committed >= live > 0. (6) txalloc_stats_print_json writes one
 * JSON object naming every counter and gauge with the same values; txalloc_stats_print
 * writes text naming them too. */
#include <unistd.h>

#include "alloc_test.h"
#include "check.h"
#include "txalloc/txalloc.h"

#define D(field) (after.field - before.field)

static void *free_all(void *arg) {
  void **p = (void **)arg;
  for (int i = 0; i < 1000; i++) txalloc_free(p[i]);
  return NULL;
}

/* Reads what `print` writes to a pipe. */
static size_t capture(void (*print)(int), char *buf, size_t cap) {
  int fds[2];
  if (pipe(fds) != 0) exit(2);
  print(fds[1]);
  close(fds[1]);
  size_t len = 0;
  ssize_t n;
  while (len + 1 < cap && (n = read(fds[0], buf + len, cap - 1 - len)) > 0) len += (size_t)n;
  buf[len] = 0;
  close(fds[0]);
  return len;
}

/* The number after "name": in a JSON text, or -1. */
static long long json_number(const char *json, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\"", name);
  const char *k = strstr(json, key);
  if (!k) return -1;
  k += strlen(key);
  while (*k == ' ' || *k == ':') k++;
  return strtoll(k, NULL, 10);
}

int main(void) {
  txalloc_stats before, after;
  enum { N = 10000 };
  static void *p[N];

  /* (1) */
  txalloc_stats_get(&before);
  uint64_t usable = 0;
  for (int i = 0; i < N; i++) {
    p[i] = txalloc_malloc(1 + (size_t)(i % 700));
    CHECK(p[i] != NULL);
    usable += txalloc_usable_size(p[i]);
  }
  txalloc_stats_get(&after);
  CHECKF(D(mallocs) == N, "mallocs +%llu", (unsigned long long)D(mallocs));
  CHECKF(D(live_bytes) == usable, "live_bytes +%llu, usable sizes %llu",
         (unsigned long long)D(live_bytes), (unsigned long long)usable);
  CHECK(after.live_bytes > 0 && after.committed_bytes >= after.live_bytes &&
        after.reserved_bytes >= after.committed_bytes); /* (5) */
  CHECK(after.blocks_in_use > 0);
  for (int i = 0; i < N; i++) txalloc_free(p[i]);
  txalloc_stats_get(&after);
  CHECKF(D(frees) == N, "frees +%llu", (unsigned long long)D(frees));
  CHECKF(D(live_bytes) == 0, "live_bytes +%lld after freeing all", (long long)D(live_bytes));

  /* Every entry point is one malloc. */
  txalloc_stats_get(&before);
  void *q[8];
  q[0] = txalloc_calloc(3, 5);
  q[1] = txalloc_realloc(NULL, 40);
  q[2] = txalloc_aligned_alloc(64, 64);
  CHECK(txalloc_posix_memalign(&q[3], 128, 10) == 0);
  q[4] = txalloc_memalign(256, 10);
  q[5] = txalloc_valloc(10);
  q[6] = txalloc_pvalloc(10);
  q[7] = txalloc_reallocarray(NULL, 4, 4);
  txalloc_stats_get(&after);
  CHECKF(D(mallocs) == 8, "8 entry points counted %llu mallocs", (unsigned long long)D(mallocs));
  for (int i = 0; i < 8; i++) txalloc_free(q[i]);
  txalloc_stats_get(&after);
  CHECK(D(frees) == 8 && D(live_bytes) == 0);

  /* (2) */
  txalloc_stats_get(&before);
  for (int i = 0; i < 20; i++) p[i] = txalloc_malloc((size_t)4 << 20);
  txalloc_stats_get(&after);
  CHECKF(D(large_mallocs) == 20, "large_mallocs +%llu", (unsigned long long)D(large_mallocs));
  CHECK(D(live_bytes) >= (uint64_t)20 * (4 << 20));
  for (int i = 0; i < 20; i++) txalloc_free(p[i]);

  /* (3) */
  txalloc_stats_get(&before);
  for (int i = 0; i < 200; i++) {
    void *big = txalloc_malloc((size_t)2 << 20);
    CHECK(big != NULL);
    if (big) memset(big, 1, 4096);
    txalloc_free(big);
  }
  txalloc_stats_get(&after);
  CHECKF(D(large_cache_hits) >= 150, "large cache hits +%llu of 200",
         (unsigned long long)D(large_cache_hits));
  CHECKF(D(os_maps) <= 20, "200 large malloc/free pairs made %llu mmap calls",
         (unsigned long long)D(os_maps));

  /* (4) */
  for (int i = 0; i < 1000; i++) p[i] = txalloc_malloc(32);
  txalloc_stats_get(&before);
  pthread_t t;
  if (pthread_create(&t, NULL, free_all, p) != 0) return 2;
  pthread_join(t, NULL);
  txalloc_stats_get(&after);
  CHECKF(D(remote_frees) == 1000, "remote_frees +%llu", (unsigned long long)D(remote_frees));
  CHECKF(D(frees) == 1000, "frees +%llu", (unsigned long long)D(frees));

  /* (6) */
  static char json[16384], text[16384];
  txalloc_stats_get(&after);
  size_t jlen = capture(txalloc_stats_print_json, json, sizeof json);
  size_t tlen = capture(txalloc_stats_print, text, sizeof text);
  CHECK(jlen > 2 && json[0] == '{' && json[jlen - 1] == '}');
  CHECK(tlen > 0);
#define NAMED(name, doc)                                                                           \
  CHECKF(json_number(json, #name) >= 0, "JSON lacks %s: %s", #name, json);                         \
  CHECKF(strstr(text, #name) != NULL, "text lacks %s", #name);
  TXALLOC_STATS_COUNTERS(NAMED)
  TXALLOC_STATS_GAUGES(NAMED)
#undef NAMED
  /* The JSON shows the values of the stats_get just before (nothing allocated since). */
  CHECKF(json_number(json, "mallocs") == (long long)after.mallocs, "JSON mallocs %lld vs %llu",
         json_number(json, "mallocs"), (unsigned long long)after.mallocs);
  CHECKF(json_number(json, "remote_frees") == (long long)after.remote_frees,
         "JSON remote_frees %lld vs %llu", json_number(json, "remote_frees"),
         (unsigned long long)after.remote_frees);
  return check_exit();
}
