/* jsonloop: a small JSON parse/serialize loop, a realistic single-threaded program whose
 * time goes mostly to small allocations (as in any program that reads and writes JSON
 * documents with a DOM). A generated document — an array of `items` user records with
 * strings, numbers, booleans, nested arrays and objects — is kept for the whole run. Each
 * round serializes it into a growing text buffer (realloc), parses the text into a fresh
 * DOM (one malloc per value, per string, per member array grown by realloc), serializes
 * that DOM again, compares the two texts byte for byte (the self-check) and frees the
 * parsed DOM and both texts. Numbers are integers so the round trip is exact.
 * With --threads N, N threads each run the whole loop on their own document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

static long threads = 1, rounds = 240, items = 1000, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "independent copies of the program run in parallel"},
    {"rounds", &rounds, 1, 1L << 30, "serialize/parse/serialize rounds per thread"},
    {"items", &items, 1, 1L << 20, "records in the document"},
    {"seed", &seed, 0, 1L << 62, "random seed of the document"},
};
static const wl_program program = {
    "jsonloop",
    "A JSON serialize/parse/serialize loop over a generated document of user records; every\n"
    "parsed value, string and member array is a small allocation; the texts must match.",
    "rounds", options, sizeof options / sizeof options[0]};

/* ---- The DOM ---- */
typedef enum { J_NULL, J_BOOL, J_INT, J_STR, J_ARR, J_OBJ } jkind;
typedef struct jvalue jvalue;
struct jvalue {
  jkind kind;
  union {
    int boolean;
    long long integer;
    struct {
      char *chars;
      size_t len;
    } str;
    struct {
      jvalue **items;
      char **keys; /* J_OBJ only: keys[i] names items[i] */
      size_t count, cap;
    } list;
  } u;
};

static jvalue *new_value(jkind kind) {
  jvalue *v = wl_malloc(sizeof *v);
  memset(v, 0, sizeof *v);
  v->kind = kind;
  return v;
}

static char *copy_chars(const char *s, size_t len) {
  char *c = wl_malloc(len + 1);
  memcpy(c, s, len);
  c[len] = 0;
  return c;
}

static jvalue *new_string(const char *s, size_t len) {
  jvalue *v = new_value(J_STR);
  v->u.str.chars = copy_chars(s, len);
  v->u.str.len = len;
  return v;
}

/* Appends to an array (key NULL) or object; the member arrays grow by doubling. */
static void append(jvalue *list, char *key, jvalue *item) {
  if (list->u.list.count == list->u.list.cap) {
    size_t cap = list->u.list.cap ? 2 * list->u.list.cap : 4;
    list->u.list.items = wl_realloc(list->u.list.items, cap * sizeof(jvalue *));
    if (list->kind == J_OBJ)
      list->u.list.keys = wl_realloc(list->u.list.keys, cap * sizeof(char *));
    list->u.list.cap = cap;
  }
  if (list->kind == J_OBJ) list->u.list.keys[list->u.list.count] = key;
  list->u.list.items[list->u.list.count++] = item;
}

static void member(jvalue *obj, const char *key, jvalue *item) {
  append(obj, copy_chars(key, strlen(key)), item);
}

static void free_value(jvalue *v) {
  if (v->kind == J_STR) free(v->u.str.chars);
  if (v->kind == J_ARR || v->kind == J_OBJ) {
    for (size_t i = 0; i < v->u.list.count; i++) {
      free_value(v->u.list.items[i]);
      if (v->kind == J_OBJ) free(v->u.list.keys[i]);
    }
    free(v->u.list.items);
    free(v->u.list.keys);
  }
  free(v);
}

/* ---- The generated document ---- */
static jvalue *random_word(bench_rng *rng, const char *prefix) {
  static const char *const syllables[] = {"ka", "lo",   "mi", "ne", "\"q\"", "ru",
                                          "si", "to\\", "va", "ze", "\n",    "xy"};
  char buf[96];
  size_t len = (size_t)snprintf(buf, sizeof buf, "%s", prefix);
  long n = 1 + (long)bench_rng_below(rng, 8);
  for (long i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", syllables[bench_rng_below(rng, 12)]);
  return new_string(buf, len);
}

static jvalue *integer(long long x) {
  jvalue *v = new_value(J_INT);
  v->u.integer = x;
  return v;
}

static jvalue *make_document(bench_rng *rng) {
  jvalue *doc = new_value(J_ARR);
  for (long i = 0; i < items; i++) {
    jvalue *rec = new_value(J_OBJ);
    member(rec, "id", integer(i));
    member(rec, "name", random_word(rng, "user-"));
    member(rec, "score", integer((long long)bench_rng_below(rng, 2000000) - 1000000));
    jvalue *active = new_value(J_BOOL);
    active->u.boolean = (int)bench_rng_below(rng, 2);
    member(rec, "active", active);
    member(rec, "note", bench_rng_below(rng, 4) ? random_word(rng, "") : new_value(J_NULL));
    jvalue *tags = new_value(J_ARR);
    for (long t = 0, n = (long)bench_rng_below(rng, 8); t < n; t++)
      append(tags, NULL, random_word(rng, "#"));
    member(rec, "tags", tags);
    jvalue *friends = new_value(J_ARR);
    for (long f = 0, n = (long)bench_rng_below(rng, 4); f < n; f++) {
      jvalue *fr = new_value(J_OBJ);
      member(fr, "id", integer((long long)bench_rng_below(rng, (uint64_t)items)));
      member(fr, "since", integer(1990 + (long long)bench_rng_below(rng, 35)));
      append(friends, NULL, fr);
    }
    member(rec, "friends", friends);
    append(doc, NULL, rec);
  }
  return doc;
}

/* ---- Serializer: a text buffer that grows by realloc ---- */
typedef struct text {
  char *chars;
  size_t len, cap;
} text;

static void put(text *t, const char *s, size_t n) {
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 256;
    while (t->len + n + 1 > cap) cap *= 2;
    t->chars = wl_realloc(t->chars, cap);
    t->cap = cap;
  }
  memcpy(t->chars + t->len, s, n);
  t->len += n;
  t->chars[t->len] = 0;
}

static void put_string(text *t, const char *s, size_t len) {
  put(t, "\"", 1);
  size_t run = 0; /* characters before s[run] not yet written */
  for (size_t i = 0; i < len; i++) {
    const char *esc = s[i] == '"' ? "\\\"" : s[i] == '\\' ? "\\\\" : s[i] == '\n' ? "\\n" : NULL;
    if (!esc) continue;
    put(t, s + run, i - run);
    put(t, esc, 2);
    run = i + 1;
  }
  put(t, s + run, len - run);
  put(t, "\"", 1);
}

static void serialize(text *t, const jvalue *v) {
  char num[32];
  switch (v->kind) {
  case J_NULL: put(t, "null", 4); break;
  case J_BOOL: v->u.boolean ? put(t, "true", 4) : put(t, "false", 5); break;
  case J_INT: put(t, num, (size_t)snprintf(num, sizeof num, "%lld", v->u.integer)); break;
  case J_STR: put_string(t, v->u.str.chars, v->u.str.len); break;
  case J_ARR:
  case J_OBJ:
    put(t, v->kind == J_ARR ? "[" : "{", 1);
    for (size_t i = 0; i < v->u.list.count; i++) {
      if (i) put(t, ",", 1);
      if (v->kind == J_OBJ) {
        put_string(t, v->u.list.keys[i], strlen(v->u.list.keys[i]));
        put(t, ":", 1);
      }
      serialize(t, v->u.list.items[i]);
    }
    put(t, v->kind == J_ARR ? "]" : "}", 1);
    break;
  }
}

/* ---- Parser (the subset the serializer writes, strictly) ---- */
typedef struct parser {
  const char *p;
  bool failed;
  uint64_t values;
} parser;

static char *parse_chars(parser *ps, size_t *len_out) {
  if (*ps->p != '"') {
    ps->failed = true;
    return copy_chars("", 0);
  }
  ps->p++;
  size_t cap = 16, len = 0;
  char *s = wl_malloc(cap);
  while (*ps->p && *ps->p != '"') {
    char c = *ps->p++;
    if (c == '\\') {
      c = *ps->p++;
      c = c == 'n' ? '\n' : c;
    }
    if (len + 2 > cap) s = wl_realloc(s, cap *= 2);
    s[len++] = c;
  }
  if (*ps->p == '"')
    ps->p++;
  else
    ps->failed = true;
  s[len] = 0;
  *len_out = len;
  return s;
}

static jvalue *parse(parser *ps) {
  ps->values++;
  const char *p = ps->p;
  if (*p == '[' || *p == '{') {
    bool obj = *p == '{';
    jvalue *v = new_value(obj ? J_OBJ : J_ARR);
    ps->p++;
    while (*ps->p && *ps->p != (obj ? '}' : ']') && !ps->failed) {
      char *key = NULL;
      if (obj) {
        size_t len;
        key = parse_chars(ps, &len);
        if (*ps->p == ':')
          ps->p++;
        else
          ps->failed = true;
      }
      append(v, key, parse(ps));
      if (*ps->p == ',') ps->p++;
    }
    if (*ps->p == (obj ? '}' : ']'))
      ps->p++;
    else
      ps->failed = true;
    return v;
  }
  if (*p == '"') {
    jvalue *v = new_value(J_STR);
    v->u.str.chars = parse_chars(ps, &v->u.str.len);
    return v;
  }
  if (strncmp(p, "null", 4) == 0) {
    ps->p += 4;
    return new_value(J_NULL);
  }
  if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
    jvalue *v = new_value(J_BOOL);
    v->u.boolean = *p == 't';
    ps->p += v->u.boolean ? 4 : 5;
    return v;
  }
  char *end;
  long long x = strtoll(p, &end, 10);
  if (end == p) ps->failed = true;
  ps->p = end == p ? p + (*p != 0) : end;
  return integer(x);
}

/* ---- The loop ---- */
typedef struct thread_totals {
  WL_OWN_LINE uint64_t values, bytes;
  bool valid;
} thread_totals;

static void worker(int index, void *arg) {
  thread_totals *totals = &((thread_totals *)arg)[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  jvalue *doc = make_document(&rng);
  bool valid = true;
  for (long r = 0; r < rounds; r++) {
    text first = {NULL, 0, 0}, second = {NULL, 0, 0};
    serialize(&first, doc);
    parser ps = {first.chars, false, 0};
    jvalue *copy = parse(&ps);
    valid &= !ps.failed && *ps.p == 0;
    serialize(&second, copy);
    valid &= first.len == second.len && memcmp(first.chars, second.chars, first.len) == 0;
    totals->values += ps.values;
    totals->bytes += first.len;
    free_value(copy);
    free(first.chars);
    free(second.chars);
  }
  free_value(doc);
  totals->valid = valid;
}

static void extra(bench_json *j, void *ctx) {
  thread_totals *sum = ctx;
  bench_json_uint(j, "values_parsed", sum->values);
  bench_json_uint(j, "bytes_parsed", sum->bytes);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);
  thread_totals sum = {0, 0, true};
  for (long t = 0; t < threads; t++) {
    sum.values += totals[t].values;
    sum.bytes += totals[t].bytes;
    sum.valid &= totals[t].valid;
  }
  free(totals);
  /* ops: values parsed (each one or more allocations) */
  return wl_report(&program, time_s, sum.values, extra, &sum, sum.valid);
}
