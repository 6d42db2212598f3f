/* What the allocator workload programs share: a table of integer options (one source for
 * parsing, --help and the "params" JSON member), the timed run of the worker threads, the
 * object stamps that let every workload check its own data, and the one-JSON-object report
 * of DESIGN.md.
 *
 * These programs link only bench_common, never libtxalloc: they must measure whatever
 * malloc LD_PRELOAD puts under them (glibc, jemalloc, tcmalloc, tbbmalloc, mimalloc,
 * txalloc). */
#ifndef TXALLOC_BENCH_ALLOC_WORKLOAD_H
#define TXALLOC_BENCH_ALLOC_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

/* One integer option: --name=N or --name N. `value` holds the default until parsed. */
typedef struct wl_option {
  const char *name;
  long *value;
  long min, max;
  const char *help;
} wl_option;

/* A workload's command line. `scale` names the one option that sets the amount of work
 * (linearly), so the study harness can scale runs; it must be one of `options`. The
 * options named "threads" and "seed" are reported at the top level and in params
 * respectively like any other; "threads" must exist. */
typedef struct wl_program {
  const char *name;
  const char *summary; /* one paragraph for --help: what the workload does, its source */
  const char *scale;
  wl_option *options;
  int count;
} wl_program;

/* Parses argv against the table with bench_parse_args: --help prints usage and exits 0; an
 * unknown option, a missing value or a value out of range prints a message and exits 2, and
 * so does, when txalloc is the preloaded allocator, an unknown TXALLOC_* variable or a bad
 * value (without txalloc in the process those variables change nothing). */
void wl_parse(const wl_program *prog, int argc, char **argv);
long wl_threads(const wl_program *prog);
/* The check of every workload with --min and --max size options: min > max prints
 * "--min A is larger than --max B" and exits 2. */
void wl_check_size_range(long min, long max);

/* ---- Running the workers ----
 * wl_run_threads runs fn(index, arg) on the program's `threads` threads, started together
 * (bench_run_threads), and returns the wall-clock seconds from before the start to after
 * the join: what every workload reports as time_s. (bench_run_threads' own result, the
 * CPU time of the run, is not what these programs report.) */
double wl_run_threads(const wl_program *prog, bench_thread_fn fn, void *arg);
/* A per-thread entry that its thread writes while the others run starts a cache line of
 * its own: otherwise two threads' entries may share a line, and the run measures that
 * false sharing, more or less of it depending on where the allocator under test put the
 * array. Put WL_OWN_LINE on the entry type's first member. */
#define WL_OWN_LINE _Alignas(64)

/* For workers that count into an entry of their own: allocates a zeroed, 64-byte aligned
 * array of one `entry_size`-byte entry per thread (entry_size a multiple of 64: an entry
 * type with WL_OWN_LINE), runs fn(index, array) as wl_run_threads does, stores its
 * wall-clock seconds in *time_s and returns the array (the caller frees it). */
void *wl_run_counting(const wl_program *prog, size_t entry_size, bench_thread_fn fn,
                      double *time_s);

/* ---- Object stamps ----
 * A stamp writes a word derived from `tag` at every 64-byte step of the object (so every
 * cache line of it is touched, as a program using the object would) and the object's
 * final bytes; wl_verify checks them. A stamp over `size` bytes verifies over any
 * prefix length <= size, which is what realloc preserves. */
void wl_stamp(void *object, size_t size, uint64_t tag);
bool wl_verify(const void *object, size_t size, uint64_t tag);
/* Records a failed check (message on stderr for the first few); wl_report then reports
 * the run as not valid. Thread-safe. */
void wl_corrupt(const char *what, const void *object, uint64_t tag);
/* A tag unique per (stream, counter), well mixed so neighbouring objects differ. */
uint64_t wl_tag(uint64_t stream, uint64_t counter);

/* wl_verify, and wl_corrupt when it fails; returns the verdict. */
bool wl_check(const char *what, const void *object, size_t size, uint64_t tag);

/* A place for one stamped object of the workload's own, or none (object NULL). */
typedef struct wl_slot {
  void *object;
  size_t size;
  uint64_t tag;
} wl_slot;
/* Mallocs `size` bytes into the empty slot and stamps them with `tag`. */
void wl_slot_fill(wl_slot *slot, size_t size, uint64_t tag);
/* Checks the slot's object ("object before free"), frees it and empties the slot. */
void wl_slot_release(wl_slot *slot);
/* Reallocs the slot's object to `size` bytes, checks the prefix realloc kept and stamps
 * the whole object anew with `tag`. */
void wl_slot_resize(wl_slot *slot, size_t size, uint64_t tag);

/* malloc/realloc that end the program (exit 1, message on stderr) on NULL. */
void *wl_malloc(size_t size);
void *wl_realloc(void *object, size_t size);
/* calloc that ends the program the same way; count 0 still gives a freeable object. */
void *wl_calloc(size_t count, size_t size);
/* wl_calloc for per-thread entries (WL_OWN_LINE types): zeroed, 64-byte aligned. */
void *wl_calloc_lines(size_t count, size_t size);

/* ---- Report ----
 * Writes the run's one JSON object to stdout: workload, params (every option but
 * threads), threads, allocator, results {time_s, ops, ops_per_s, + extra}, memory,
 * valid; a one-line summary to stderr. `extra` (may be NULL) adds members to "results".
 * `valid` is ANDed with "no wl_corrupt call". Returns the exit status: 0 when valid,
 * 1 otherwise. */
typedef void (*wl_extra_fn)(bench_json *j, void *ctx);
int wl_report(const wl_program *prog, double time_s, uint64_t ops, wl_extra_fn extra, void *ctx,
              bool valid);
/* The extra of a workload that adds one unsigned member to "results": ctx is a
 * wl_uint_member. */
typedef struct wl_uint_member {
  const char *name;
  uint64_t value;
} wl_uint_member;
void wl_extra_uint(bench_json *j, void *ctx);

/* Random size in [min, max]. */
size_t wl_size_between(bench_rng *rng, long min, long max);
/* Random size in [min, max], 1 <= min <= max, log-uniform: every doubling of the size is
 * about as likely as the next, so small objects dominate the count and large ones the
 * bytes, as in the traces the allocator benchmarks imitate. */
size_t wl_size_log_uniform(bench_rng *rng, long min, long max);

#endif
