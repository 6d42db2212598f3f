/* idle-owners: does memory freed by other threads go back to the OS while the threads
 * that allocated it live on, idle? (Our own program.) `threads` owner threads together
 * malloc `mib` MiB (requested bytes) of objects of sizes uniform in [`min`, `max`]
 * (16..512 B by default), stamp them and publish them; then they block on a condition
 * variable and do nothing. `freers` other threads check and free every object (freer j
 * takes the j-th contiguous share of all the objects, owner after owner) and exit. The
 * main thread then waits `settle` seconds and reads the resident set (/proc/self/statm):
 * `rss_after_mib`, the metric, lower is better. Only then are the owners released to
 * exit. A server whose workers went idle after a burst is in this state: an allocator
 * that returns memory only on its owner's next call or exit keeps the burst's peak for
 * good.
 * The workload's own bookkeeping (the arrays of published pointers) lives in anonymous
 * mappings outside the allocator and is unmapped before the measurements, so the resident
 * set after the frees is the allocator's (plus the program's small fixed footprint,
 * `rss_base_mib`, measured at the start). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static long threads = 4, freers = 4, mib = 1024, min_size = 16, max_size = 512, settle = 2,
            seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "owner threads: they allocate, then stay alive and idle"},
    {"freers", &freers, 1, 1024, "threads that free the owners' objects, then exit"},
    {"mib", &mib, 1, 1L << 20, "MiB allocated by the owners together (requested bytes)"},
    {"min", &min_size, 1, 1L << 20, "smallest object size in bytes"},
    {"max", &max_size, 1, 1L << 20, "largest object size in bytes"},
    {"settle", &settle, 0, 3600, "seconds between the last free and the measurement"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "idle-owners",
    "Memory return while the owners idle: owner threads allocate MiB of small objects and\n"
    "publish them; other threads free them all while the owners stay alive and blocked; after\n"
    "--settle seconds the resident set is the result rss_after_mib (lower is better).",
    "mib", options, sizeof options / sizeof options[0]};

typedef struct item {
  void *object;
  uint32_t size;
} item;

typedef struct owner {
  pthread_t tid;
  int index;
  item *items; /* an anonymous mapping of `capacity` items */
  size_t capacity, count;
  uint64_t bytes;
} owner;

typedef struct freer {
  pthread_t tid;
  size_t first, end; /* global object indices, owner after owner */
  size_t freed;
} freer;

static owner *owners;
static pthread_barrier_t allocated;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static bool released;

/* Resident set in MiB from /proc/self/statm, read without stdio so that the measurement
 * allocates nothing. */
static double rss_mib(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static void *map_items(size_t count) {
  void *p = mmap(NULL, count * sizeof(item), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "idle-owners: mmap of %zu items: %s\n", count, strerror(errno));
    exit(1);
  }
  return p;
}

static void *owner_main(void *arg) {
  owner *o = arg;
  uint64_t share = ((uint64_t)mib << 20) / (uint64_t)threads;
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)o->index);
  uint64_t stream = (uint64_t)o->index + 1;
  while (o->bytes < share) {
    if (o->count == o->capacity) {
      fprintf(stderr, "idle-owners: owner %d ran out of slots\n", o->index);
      exit(1);
    }
    uint32_t size = (uint32_t)wl_size_between(&rng, min_size, max_size);
    void *p = wl_malloc(size);
    wl_stamp(p, size, wl_tag(stream, o->count));
    o->items[o->count++] = (item){p, size};
    o->bytes += size;
  }
  pthread_barrier_wait(&allocated); /* publishes items and count to the main thread */
  pthread_mutex_lock(&idle_lock);
  while (!released) pthread_cond_wait(&idle_cond, &idle_lock);
  pthread_mutex_unlock(&idle_lock);
  return NULL;
}

static void *freer_main(void *arg) {
  freer *f = arg;
  size_t base = 0; /* global index of owners[k].items[0] */
  for (long k = 0; k < threads && base < f->end; k++) {
    owner *o = &owners[k];
    size_t lo = f->first > base ? f->first - base : 0;
    size_t hi = f->end - base < o->count ? f->end - base : o->count;
    for (size_t i = lo; i < hi; i++) {
      wl_check("object of an idle owner", o->items[i].object, o->items[i].size,
               wl_tag((uint64_t)k + 1, i));
      free(o->items[i].object);
      f->freed++;
    }
    base += o->count;
  }
  return NULL;
}

static void sleep_seconds(long seconds) {
  struct timespec left = {seconds, 0};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

static void start(pthread_t *tid, void *(*fn)(void *), void *arg) {
  int rc = pthread_create(tid, NULL, fn, arg);
  if (rc) {
    fprintf(stderr, "idle-owners: pthread_create: %s\n", strerror(rc));
    exit(1);
  }
}

typedef struct figures {
  double rss_base, rss_peak, rss_after_free, rss_after, hwm, alloc_s, free_s;
  size_t objects;
  uint64_t bytes;
} figures;

static void extra(bench_json *j, void *ctx) {
  figures *f = ctx;
  bench_json_double(j, "rss_after_mib", f->rss_after);
  bench_json_double(j, "rss_peak_mib", f->rss_peak);
  bench_json_double(j, "rss_after_free_mib", f->rss_after_free);
  bench_json_double(j, "rss_base_mib", f->rss_base);
  bench_json_double(j, "hwm_mib", f->hwm);
  bench_json_uint(j, "objects", f->objects);
  bench_json_double(j, "allocated_mib", (double)f->bytes / (1024.0 * 1024.0));
  bench_json_double(j, "alloc_s", f->alloc_s);
  bench_json_double(j, "free_s", f->free_s);
  bench_json_int(j, "settle_s", settle);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  figures fig = {.rss_base = rss_mib()};
  owners = calloc((size_t)threads, sizeof *owners);
  freer *fs = calloc((size_t)freers, sizeof *fs);
  if (!owners || !fs || pthread_barrier_init(&allocated, NULL, (unsigned)threads + 1) != 0) exit(1);
  uint64_t share = ((uint64_t)mib << 20) / (uint64_t)threads;

  double t0 = bench_now();
  for (long k = 0; k < threads; k++) {
    owners[k].index = (int)k;
    owners[k].capacity = (size_t)(share / (uint64_t)min_size) + 1;
    owners[k].items = map_items(owners[k].capacity);
    start(&owners[k].tid, owner_main, &owners[k]);
  }
  pthread_barrier_wait(&allocated);
  double t1 = bench_now();
  fig.rss_peak = rss_mib();

  for (long k = 0; k < threads; k++) {
    fig.objects += owners[k].count;
    fig.bytes += owners[k].bytes;
  }
  for (long j = 0; j < freers; j++) {
    fs[j].first = fig.objects * (size_t)j / (size_t)freers;
    fs[j].end = fig.objects * (size_t)(j + 1) / (size_t)freers;
    start(&fs[j].tid, freer_main, &fs[j]);
  }
  size_t freed = 0;
  for (long j = 0; j < freers; j++) {
    pthread_join(fs[j].tid, NULL);
    freed += fs[j].freed;
  }
  double t2 = bench_now();
  for (long k = 0; k < threads; k++) munmap(owners[k].items, owners[k].capacity * sizeof(item));

  fig.rss_after_free = rss_mib();
  sleep_seconds(settle);
  fig.rss_after = rss_mib();
  fig.hwm = (double)bench_peak_rss_kib() / 1024.0;
  fig.alloc_s = t1 - t0;
  fig.free_s = t2 - t1;

  pthread_mutex_lock(&idle_lock); /* the measurement is taken: the owners may exit */
  released = true;
  pthread_cond_broadcast(&idle_cond);
  pthread_mutex_unlock(&idle_lock);
  for (long k = 0; k < threads; k++) pthread_join(owners[k].tid, NULL);
  pthread_barrier_destroy(&allocated);
  free(fs);
  free(owners);

  bool valid = freed == fig.objects && fig.bytes >= share * (uint64_t)threads && fig.rss_peak > 0 &&
               fig.rss_after > 0;
  /* ops: mallocs plus frees; time_s: the allocating and freeing phases, not the settling */
  return wl_report(&program, t2 - t0, 2ULL * fig.objects, extra, &fig, valid);
}
