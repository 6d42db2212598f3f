/* txmem_machias: McRT's Machias workload (Hudson et al. 2006, §5) on the txmem hook
 * contract, without a TM runtime: the transactions are driven through txmem_tx_begin /
 * txmem_tx_commit / txmem_tx_abort directly, as a runtime would.
 *
 * Each of --threads threads runs --txs transactions. A transaction first frees (txmem_free)
 * the objects other threads passed to it, checking their contents (speculative frees of
 * another thread's memory: deferred to the commit, then through the limbo when
 * safe_reuse=1); then allocates --objects objects of 16..--max-size bytes, writes them, and
 * passes --share percent of them to the next thread (published at the commit) while
 * freeing the others again in the same transaction (balanced). --abort percent of the
 * transactions abort at their end (their allocations are released, their frees forgotten:
 * the received objects are freed again by the retry). Compare strategies (--txmem) and the
 * allocator underneath (LD_PRELOAD) in time and peak memory, 1..16 threads, share
 * 0/25/50/75/100 (McRT Figures 14-17). One JSON object on stdout. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "txalloc/txmem.h"
#include "txmem_bench.h"

static int threads = 2;
static long txs = 20000;
static int objects = 16;
static size_t max_size = 256;
static int share = 50;
static int abort_pct = 0;
static uint64_t seed = 1;

#define INBOX_LIMIT 65536 /* a producer far ahead of its consumer frees instead of passing */

typedef struct inbox {
  pthread_mutex_t lock;
  void **items;
  size_t len, cap;
  char pad[64];
} inbox;

static inbox *inboxes;
static _Atomic long passed, received, corrupt, dropped;

static void inbox_push(inbox *b, void **items, size_t n) {
  pthread_mutex_lock(&b->lock);
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    void **grown = realloc(b->items, cap * sizeof *grown);
    if (!grown) {
      fprintf(stderr, "txmem_machias: out of memory\n");
      exit(1);
    }
    b->items = grown;
    b->cap = cap;
  }
  memcpy(b->items + b->len, items, n * sizeof *items);
  b->len += n;
  pthread_mutex_unlock(&b->lock);
}

/* Moves up to `max` items out of the inbox. */
static size_t inbox_take(inbox *b, void **out, size_t max) {
  pthread_mutex_lock(&b->lock);
  size_t n = b->len < max ? b->len : max;
  b->len -= n;
  memcpy(out, b->items + b->len, n * sizeof *out);
  pthread_mutex_unlock(&b->lock);
  return n;
}

static size_t inbox_len(inbox *b) {
  pthread_mutex_lock(&b->lock);
  size_t n = b->len;
  pthread_mutex_unlock(&b->lock);
  return n;
}

/* Object layout: word 0 = size, words 1.. = size ^ index. */
static void fill(uint64_t *p, size_t size) {
  p[0] = size;
  for (size_t i = 1; i < size / 8; i++) p[i] = size ^ i;
}
static bool intact(const uint64_t *p) {
  size_t size = p[0];
  if (size < 16 || size > max_size) return false;
  for (size_t i = 1; i < size / 8; i++)
    if (p[i] != (size ^ i)) return false;
  return true;
}

static void worker(int index, void *arg) {
  (void)arg;
  bench_rng rng;
  bench_rng_seed(&rng, seed, (uint64_t)index);
  inbox *mine = &inboxes[index], *next = &inboxes[(index + 1) % threads];
  size_t cap_in = (size_t)objects * 4;
  void **in = malloc(cap_in * sizeof *in);
  void **out = malloc((size_t)objects * sizeof *out);
  size_t n_in = 0; /* received objects not yet freed by a committed transaction */
  for (long t = 0; t < txs; t++) {
    n_in += inbox_take(mine, in + n_in, cap_in - n_in);
    txmem_tx_begin(1);
    for (size_t i = 0; i < n_in; i++) {
      if (!intact(in[i])) atomic_fetch_add(&corrupt, 1);
      txmem_free(in[i]);
    }
    size_t n_out = 0;
    for (int k = 0; k < objects; k++) {
      size_t size = 16 + 8 * bench_rng_below(&rng, (max_size - 16) / 8 + 1);
      uint64_t *p = txmem_malloc(size);
      fill(p, size);
      if ((int)bench_rng_below(&rng, 100) < share)
        out[n_out++] = p;
      else
        txmem_free(p);
    }
    if ((int)bench_rng_below(&rng, 100) < abort_pct) {
      txmem_tx_abort(1); /* `in` stays ours; `out` was released */
      continue;
    }
    txmem_tx_commit(1);
    atomic_fetch_add(&received, (long)n_in);
    n_in = 0;
    if (n_out) {
      if (inbox_len(next) > INBOX_LIMIT) {
        for (size_t i = 0; i < n_out; i++) txmem_free(out[i]); /* outside: plain free */
        atomic_fetch_add(&dropped, (long)n_out);
      } else {
        inbox_push(next, out, n_out);
        atomic_fetch_add(&passed, (long)n_out);
      }
    }
  }
  for (size_t i = 0; i < n_in; i++) txmem_free(in[i]);
  atomic_fetch_add(&received, (long)n_in);
  free(in);
  free(out);
  txmem_thread_exit();
}

int main(int argc, char **argv) {
  long threads_arg = threads, objects_arg = objects, max_size_arg = (long)max_size,
       share_arg = share, abort_arg = abort_pct, seed_arg = (long)seed;
  const bench_arg own[] = {
      BENCH_LONG("threads", &threads_arg, 1, 1024, "threads"),
      BENCH_LONG("txs", &txs, 1, 1L << 40, "transactions per thread"),
      BENCH_LONG("objects", &objects_arg, 1, 4096, "objects allocated per transaction"),
      BENCH_LONG("max-size", &max_size_arg, 16, 1 << 20,
                 "object sizes 16..max-size bytes, multiples of 8"),
      BENCH_LONG("share", &share_arg, 0, 100, "percent of objects passed to another thread"),
      BENCH_LONG("abort", &abort_arg, 0, 100, "percent of transactions that abort"),
      BENCH_LONG("seed", &seed_arg, 0, 1L << 62, "random seed"),
  };
  txmem_bench_parse(argc, argv,
                    "McRT's Machias on the txmem hooks: threads allocate and write objects "
                    "inside\ntransactions and pass a share of them to the next thread, which "
                    "frees them in its\nnext transaction. Prints one JSON object.",
                    own, (int)(sizeof own / sizeof own[0]));
  threads = (int)threads_arg;
  objects = (int)objects_arg;
  max_size = (size_t)max_size_arg;
  share = (int)share_arg;
  abort_pct = (int)abort_arg;
  seed = (uint64_t)seed_arg;
  if (abort_pct == 100) bench_usage_error("--abort 100 would never commit");

  inboxes = calloc((size_t)threads, sizeof *inboxes);
  for (int i = 0; i < threads; i++) pthread_mutex_init(&inboxes[i].lock, NULL);
  txmem_strategy strategy = txmem_get_strategy();
  fprintf(stderr, "txmem_machias: %s, safe_reuse %d, %d threads, share %d%%, abort %d%%, on %s\n",
          txmem_strategy_name(strategy), txmem_safe_reuse(), threads, share, abort_pct,
          bench_allocator_name());
  double t0 = bench_now();
  bench_run_threads(threads, worker, NULL);
  double elapsed = bench_now() - t0;
  /* Objects still in inboxes (passed by the last transactions): freed outside. */
  long leftover = 0;
  for (int i = 0; i < threads; i++) {
    for (size_t k = 0; k < inboxes[i].len; k++) {
      if (!intact(inboxes[i].items[k])) atomic_fetch_add(&corrupt, 1);
      txmem_free(inboxes[i].items[k]);
      leftover++;
    }
    free(inboxes[i].items);
  }
  txmem_flush();
  txmem_stats s;
  txmem_stats_get(&s);
  long total = (long)threads * txs;
  bool valid = atomic_load(&corrupt) == 0 &&
               atomic_load(&passed) == atomic_load(&received) + leftover && s.limbo_objects == 0;
  fprintf(stderr, "%.3f s, %.0f tx/s, passed %ld, dropped %ld, corrupt %ld, limbo peak %llu\n",
          elapsed, (double)total / elapsed, atomic_load(&passed), atomic_load(&dropped),
          atomic_load(&corrupt), (unsigned long long)s.limbo_peak);

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "txmem_machias");
  bench_json_object(&j, "params");
  bench_json_int(&j, "txs", txs);
  bench_json_int(&j, "objects", objects);
  bench_json_uint(&j, "max_size", max_size);
  bench_json_int(&j, "share", share);
  bench_json_int(&j, "abort", abort_pct);
  bench_json_uint(&j, "seed", seed);
  bench_json_end(&j);
  txmem_bench_json_config(&j, threads, &elapsed, strategy);
  bench_json_object(&j, "results");
  bench_json_int(&j, "ops", total);
  bench_json_double(&j, "ops_per_s", (double)total / elapsed);
  bench_json_double(&j, "time_s", elapsed);
  bench_json_int(&j, "passed", atomic_load(&passed));
  bench_json_int(&j, "dropped", atomic_load(&dropped));
  bench_json_end(&j);
  txmem_bench_json_finish(&j, &s, valid);
  return valid ? 0 : 1;
}
