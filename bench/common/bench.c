/* bench.h: allocator probe, memory, time, RNG, threads. */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- Allocator probe ---- */

static const char *malloc_library_path(void) {
  void *sym = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info;
  if (sym && dladdr(sym, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

const char *bench_allocator_name(void) {
  static const struct {
    const char *needle, *name;
  } known[] = {
      {"libjemalloc", "jemalloc"}, {"libtcmalloc", "tcmalloc"}, {"libtbbmalloc", "tbbmalloc"},
      {"libmimalloc", "mimalloc"}, {"libtxalloc", "txalloc"},   {"libc.so", "glibc"},
      {"libc-", "glibc"},          {"libtsan", "tsan"},         {"libasan", "asan"},
  };
  const char *path = malloc_library_path();
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strstr(base, known[i].needle)) return known[i].name;
  /* malloc defined in the executable itself: a statically linked allocator. */
  return *base ? base : "unknown";
}

void bench_json_allocator(bench_json *j) {
  bench_json_object(j, "allocator");
  bench_json_str(j, "name", bench_allocator_name());
  bench_json_str(j, "path", malloc_library_path());
  bench_json_end(j);
}

long bench_peak_rss_kib(void) {
  /* VmHWM is the kernel's own high-water mark of resident memory: right whichever malloc
   * is preloaded, and read without allocating through it (fixed buffer, no stdio). */
  long kib = -1;
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      buf[n] = 0;
      const char *line = strstr(buf, "VmHWM:");
      if (line) kib = strtol(line + 6, NULL, 10);
    }
  }
  if (kib < 0) { /* no /proc: getrusage, which Linux reports in KiB */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kib = ru.ru_maxrss;
  }
  return kib;
}

void bench_json_memory(bench_json *j) {
  bench_json_object(j, "memory");
  bench_json_int(j, "peak_rss_kib", bench_peak_rss_kib());
  bench_json_end(j);
}

/* ---- Time and randomness ---- */

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void bench_rng_seed(bench_rng *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
  r->s = splitmix64(&x);
  if (r->s == 0) r->s = 1; /* xorshift state must not be zero */
}

/* ---- Threads ---- */

struct thread_start {
  int index;
  bench_thread_fn fn;
  void *arg;
  pthread_barrier_t *barrier;
};

static void *thread_main(void *p) {
  struct thread_start *s = p;
  pthread_barrier_wait(s->barrier);
  s->fn(s->index, s->arg);
  return NULL;
}

/* Sleeps until `duration` seconds after now on CLOCK_MONOTONIC (the clock of bench_now),
 * resuming after signals. */
static void sleep_for(double duration) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  double whole = (double)(long long)duration;
  until.tv_sec += (time_t)whole;
  until.tv_nsec += (long)((duration - whole) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
  }
}

static bench_region_fn parallel_begin, parallel_end;

void bench_set_parallel_region(bench_region_fn begin, bench_region_fn end) {
  parallel_begin = begin;
  parallel_end = end;
}

/* Starts n threads behind one barrier. When `stop` is given, the calling thread is one
 * more party of the barrier, so its sleep starts with the workers' release. */
static double run_threads(int n, bench_thread_fn fn, void *arg, double duration, bench_stop *stop) {
  double cpu_before = cpu_seconds();
  pthread_t *tids = calloc((size_t)n, sizeof *tids);
  struct thread_start *starts = calloc((size_t)n, sizeof *starts);
  pthread_barrier_t barrier;
  unsigned parties = (unsigned)n + (stop ? 1u : 0u);
  if (!tids || !starts || pthread_barrier_init(&barrier, NULL, parties) != 0) {
    fprintf(stderr, "%s: cannot set up %d threads\n", bench_program(), n);
    exit(1);
  }
  if (parallel_begin) parallel_begin();
  for (int i = 0; i < n; i++) {
    starts[i] = (struct thread_start){i, fn, arg, &barrier};
    int rc = pthread_create(&tids[i], NULL, thread_main, &starts[i]);
    if (rc) {
      fprintf(stderr, "%s: pthread_create: %s\n", bench_program(), strerror(rc));
      exit(1);
    }
  }
  if (stop) {
    pthread_barrier_wait(&barrier);
    sleep_for(duration);
    atomic_store_explicit(&stop->raised, true, memory_order_release);
  }
  for (int i = 0; i < n; i++) pthread_join(tids[i], NULL);
  if (parallel_end) parallel_end();
  double cpu = cpu_seconds() - cpu_before;
  pthread_barrier_destroy(&barrier);
  free(starts);
  free(tids);
  return cpu;
}

double bench_run_threads(int n, bench_thread_fn fn, void *arg) {
  return run_threads(n, fn, arg, 0, NULL);
}

double bench_run_timed(int n, double duration, bench_stop *stop, bench_thread_fn fn, void *arg) {
  atomic_init(&stop->raised, false);
  return run_threads(n, fn, arg, duration, stop);
}
