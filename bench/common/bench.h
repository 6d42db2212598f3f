/* What every bench program shares: the one-JSON-object-per-run output of DESIGN.md, the
 * probe that names the allocator that really served the process, peak RSS, the command
 * line (bench_args.h), a seeded RNG, and timing. No txalloc dependency: allocator
 * workloads must run unchanged under any LD_PRELOADed malloc. */
#ifndef TXALLOC_BENCH_H
#define TXALLOC_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_args.h"

/* ---- JSON writer: nested objects and arrays, commas and escaping handled. ---- */
#define BENCH_JSON_MAX_DEPTH 16
typedef struct bench_json {
  FILE *out;
  int depth;
  bool first[BENCH_JSON_MAX_DEPTH];  /* no member written yet at this depth */
  char closer[BENCH_JSON_MAX_DEPTH]; /* '}' or ']' that ends this depth */
} bench_json;

/* Starts the top-level object on `out` (stdout for a run's result). */
void bench_json_begin(bench_json *j, FILE *out);
/* Ends the top-level object and writes the newline; flushes. */
void bench_json_finish(bench_json *j);
/* Members: `key` names the member inside an object; pass NULL inside an array. */
void bench_json_object(bench_json *j, const char *key); /* opens {, close with _end */
void bench_json_array(bench_json *j, const char *key);  /* opens [, close with _end */
void bench_json_end(bench_json *j);
void bench_json_str(bench_json *j, const char *key, const char *value);
void bench_json_int(bench_json *j, const char *key, long long value);
void bench_json_uint(bench_json *j, const char *key, unsigned long long value);
void bench_json_double(bench_json *j, const char *key, double value);
void bench_json_bool(bench_json *j, const char *key, bool value);
/* Copies the members of `object`, the text of one JSON object ("{...}", e.g. what a
 * library printed about itself), into the object open now; aborts when `object` is not
 * braced. */
void bench_json_members(bench_json *j, const char *object);

/* "allocator": {"name": ..., "path": ...}: the library that defines the malloc this
 * process calls (dladdr of the resolved symbol), named glibc, jemalloc, tcmalloc,
 * tbbmalloc, mimalloc, txalloc, or the file's base name when unknown. */
void bench_json_allocator(bench_json *j);
/* The name alone, e.g. for stderr. */
const char *bench_allocator_name(void);
/* Peak resident set in KiB: VmHWM of /proc/self/status (getrusage where /proc is
 * missing). */
long bench_peak_rss_kib(void);
/* "memory": {"peak_rss_kib": N}. */
void bench_json_memory(bench_json *j);

/* ---- Time and randomness ---- */
double bench_now(void); /* monotonic seconds */
typedef struct bench_rng {
  uint64_t s;
} bench_rng;
/* Distinct deterministic streams per (seed, stream) pair, e.g. stream = thread index. */
void bench_rng_seed(bench_rng *r, uint64_t seed, uint64_t stream);
/* Inline: workloads draw one or two numbers per operation of a few nanoseconds, and a call
 * into the library keeps the state in memory; the harness should cost both TMs compared as
 * little as possible. xorshift64*. */
static inline uint64_t bench_rng_next(bench_rng *r) {
  uint64_t s = r->s;
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  r->s = s;
  return s * 0x2545f4914f6cdd1dULL;
}
/* Uniform in [0, bound), bound > 0: Lemire's multiply-shift (bias < bound / 2^64). */
static inline uint64_t bench_rng_below(bench_rng *r, uint64_t bound) {
  return (uint64_t)(((unsigned __int128)bench_rng_next(r) * bound) >> 64);
}

/* ---- Threads: run fn(index, arg) on n threads that start together (a barrier). Both
 * runners return the CPU time the process used meanwhile (every thread, user and system,
 * in seconds): the cost of the run's operations, which the load of other processes on the
 * machine changes much less than their wall-clock rate. ---- */
typedef void (*bench_thread_fn)(int index, void *arg);
double bench_run_threads(int n, bench_thread_fn fn, void *arg);

/* The parallel region: both runners call `begin` before they start their threads and `end`
 * after they joined them. A program whose allocation layer profiles allocations by region
 * installs them (bench_profile.h); by default there are none. */
typedef void (*bench_region_fn)(void);
void bench_set_parallel_region(bench_region_fn begin, bench_region_fn end);

/* ---- Timed runs. The workers poll a flag that the calling thread raises when the time is
 * up, so keeping time costs a worker one relaxed load of a line nobody writes until the
 * end (no clock read per operation). The flag has a cache line of its own. ---- */
typedef struct bench_stop {
  _Alignas(64) atomic_bool raised;
} bench_stop;

/* Runs fn(index, arg) on n threads, released by one barrier together with the calling
 * thread, which then sleeps `duration` seconds (CLOCK_MONOTONIC, from the release)
 * and raises `stop`, and returns once every fn has returned. fn should time its own span
 * (bench_now at its start and after it saw the flag): that span, not `duration`, is the
 * honest denominator, since a worker sees the flag an operation late and the sleeper may
 * wake late. */
double bench_run_timed(int n, double duration, bench_stop *stop, bench_thread_fn fn, void *arg);

/* True once the timed run's time is up. */
static inline bool bench_stopped(const bench_stop *stop) {
  return atomic_load_explicit(&stop->raised, memory_order_relaxed);
}

#endif
