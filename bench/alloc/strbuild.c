/* strbuild: a realloc-heavy string builder (our own design, the pattern of log formatters,
 * serializers and text assembly in any program). Each thread keeps `builders` strings
 * under construction. Every step appends a piece of 1..`piece` bytes to a random builder,
 * growing its buffer by realloc when full, by one of two policies chosen per builder:
 *   small steps  the buffer grows to the new length rounded up to 32 bytes, so nearly
 *                every append is a realloc by a few bytes (naive code; the allocator's
 *                in-place growth decides the cost);
 *   geometric    the capacity grows by half (x1.5), so reallocs are rare and large.
 * A builder is finished when it reaches its target length (log-uniform in [`min`, `max`]):
 * its text is checked whole; `shrink` percent of them are then cut to a random prefix of
 * a quarter to three quarters and realloc'd down (shrink in place, or move), and checked
 * again; then the string is freed and a new builder starts in its slot. The text is a
 * pattern that depends on the builder's tag and the position, so every check reads what
 * the reallocs had to keep. */
#include <stdlib.h>
#include <string.h>

#include "workload.h"

static long threads = 2, appends = 10000000, builders = 256, piece = 48, min_len = 16,
            max_len = 65536, geometric = 50, shrink = 25, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads, each doing the same work"},
    {"appends", &appends, 1, 1L << 40, "appends per thread"},
    {"builders", &builders, 1, 1L << 20, "strings under construction per thread"},
    {"piece", &piece, 1, 64, "longest piece appended at once, in bytes"},
    {"min", &min_len, 1, 1L << 30, "shortest finished string, in bytes"},
    {"max", &max_len, 1, 1L << 30, "longest finished string, in bytes"},
    {"geometric", &geometric, 0, 100,
     "percent of builders that grow geometrically (x1.5); the rest grow by small steps"},
    {"shrink", &shrink, 0, 100, "percent of finished strings cut to a prefix and realloc'd down"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "strbuild",
    "A realloc-heavy string builder: many strings grow by appends (realloc by small steps or\n"
    "geometrically), some are cut and realloc'd down when finished, then freed.",
    "appends", options, sizeof options / sizeof options[0]};

enum { PERIOD = 64 };
/* PERIOD + the longest piece: a piece starting at any phase of the pattern is one memcpy. */
static char pattern[PERIOD + 64];

typedef struct builder {
  char *text;
  size_t len, cap, target;
  uint64_t tag;
  bool geometric;
} builder;

typedef struct thread_totals {
  WL_OWN_LINE uint64_t appends, reallocs, shrinks, strings, bytes;
} thread_totals;

static const char *expected_at(uint64_t tag, size_t pos) {
  return pattern + (size_t)((tag + pos) % PERIOD);
}

/* The first `len` bytes follow the builder's pattern, and a NUL ends them. */
static bool text_ok(const builder *b, size_t len) {
  for (size_t pos = 0; pos < len; pos += PERIOD) {
    size_t n = len - pos < PERIOD ? len - pos : PERIOD;
    if (memcmp(b->text + pos, expected_at(b->tag, pos), n) != 0) return false;
  }
  return b->text[len] == 0;
}

static void start(builder *b, bench_rng *rng, uint64_t tag) {
  b->geometric = (long)bench_rng_below(rng, 100) < geometric;
  b->target = wl_size_log_uniform(rng, min_len, max_len);
  b->cap = 16;
  b->text = wl_malloc(b->cap);
  b->text[0] = 0;
  b->len = 0;
  b->tag = tag;
}

static void finish(builder *b, bench_rng *rng, thread_totals *t) {
  if (!text_ok(b, b->len)) wl_corrupt("finished string", b->text, b->tag);
  if ((long)bench_rng_below(rng, 100) < shrink) {
    size_t quarter = b->len / 4;
    size_t keep = quarter + (size_t)bench_rng_below(rng, 2 * quarter + 1);
    b->text = wl_realloc(b->text, keep + 1);
    b->text[keep] = 0;
    if (!text_ok(b, keep)) wl_corrupt("prefix kept by a shrinking realloc", b->text, b->tag);
    t->shrinks++;
  }
  free(b->text);
  t->strings++;
}

static void append(builder *b, bench_rng *rng, thread_totals *t) {
  size_t n = 1 + (size_t)bench_rng_below(rng, (uint64_t)piece);
  size_t need = b->len + n + 1;
  if (need > b->cap) {
    size_t cap = b->geometric ? b->cap + b->cap / 2 : (need + 31) & ~(size_t)31;
    b->cap = cap < need ? need : cap;
    b->text = wl_realloc(b->text, b->cap);
    t->reallocs++;
  }
  memcpy(b->text + b->len, expected_at(b->tag, b->len), n);
  b->len += n;
  b->text[b->len] = 0;
  t->appends++;
  t->bytes += n;
}

static void worker(int index, void *arg) {
  thread_totals *t = &((thread_totals *)arg)[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  uint64_t stream = (uint64_t)index + 1, counter = 0;
  builder *slots = wl_calloc((size_t)builders, sizeof *slots);
  for (long i = 0; i < builders; i++) start(&slots[i], &rng, wl_tag(stream, counter++));
  for (long i = 0; i < appends; i++) {
    builder *b = &slots[bench_rng_below(&rng, (uint64_t)builders)];
    append(b, &rng, t);
    if (b->len >= b->target) {
      finish(b, &rng, t);
      start(b, &rng, wl_tag(stream, counter++));
    }
  }
  for (long i = 0; i < builders; i++) {
    if (!text_ok(&slots[i], slots[i].len)) wl_corrupt("unfinished string", slots[i].text, 0);
    free(slots[i].text);
  }
  free(slots);
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "reallocs", sum->reallocs);
  bench_json_uint(j, "shrinks", sum->shrinks);
  bench_json_uint(j, "strings_finished", sum->strings);
  bench_json_double(j, "appended_mib", (double)sum->bytes / (1024.0 * 1024.0));
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_len, max_len);
  for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (char)('!' + (i % PERIOD) * 93 / PERIOD);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  thread_totals sum = {0};
  for (long i = 0; i < threads; i++) {
    sum.appends += totals[i].appends, sum.reallocs += totals[i].reallocs;
    sum.shrinks += totals[i].shrinks, sum.strings += totals[i].strings;
    sum.bytes += totals[i].bytes;
  }
  free(totals);
  bool valid = sum.appends == (uint64_t)threads * (uint64_t)appends;
  /* ops: appends */
  return wl_report(&program, time_s, sum.appends, extra, &sum, valid);
}
