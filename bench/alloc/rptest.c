/* rptest: producer-consumer with remote frees at a high rate, after the character of
 * rpmalloc's rptest (our own implementation). T threads form a ring; every thread is a
 * producer and a consumer. A thread mallocs a batch of `batch` objects of sizes
 * log-uniform in [`min`, `max`] (16 B .. 8 KiB by default: small objects are the most
 * common, the large ones carry most bytes), stamps them and pushes the batch onto the
 * inbox of the next thread, a lock-free stack that its one consumer empties whole with
 * one exchange (so no ABA); between its own batches it empties its inbox and checks and
 * frees what it got. Every object is therefore freed by a thread other than its
 * allocator, in the order of another thread's work, while that allocator keeps allocating.
 * An inbox holds at most `depth` batches: a producer that finds the next inbox full frees
 * its own inbox meanwhile (so the ring cannot deadlock) and yields. With one thread the
 * ring closes on itself. */
#include <sched.h>
#include <stdlib.h>

#include "workload.h"

static long threads = 2, batches = 50000, batch = 64, depth = 16, min_size = 16, max_size = 8192,
            seed = 1;

static wl_option options[] = {
    {"threads", &threads, 1, 1024, "threads in the ring, each producing and consuming"},
    {"batches", &batches, 1, 1L << 40, "batches each thread produces"},
    {"batch", &batch, 1, 1L << 20, "objects per batch"},
    {"depth", &depth, 1, 1L << 20, "batches an inbox may hold before its producer waits"},
    {"min", &min_size, 1, 1L << 24, "smallest object size in bytes"},
    {"max", &max_size, 1, 1L << 24, "largest object size in bytes"},
    {"seed", &seed, 0, 1L << 62, "random seed"},
};
static const wl_program program = {
    "rptest",
    "Remote frees at a high rate (rpmalloc's rptest character): a ring of threads, each\n"
    "mallocing batches of objects (log-uniform sizes) and handing them through a lock-free\n"
    "inbox to the next thread, which checks and frees them.",
    "batches", options, sizeof options / sizeof options[0]};

typedef struct batch_of {
  struct batch_of *next;  /* inbox link */
  uint64_t stream, first; /* object k has tag wl_tag(stream, first + k) */
  long count;
  struct {
    void *object;
    size_t size;
  } items[];
} batch_of;

typedef struct inbox {
  _Alignas(64) _Atomic(batch_of *) head;
  atomic_long held;        /* batches pushed and not yet taken by the consumer */
  atomic_bool sender_done; /* the producer pushed its last batch */
  /* the owner's totals, on a line of their own: only the owner writes them */
  _Alignas(64) uint64_t objects_freed;
  uint64_t batches_freed, waits;
} inbox;

static inbox *inboxes;

static batch_of *make_batch(bench_rng *rng, uint64_t stream, uint64_t first) {
  batch_of *b = wl_malloc(sizeof *b + (size_t)batch * sizeof b->items[0]);
  b->stream = stream, b->first = first, b->count = batch;
  for (long k = 0; k < batch; k++) {
    size_t size = wl_size_log_uniform(rng, min_size, max_size);
    b->items[k].object = wl_malloc(size);
    b->items[k].size = size;
    wl_stamp(b->items[k].object, size, wl_tag(stream, first + (uint64_t)k));
  }
  return b;
}

static void push(inbox *to, batch_of *b) {
  batch_of *head = atomic_load_explicit(&to->head, memory_order_relaxed);
  do b->next = head;
  while (!atomic_compare_exchange_weak_explicit(&to->head, &head, b, memory_order_release,
                                                memory_order_relaxed));
}

/* Takes everything in the inbox, checks and frees it; returns the batches freed. */
static long drain(inbox *mine) {
  batch_of *b = atomic_exchange_explicit(&mine->head, NULL, memory_order_acquire);
  long n = 0;
  while (b) {
    batch_of *next = b->next;
    for (long k = 0; k < b->count; k++) {
      wl_check("object from the previous thread", b->items[k].object, b->items[k].size,
               wl_tag(b->stream, b->first + (uint64_t)k));
      free(b->items[k].object);
    }
    mine->objects_freed += (uint64_t)b->count;
    free(b);
    n++;
    b = next;
  }
  if (n) {
    mine->batches_freed += (uint64_t)n;
    atomic_fetch_sub_explicit(&mine->held, n, memory_order_relaxed);
  }
  return n;
}

static void worker(int index, void *arg) {
  (void)arg;
  inbox *mine = &inboxes[index], *next = &inboxes[(index + 1) % threads];
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)seed, (uint64_t)index);
  uint64_t stream = (uint64_t)index + 1;
  for (long i = 0; i < batches; i++) {
    batch_of *b = make_batch(&rng, stream, (uint64_t)i * (uint64_t)batch);
    while (atomic_load_explicit(&next->held, memory_order_relaxed) >= depth) {
      mine->waits++;
      if (!drain(mine)) sched_yield();
    }
    atomic_fetch_add_explicit(&next->held, 1, memory_order_relaxed);
    push(next, b);
    drain(mine);
  }
  atomic_store_explicit(&next->sender_done, true, memory_order_release);
  /* The previous thread may still be producing: consume until it has finished. */
  while (!atomic_load_explicit(&mine->sender_done, memory_order_acquire))
    if (!drain(mine)) sched_yield();
  drain(mine);
}

typedef struct totals {
  uint64_t objects, batches, waits;
} totals;

static void extra(bench_json *j, void *ctx) {
  totals *t = ctx;
  bench_json_uint(j, "batches_passed", t->batches);
  bench_json_uint(j, "full_inbox_waits", t->waits);
}

int main(int argc, char **argv) {
  wl_parse(&program, argc, argv);
  wl_check_size_range(min_size, max_size);
  inboxes = aligned_alloc(64, (size_t)threads * sizeof *inboxes);
  if (!inboxes) exit(1);
  for (long i = 0; i < threads; i++) {
    atomic_init(&inboxes[i].head, NULL);
    atomic_init(&inboxes[i].held, 0);
    atomic_init(&inboxes[i].sender_done, false);
    inboxes[i].objects_freed = inboxes[i].batches_freed = inboxes[i].waits = 0;
  }
  double time_s = wl_run_threads(&program, worker, NULL);
  totals t = {0};
  bool valid = true;
  for (long i = 0; i < threads; i++) {
    t.objects += inboxes[i].objects_freed;
    t.batches += inboxes[i].batches_freed;
    t.waits += inboxes[i].waits;
    valid = valid && atomic_load(&inboxes[i].head) == NULL && atomic_load(&inboxes[i].held) == 0;
  }
  free(inboxes);
  valid = valid && t.batches == (uint64_t)threads * (uint64_t)batches &&
          t.objects == t.batches * (uint64_t)batch;
  /* ops: objects passed (one malloc and one remote free each) */
  return wl_report(&program, time_s, t.objects, extra, &t, valid);
}
