/* workload.h: option table, stamps, report. */
#define _GNU_SOURCE
#include "workload.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Options ---- */

static void print_output_note(FILE *out) {
  fprintf(out,
          "\nOutput: one JSON object on stdout (workload, params, threads, allocator, results\n"
          "{time_s, ops, ops_per_s, ...}, memory {peak_rss_kib}, valid); text on stderr.\n"
          "Exit status: 0 valid run, 1 failed self-check, 2 bad arguments or, with txalloc\n"
          "preloaded, an unknown TXALLOC_* variable or a bad value.\n"
          "The allocator is whatever malloc the process gets (use LD_PRELOAD to choose).\n");
}

void wl_parse(const wl_program *prog, int argc, char **argv) {
  bench_arg *args = calloc((size_t)prog->count, sizeof *args);
  if (!args) exit(1);
  for (int i = 0; i < prog->count; i++) {
    const wl_option *o = &prog->options[i];
    const char *help = o->help;
    char *noted = NULL;
    if (strcmp(o->name, prog->scale) == 0 &&
        asprintf(&noted, "%s (scale knob: work grows linearly with it)", o->help) > 0)
      help = noted;
    args[i] = (bench_arg)BENCH_LONG(o->name, o->value, o->min, o->max, help);
  }
  const bench_cli cli = {
      .summary = prog->summary, .args = args, .count = prog->count, .help_tail = print_output_note};
  bench_parse_args(&cli, argc, argv);
  for (int i = 0; i < prog->count; i++)
    if (args[i].help != prog->options[i].help) free((char *)args[i].help);
  free(args);
}

static long *find_option(const wl_program *prog, const char *name) {
  for (int i = 0; i < prog->count; i++)
    if (strcmp(prog->options[i].name, name) == 0) return prog->options[i].value;
  return NULL;
}

long wl_threads(const wl_program *prog) {
  long *t = find_option(prog, "threads");
  return t ? *t : 1;
}

void wl_check_size_range(long min, long max) {
  if (min > max) bench_usage_error("--min %ld is larger than --max %ld", min, max);
}

/* ---- Running the workers ---- */

double wl_run_threads(const wl_program *prog, bench_thread_fn fn, void *arg) {
  double start = bench_now();
  bench_run_threads((int)wl_threads(prog), fn, arg);
  return bench_now() - start;
}

void *wl_run_counting(const wl_program *prog, size_t entry_size, bench_thread_fn fn,
                      double *time_s) {
  if (entry_size % 64 != 0) {
    fprintf(stderr, "%s: per-thread entries of %zu bytes share cache lines\n", prog->name,
            entry_size);
    exit(1);
  }
  void *entries = wl_calloc_lines((size_t)wl_threads(prog), entry_size);
  *time_s = wl_run_threads(prog, fn, entries);
  return entries;
}

/* ---- Stamps ---- */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t wl_tag(uint64_t stream, uint64_t counter) {
  return mix64((stream << 40) ^ counter ^ 0x5bd1e9955bd1e995ULL);
}

/* The word stamped at byte offset `off`; differs per line so a block copied to the wrong
 * place, or two objects overlapping, shows. */
static uint64_t stamp_word(uint64_t tag, size_t off) { return tag ^ (off * 0x9e3779b97f4a7c15ULL); }

void wl_stamp(void *object, size_t size, uint64_t tag) {
  unsigned char *p = object;
  for (size_t off = 0; off < size; off += 64) {
    uint64_t w = stamp_word(tag, off);
    size_t n = size - off < 8 ? size - off : 8;
    memcpy(p + off, &w, n);
  }
}

bool wl_verify(const void *object, size_t size, uint64_t tag) {
  const unsigned char *p = object;
  for (size_t off = 0; off < size; off += 64) {
    uint64_t w = stamp_word(tag, off);
    size_t n = size - off < 8 ? size - off : 8;
    if (memcmp(p + off, &w, n) != 0) return false;
  }
  return true;
}

static atomic_long corruptions;

void wl_corrupt(const char *what, const void *object, uint64_t tag) {
  long n = atomic_fetch_add(&corruptions, 1);
  if (n < 5)
    fprintf(stderr, "%s: check failed: %s (object %p, tag %016llx)\n", bench_allocator_name(), what,
            object, (unsigned long long)tag);
}

bool wl_check(const char *what, const void *object, size_t size, uint64_t tag) {
  if (wl_verify(object, size, tag)) return true;
  wl_corrupt(what, object, tag);
  return false;
}

void wl_slot_fill(wl_slot *slot, size_t size, uint64_t tag) {
  slot->object = wl_malloc(size);
  slot->size = size;
  slot->tag = tag;
  wl_stamp(slot->object, size, tag);
}

void wl_slot_release(wl_slot *slot) {
  wl_check("object before free", slot->object, slot->size, slot->tag);
  free(slot->object);
  slot->object = NULL;
}

void wl_slot_resize(wl_slot *slot, size_t size, uint64_t tag) {
  size_t kept = size < slot->size ? size : slot->size;
  slot->object = wl_realloc(slot->object, size);
  wl_check("prefix kept by realloc", slot->object, kept, slot->tag);
  slot->size = size;
  slot->tag = tag;
  wl_stamp(slot->object, size, tag);
}

void *wl_malloc(size_t size) {
  void *p = malloc(size);
  if (!p) {
    fprintf(stderr, "malloc(%zu) failed\n", size);
    exit(1);
  }
  return p;
}

void *wl_realloc(void *object, size_t size) {
  void *p = realloc(object, size);
  if (!p) {
    fprintf(stderr, "realloc(%zu) failed\n", size);
    exit(1);
  }
  return p;
}

void *wl_calloc_lines(size_t count, size_t size) {
  size_t bytes = (count ? count : 1) * size;
  void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!p) {
    fprintf(stderr, "aligned_alloc(64, %zu) failed\n", bytes);
    exit(1);
  }
  memset(p, 0, bytes);
  return p;
}

void *wl_calloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size);
  if (!p) {
    fprintf(stderr, "calloc(%zu, %zu) failed\n", count, size);
    exit(1);
  }
  return p;
}

size_t wl_size_between(bench_rng *rng, long min, long max) {
  return (size_t)min + (size_t)bench_rng_below(rng, (uint64_t)(max - min + 1));
}

size_t wl_size_log_uniform(bench_rng *rng, long min, long max) {
  double u = (double)(bench_rng_next(rng) >> 11) * 0x1.0p-53; /* uniform in [0, 1) */
  double size = (double)min * exp(u * log(((double)max + 1.0) / (double)min));
  size_t s = (size_t)size;
  return s < (size_t)min ? (size_t)min : s > (size_t)max ? (size_t)max : s;
}

/* ---- Report ---- */

int wl_report(const wl_program *prog, double time_s, uint64_t ops, wl_extra_fn extra, void *ctx,
              bool valid) {
  long n = atomic_load(&corruptions);
  if (n) {
    fprintf(stderr, "%s: %ld failed checks\n", prog->name, n);
    valid = false;
  }
  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", prog->name);
  bench_json_object(&j, "params");
  for (int i = 0; i < prog->count; i++)
    if (strcmp(prog->options[i].name, "threads") != 0)
      bench_json_int(&j, prog->options[i].name, *prog->options[i].value);
  bench_json_end(&j);
  bench_json_int(&j, "threads", wl_threads(prog));
  bench_json_allocator(&j);
  bench_json_object(&j, "results");
  bench_json_double(&j, "time_s", time_s);
  bench_json_uint(&j, "ops", ops);
  bench_json_double(&j, "ops_per_s", time_s > 0 ? (double)ops / time_s : 0.0);
  if (extra) extra(&j, ctx);
  bench_json_end(&j);
  bench_json_memory(&j);
  bench_json_bool(&j, "valid", valid);
  bench_json_finish(&j);
  fprintf(stderr, "%s: %s, %ld threads: %.3f s, %llu ops, %.3g ops/s%s\n", prog->name,
          bench_allocator_name(), wl_threads(prog), time_s, (unsigned long long)ops,
          time_s > 0 ? (double)ops / time_s : 0.0, valid ? "" : ", NOT VALID");
  return valid ? 0 : 1;
}

void wl_extra_uint(bench_json *j, void *ctx) {
  const wl_uint_member *member = ctx;
  bench_json_uint(j, member->name, member->value);
}
