/* The JSON writer of bench.h. Invariant: depth d > 0 is open, closer[d] ends it, and
 * first[d] is true until its first member is written (then a comma precedes each). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void write_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\t': fputs("\\t", out); break;
    case '\r': fputs("\\r", out); break;
    default:
      if (*p < 0x20)
        fprintf(out, "\\u%04x", *p);
      else
        fputc(*p, out);
    }
  }
  fputc('"', out);
}

/* Writes the separator and, inside an object, the key of the next member. */
static void begin_member(bench_json *j, const char *key) {
  if (!j->first[j->depth]) fputc(',', j->out);
  j->first[j->depth] = false;
  if (key) {
    write_string(j->out, key);
    fputc(':', j->out);
  }
}

static void open_nested(bench_json *j, const char *key, char opener, char closer) {
  begin_member(j, key);
  if (j->depth + 1 >= BENCH_JSON_MAX_DEPTH) {
    fprintf(stderr, "bench_json: nesting deeper than %d\n", BENCH_JSON_MAX_DEPTH - 1);
    abort();
  }
  fputc(opener, j->out);
  j->depth++;
  j->first[j->depth] = true;
  j->closer[j->depth] = closer;
}

void bench_json_begin(bench_json *j, FILE *out) {
  j->out = out;
  j->depth = 0;
  j->first[0] = true;
  open_nested(j, NULL, '{', '}');
}

void bench_json_object(bench_json *j, const char *key) { open_nested(j, key, '{', '}'); }
void bench_json_array(bench_json *j, const char *key) { open_nested(j, key, '[', ']'); }

void bench_json_end(bench_json *j) {
  if (j->depth == 0) return;
  fputc(j->closer[j->depth], j->out);
  j->depth--;
}

void bench_json_finish(bench_json *j) {
  while (j->depth > 0) bench_json_end(j);
  fputc('\n', j->out);
  fflush(j->out);
}

void bench_json_str(bench_json *j, const char *key, const char *value) {
  begin_member(j, key);
  write_string(j->out, value);
}

void bench_json_int(bench_json *j, const char *key, long long value) {
  begin_member(j, key);
  fprintf(j->out, "%lld", value);
}

void bench_json_uint(bench_json *j, const char *key, unsigned long long value) {
  begin_member(j, key);
  fprintf(j->out, "%llu", value);
}

void bench_json_double(bench_json *j, const char *key, double value) {
  begin_member(j, key);
  if (isfinite(value))
    fprintf(j->out, "%.17g", value);
  else
    fputs("null", j->out); /* JSON has no inf or nan */
}

void bench_json_bool(bench_json *j, const char *key, bool value) {
  begin_member(j, key);
  fputs(value ? "true" : "false", j->out);
}

void bench_json_members(bench_json *j, const char *object) {
  const char *open = strchr(object, '{'), *close = strrchr(object, '}');
  if (!open || !close || close < open) {
    fprintf(stderr, "bench_json: not a JSON object: %s\n", object);
    abort();
  }
  const char *body = open + 1;
  while (body < close && strchr(" \t\r\n", *body)) body++;
  if (body == close) return; /* {}: nothing to copy, and no separator either */
  begin_member(j, NULL);
  fwrite(body, 1, (size_t)(close - body), j->out);
}
