/* tx-machias: McRT-Malloc's Machias benchmark (Hudson et al. 2006, §5) with every malloc
 * and free inside a transaction. Each thread performs `ops` steps; a step allocates one
 * object of a random size in [min-size, max-size] in a transaction (tm_malloc), writes a
 * pattern into it at once, and then either keeps it in a private window of `objects`
 * slots (the object it displaces is checked and freed by its owner in a transaction) or,
 * with probability sharing%, passes it to a randomly chosen other thread: a transaction
 * pushes it on that thread's mailbox. Every 16 steps, and at the end until all threads
 * are done, a thread empties its mailbox, one transaction per object, checks each received
 * object's pattern and frees it in a transaction of its own: a remote free, speculative
 * until the commit. 0% sharing: all frees local; 100%: every object freed by another thread.
 * Valid when every pattern was intact and every object sent was received and freed. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tx_api.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

/* An object: the mailbox link, a tag (size and sequence number), then the pattern. */
typedef struct object {
  struct object *next;
  uint64_t tag; /* (sequence << 24) | size */
  unsigned char payload[];
} object;

enum { MIN_OBJECT = sizeof(object), MAX_OBJECT = 1 << 20, DRAIN_EVERY = 16 };

typedef struct params {
  long threads, ops, objects, sharing, min_size, max_size;
  long seed;
} params;

typedef struct mailbox {
  _Alignas(64) object *head; /* shared: accessed in transactions only */
} mailbox;

typedef struct worker {
  _Alignas(64) double start, end;
  unsigned long long allocated, local_frees, sent, received, bad_patterns;
} worker;

typedef struct run {
  const params *p;
  mailbox *mailboxes;
  worker *workers;
  atomic_long done; /* threads that finished their steps (and sent their last object) */
} run;

static void parse(int argc, char **argv, params *p) {
  *p = (params){.ops = 200000, .objects = 64, .sharing = 0, .min_size = 16, .max_size = 128};
  tx_common_args common = {.threads = 1, .duration = NULL, .seed = 1}; /* runs steps */
  const bench_arg own[] = {
      BENCH_LONG("ops", &p->ops, 1, 1L << 40, "allocations per thread"),
      BENCH_LONG("objects", &p->objects, 1, 1L << 24, "objects a thread keeps live"),
      BENCH_LONG("sharing", &p->sharing, 0, 100, "percentage of objects freed by another thread"),
      BENCH_LONG("min-size", &p->min_size, MIN_OBJECT, MAX_OBJECT, "smallest object in bytes"),
      BENCH_LONG("max-size", &p->max_size, MIN_OBJECT, MAX_OBJECT, "largest object in bytes"),
  };
  tx_args_parse(argc, argv, "Machias (McRT-Malloc 5) inside transactions; prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
  if (p->min_size > p->max_size)
    bench_usage_error("--min-size %ld exceeds --max-size %ld", p->min_size, p->max_size);
}

static unsigned char pattern_byte(uint64_t tag, size_t i) {
  return (unsigned char)((tag * 0x9e3779b97f4a7c15ULL) >> 56) ^ (unsigned char)(i * 31);
}

/* Written by the allocating thread while the object is still private. */
static void fill(object *o, uint64_t sequence, size_t size) {
  o->next = NULL;
  o->tag = (sequence << 24) | size;
  for (size_t i = 0; i < size - sizeof(object); i++) o->payload[i] = pattern_byte(o->tag, i);
}

static bool intact(const object *o, const params *p) {
  size_t size = o->tag & 0xffffff;
  if (size < (size_t)p->min_size || size > (size_t)p->max_size) return false;
  for (size_t i = 0; i < size - sizeof(object); i++)
    if (o->payload[i] != pattern_byte(o->tag, i)) return false;
  return true;
}

static object *allocate(size_t size) {
  object *TX_LOCAL o = NULL;
  TX_BEGIN o = TX_MALLOC(size);
  TX_END
  return o;
}

static void release(object *o) {
  TX_BEGIN TX_FREE(o);
  TX_END
}

static void send(mailbox *box, object *o) {
  TX_BEGIN TX_STORE(&o->next, TX_LOAD(&box->head));
  TX_STORE(&box->head, o);
  TX_END
}

/* Takes one received object. Its link is read inside the transaction: the sender wrote it
 * in the pushing transaction, and a word another transaction wrote may still be in that
 * transaction's write-back after the head's stripe is released (no privatization safety is
 * assumed of the TM). The pattern was written before the push, so plain reads of it after
 * this commit are ordered. */
static object *pop(mailbox *box) {
  object *TX_LOCAL taken = NULL;
  TX_BEGIN object *head = TX_LOAD(&box->head);
  if (head) TX_STORE(&box->head, TX_LOAD(&head->next));
  taken = head;
  TX_END
  return taken;
}

/* Checks and frees what the mailbox holds; returns the number of objects. */
static long drain(run *r, int index) {
  worker *w = &r->workers[index];
  long n = 0;
  for (object *o; (o = pop(&r->mailboxes[index]));) {
    if (!intact(o, r->p)) w->bad_patterns++;
    release(o);
    w->received++;
    n++;
  }
  return n;
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  const params *p = r->p;
  worker *w = &r->workers[index];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)index);
  object **window = calloc((size_t)p->objects, sizeof *window);
  if (!window) {
    fprintf(stderr, "tx-machias: out of memory\n");
    exit(1);
  }
  uint64_t span = (uint64_t)(p->max_size - p->min_size + 1);
  w->start = bench_now();
  for (long step = 0; step < p->ops; step++) {
    size_t size = (size_t)p->min_size + (size_t)bench_rng_below(&rng, span);
    bool share = p->threads > 1 && (long)bench_rng_below(&rng, 100) < p->sharing;
    object *o = allocate(size);
    if (!o) {
      fprintf(stderr, "tx-machias: tm_malloc(%zu) failed\n", size);
      exit(1);
    }
    fill(o, (uint64_t)step, size);
    w->allocated++;
    if (share) {
      long to = (long)bench_rng_below(&rng, (uint64_t)p->threads - 1);
      if (to >= index) to++;
      send(&r->mailboxes[to], o);
      w->sent++;
    } else {
      long slot = step % p->objects;
      if (window[slot]) {
        if (!intact(window[slot], p)) w->bad_patterns++;
        release(window[slot]);
        w->local_frees++;
      }
      window[slot] = o;
    }
    if (step % DRAIN_EVERY == 0) drain(r, index);
  }
  for (long slot = 0; slot < p->objects; slot++) {
    if (!window[slot]) continue;
    if (!intact(window[slot], p)) w->bad_patterns++;
    release(window[slot]);
    w->local_frees++;
  }
  free(window);
  /* Every send of this thread committed before this increment; a thread that sees all
   * threads done and then finds its mailbox empty has received everything. */
  atomic_fetch_add_explicit(&r->done, 1, memory_order_release);
  for (;;) {
    bool all_done = atomic_load_explicit(&r->done, memory_order_acquire) == p->threads;
    if (drain(r, index) == 0) {
      if (all_done) break;
      sched_yield(); /* let the threads still working run (more threads than cores) */
    }
  }
  w->end = bench_now();
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);

  run r = {.p = &p};
  r.mailboxes = aligned_alloc(64, (size_t)p.threads * sizeof(mailbox));
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!r.mailboxes || !r.workers) {
    fprintf(stderr, "tx-machias: out of memory\n");
    return 1;
  }
  memset(r.mailboxes, 0, (size_t)p.threads * sizeof(mailbox));
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  atomic_init(&r.done, 0);
  tx_backend_stats_reset();
  double cpu_s = bench_run_threads((int)p.threads, worker_main, &r);
  tx_backend_stats_snapshot();

  worker total = {.start = r.workers[0].start, .end = r.workers[0].end};
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    if (w->start < total.start) total.start = w->start;
    if (w->end > total.end) total.end = w->end;
    total.allocated += w->allocated;
    total.local_frees += w->local_frees;
    total.sent += w->sent;
    total.received += w->received;
    total.bad_patterns += w->bad_patterns;
  }
  char err[256] = "";
  if (total.bad_patterns)
    snprintf(err, sizeof err, "%llu objects had a damaged pattern", total.bad_patterns);
  else if (total.received != total.sent)
    snprintf(err, sizeof err, "%llu objects sent, %llu received", total.sent, total.received);
  else if (total.local_frees + total.received != total.allocated)
    snprintf(err, sizeof err, "%llu allocated, %llu freed", total.allocated,
             total.local_frees + total.received);
  bool valid = err[0] == '\0';
  double time_s = total.end - total.start;

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "tx-machias");
  bench_json_object(&j, "params");
  bench_json_int(&j, "ops", p.ops);
  bench_json_int(&j, "objects", p.objects);
  bench_json_int(&j, "sharing", p.sharing);
  bench_json_int(&j, "min_size", p.min_size);
  bench_json_int(&j, "max_size", p.max_size);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, NULL);
  tx_report_results_begin(&j, total.allocated, time_s, cpu_s);
  bench_json_uint(&j, "local_frees", total.local_frees);
  bench_json_uint(&j, "remote_frees", total.received);
  tx_report_results_end(&j, valid, err);

  fprintf(stderr,
          "tx-machias: %d threads, %d%% sharing, %.3f s, %.0f allocations/s, allocator %s\n",
          (int)p.threads, (int)p.sharing, time_s, tx_report_rate(total.allocated, time_s),
          bench_allocator_name());
  int status = tx_report_exit("tx-machias", valid, err);
  free(r.mailboxes);
  free(r.workers);
  return status;
}
