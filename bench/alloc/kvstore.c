/* kvstore: an in-memory key-value store, the long-running realistic program of the suite
 * (our own design, after the shape of memcached/Redis-like servers). One hash table shared
 * by all threads, its buckets guarded by striped mutexes; an entry is three allocations:
 * the record, the key string (8..64 bytes of text) and the value (8 B .. 4 KiB, a Zipf-like
 * mix: the octave [8*2^b, 8*2^(b+1)) has weight 1/(b+1), so small values are common and
 * large ones hold many of the bytes). Each thread performs `ops` operations on uniformly
 * chosen keys:
 *   get     look the key up and read (check) its value;
 *   put     set the key: a new value of a new size replaces the old one, or a new entry is
 *           inserted when the key is absent;
 *   update  delete + insert: the whole entry (record, key, value) is replaced by a fresh
 *           one with a value of a new size;
 *   delete  remove the entry when present.
 * Values are replaced with new sizes all the time, so the heap churns across size classes,
 * and an entry is freed by whichever thread replaces it, not the one that made it.
 * Allocation happens outside the stripe lock where the program knows what it needs (a new
 * value, a whole new entry), and frees after the lock is released, as a server would. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

static long threads = 2, ops = 1000000, keys = 100000, fill = 50, get_pct = 60, put_pct = 20,
            update_pct = 15, stripes = 1024, seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "client threads, each doing `ops` operations"},
    {"ops", &ops, 1, 1L << 40, "operations per thread"},
    {"keys", &keys, 1, 1L << 28, "size of the key space (the table has as many buckets)"},
    {"fill", &fill, 0, 100, "percent of the keys inserted before the measured phase"},
    {"get", &get_pct, 0, 100, "percent of operations that are gets"},
    {"put", &put_pct, 0, 100, "percent that are puts (replace the value, or insert)"},
    {"update", &update_pct, 0, 100,
     "percent that are updates (delete + insert of a new entry); the rest are deletes"},
    {"stripes", &stripes, 1, 1L << 20, "mutexes guarding the buckets"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "kvstore",
    "A key-value store: a shared hash table of string keys and values of 8 B .. 4 KiB\n"
    "(Zipf-like size mix); threads run get / put / update (delete + insert with a new size)\n"
    "/ delete mixes on uniform keys, so values are replaced with new sizes and the heap churns.",
    "ops", options, sizeof options / sizeof options[0]};

enum { VALUE_OCTAVES = 9, KEY_MAX = 64 };

typedef struct entry {
  struct entry *next;
  uint64_t hash;
  char *key;
  void *value;
  uint64_t value_tag;
  uint32_t key_len, value_size;
} entry;

typedef struct stripe_lock {
  _Alignas(64) pthread_mutex_t mutex;
} stripe_lock;

typedef struct thread_totals {
  WL_OWN_LINE uint64_t gets, hits, puts, updates, deletes;
  int64_t live_delta; /* entries inserted minus entries removed */
} thread_totals;

static entry **buckets;
static uint64_t bucket_mask;
static stripe_lock *locks;
static double octave_cdf[VALUE_OCTAVES];

/* ---- Keys and values ---- */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The text of key `id`: a prefix and the id, padded to a length of 8..64 bytes that
 * depends on the id. Returns the length (without the NUL). */
static uint32_t key_text(uint64_t id, char out[KEY_MAX + 1]) {
  uint64_t h = mix64(id + 0x9e37);
  int n = snprintf(out, KEY_MAX + 1, "u:%llx:", (unsigned long long)id);
  uint32_t len = 8 + (uint32_t)(h % (KEY_MAX - 8 + 1));
  if ((uint32_t)n > len) len = (uint32_t)n;
  for (uint32_t i = (uint32_t)n; i < len; i++) out[i] = (char)('a' + (h >> (i % 58)) % 26);
  out[len] = 0;
  return len;
}

/* FNV-1a over the key text, finished with a mix so that the low bits index buckets well. */
static uint64_t key_hash(const char *key, uint32_t len) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (uint32_t i = 0; i < len; i++) h = (h ^ (unsigned char)key[i]) * 0x100000001b3ULL;
  return mix64(h);
}

static void init_value_sizes(void) {
  double total = 0;
  for (int b = 0; b < VALUE_OCTAVES; b++) total += 1.0 / (b + 1);
  double acc = 0;
  for (int b = 0; b < VALUE_OCTAVES; b++) octave_cdf[b] = (acc += 1.0 / (b + 1) / total);
}

/* 8 B .. 4 KiB: an octave by the Zipf-like weights, then uniform inside it. */
static uint32_t value_size(bench_rng *rng) {
  double u = (double)(bench_rng_next(rng) >> 11) * 0x1.0p-53;
  int b = 0;
  while (b < VALUE_OCTAVES - 1 && u >= octave_cdf[b]) b++;
  uint32_t low = 8u << b;
  uint32_t size = low + (uint32_t)bench_rng_below(rng, low);
  return size > 4096 ? 4096 : size;
}

static void *new_value(uint32_t size, uint64_t tag) {
  void *v = wl_malloc(size);
  wl_stamp(v, size, tag);
  return v;
}

/* A record with its own copy of the key, holding `value` (of `size` bytes, stamped with
 * `tag`). */
static entry *new_record(const char *key, uint32_t len, uint64_t hash, void *value, uint32_t size,
                         uint64_t tag) {
  entry *e = wl_malloc(sizeof *e);
  e->key = wl_malloc(len + 1);
  memcpy(e->key, key, len + 1);
  e->key_len = len;
  e->hash = hash;
  e->value = value;
  e->value_size = size;
  e->value_tag = tag;
  e->next = NULL;
  return e;
}

static entry *new_entry(const char *key, uint32_t len, uint64_t hash, uint32_t size, uint64_t tag) {
  return new_record(key, len, hash, new_value(size, tag), size, tag);
}

static void free_value(void *value, uint32_t size, uint64_t tag) {
  wl_check("value before free", value, size, tag);
  free(value);
}

static void free_entry(entry *e) {
  free_value(e->value, e->value_size, e->value_tag);
  free(e->key);
  free(e);
}

/* ---- The table: callers hold the stripe lock of the bucket. ---- */

static pthread_mutex_t *lock_of(uint64_t hash) {
  return &locks[(hash & bucket_mask) % (uint64_t)stripes].mutex;
}

/* The link that points at the key's entry, or at the NULL that ends its chain. */
static entry **find(const char *key, uint32_t len, uint64_t hash) {
  entry **link = &buckets[hash & bucket_mask];
  while (*link &&
         !((*link)->hash == hash && (*link)->key_len == len && memcmp((*link)->key, key, len) == 0))
    link = &(*link)->next;
  return link;
}

/* ---- Operations ---- */

static void op_get(thread_totals *t, const char *key, uint32_t len, uint64_t hash) {
  pthread_mutex_t *m = lock_of(hash);
  pthread_mutex_lock(m);
  entry *e = *find(key, len, hash);
  if (e) {
    wl_check("value read by get", e->value, e->value_size, e->value_tag);
    t->hits++;
  }
  pthread_mutex_unlock(m);
  t->gets++;
}

static void op_put(thread_totals *t, bench_rng *rng, const char *key, uint32_t len, uint64_t hash,
                   uint64_t tag) {
  uint32_t size = value_size(rng);
  void *value = new_value(size, tag);
  void *old = NULL;
  uint32_t old_size = 0;
  uint64_t old_tag = 0;
  pthread_mutex_t *m = lock_of(hash);
  pthread_mutex_lock(m);
  entry **link = find(key, len, hash);
  if (*link) {
    entry *e = *link;
    old = e->value, old_size = e->value_size, old_tag = e->value_tag;
    e->value = value, e->value_size = size, e->value_tag = tag;
  } else { /* the record and the key are made under the lock: only now is it known */
    *link = new_record(key, len, hash, value, size, tag);
    t->live_delta++;
  }
  pthread_mutex_unlock(m);
  if (old) free_value(old, old_size, old_tag);
  t->puts++;
}

static void op_update(thread_totals *t, bench_rng *rng, const char *key, uint32_t len,
                      uint64_t hash, uint64_t tag) {
  entry *fresh = new_entry(key, len, hash, value_size(rng), tag);
  pthread_mutex_t *m = lock_of(hash);
  pthread_mutex_lock(m);
  entry **link = find(key, len, hash);
  entry *old = *link;
  if (old) {
    fresh->next = old->next;
  } else {
    t->live_delta++;
  }
  *link = fresh;
  pthread_mutex_unlock(m);
  if (old) free_entry(old);
  t->updates++;
}

static void op_delete(thread_totals *t, const char *key, uint32_t len, uint64_t hash) {
  pthread_mutex_t *m = lock_of(hash);
  pthread_mutex_lock(m);
  entry **link = find(key, len, hash);
  entry *old = *link;
  if (old) *link = old->next;
  pthread_mutex_unlock(m);
  if (old) {
    free_entry(old);
    t->live_delta--;
  }
  t->deletes++;
}

static void worker(int index, void *arg) {
  thread_totals *t = &((thread_totals *)arg)[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index + 1);
  uint64_t stream = (uint64_t)index + 1, counter = 0;
  char key[KEY_MAX + 1];
  for (long i = 0; i < ops; i++) {
    uint32_t len = key_text(bench_rng_below(&rng, (uint64_t)keys), key);
    uint64_t hash = key_hash(key, len);
    long pick = (long)bench_rng_below(&rng, 100);
    if (pick < get_pct)
      op_get(t, key, len, hash);
    else if (pick < get_pct + put_pct)
      op_put(t, &rng, key, len, hash, wl_tag(stream, counter++));
    else if (pick < get_pct + put_pct + update_pct)
      op_update(t, &rng, key, len, hash, wl_tag(stream, counter++));
    else
      op_delete(t, key, len, hash);
  }
}

/* Before the measured phase: `fill` percent of the keys, chosen by the seed. */
static long fill_table(void) {
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, 0);
  char key[KEY_MAX + 1];
  long inserted = 0;
  for (long id = 0; id < keys; id++) {
    if ((long)bench_rng_below(&rng, 100) >= fill) continue;
    uint32_t len = key_text((uint64_t)id, key);
    uint64_t hash = key_hash(key, len);
    entry **link = find(key, len, hash);
    *link = new_entry(key, len, hash, value_size(&rng), wl_tag(0, (uint64_t)id));
    inserted++;
  }
  return inserted;
}

/* After the measured phase: checks and frees every entry; returns how many there were. */
static long drain_table(uint64_t *value_bytes) {
  long n = 0;
  for (uint64_t b = 0; b <= bucket_mask; b++) {
    entry *e = buckets[b];
    while (e) {
      entry *next = e->next;
      if ((e->hash & bucket_mask) != b) wl_corrupt("entry in the wrong bucket", e, e->hash);
      *value_bytes += e->value_size;
      free_entry(e);
      n++;
      e = next;
    }
  }
  return n;
}

typedef struct summary {
  thread_totals sum;
  long live;
  uint64_t value_bytes;
} summary;

static void extra(bench_json *j, void *ctx) {
  summary *s = ctx;
  bench_json_uint(j, "gets", s->sum.gets);
  bench_json_uint(j, "hits", s->sum.hits);
  bench_json_uint(j, "puts", s->sum.puts);
  bench_json_uint(j, "updates", s->sum.updates);
  bench_json_uint(j, "deletes", s->sum.deletes);
  bench_json_int(j, "live_keys", s->live);
  bench_json_double(j, "live_value_mib", (double)s->value_bytes / (1024.0 * 1024.0));
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  if (get_pct + put_pct + update_pct > 100)
    bench_usage_error("--get %ld + --put %ld + --update %ld exceed 100 percent", get_pct, put_pct,
                      update_pct);
  uint64_t nbuckets = 1;
  while (nbuckets < (uint64_t)keys) nbuckets <<= 1;
  bucket_mask = nbuckets - 1;
  buckets = calloc(nbuckets, sizeof *buckets);
  locks = aligned_alloc(64, (size_t)stripes * sizeof *locks);
  if (!buckets || !locks) exit(1);
  for (long i = 0; i < stripes; i++) pthread_mutex_init(&locks[i].mutex, NULL);
  init_value_sizes();
  long initial = fill_table();

  double time_s;
  thread_totals *totals = wl_run_counting(&program, sizeof *totals, worker, &time_s);

  summary s = {0};
  for (long i = 0; i < threads; i++) {
    s.sum.gets += totals[i].gets, s.sum.hits += totals[i].hits, s.sum.puts += totals[i].puts;
    s.sum.updates += totals[i].updates, s.sum.deletes += totals[i].deletes;
    s.sum.live_delta += totals[i].live_delta;
  }
  s.live = drain_table(&s.value_bytes);
  bool valid = s.live == initial + s.sum.live_delta;
  if (!valid)
    fprintf(stderr, "kvstore: %ld entries left, expected %lld\n", s.live,
            (long long)(initial + s.sum.live_delta));
  for (long i = 0; i < stripes; i++) pthread_mutex_destroy(&locks[i].mutex);
  free(totals);
  free(locks);
  free(buckets);
  uint64_t done = s.sum.gets + s.sum.puts + s.sum.updates + s.sum.deletes;
  valid = valid && done == (uint64_t)threads * (uint64_t)ops;
  return wl_report(&program, time_s, done, extra, &s, valid);
}
