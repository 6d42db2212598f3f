/* intruder: STAMP's network intrusion detector, written against STAMP's TM interface
 * (include/txalloc/stamp/tm.h). --flows messages of 1..--length bytes are cut into
 * fragments (packets) of random sizes, which are shuffled into one shared stream. Each
 * thread repeats, until the stream is empty:
 *   1. one transaction takes a packet from the stream (a queue node freed);
 *   2. one transaction files it under its flow in a shared map (a list allocated for a new
 *      flow, a list node per fragment); the fragment that completes its flow removes the
 *      flow, reassembles the message into a buffer allocated inside the transaction, frees
 *      the fragments, the list and their nodes, and queues the message (a node allocated);
 *   3. one transaction takes a reassembled message, if any, which the thread then scans
 *      for the attack signature, checks against the original, and frees.
 * --attack percent of the flows carry the signature. Valid when every flow was
 * reassembled exactly once with its original content, the attacks found are the flows
 * that carry the signature, and the map and both queues are empty at the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stamp_like.h"
#include "tm.h"
#include "tmlist.h"
#include "tmmap.h"
#include "tmqueue.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

static const char signature[] = "ATTACK";
enum { MAX_FRAGMENTS = 16 };

typedef struct params {
  int size;
  long flows, length, attack, threads, seed;
} params;

typedef struct packet {
  long flow, index, fragments, length;
  char data[];
} packet;

typedef struct message {
  long flow, length;
  char data[]; /* NUL-terminated */
} message;

typedef struct worker {
  _Alignas(64) unsigned long long packets, messages, attacks, wrong;
  long wrong_flow;
} worker;

typedef struct run {
  const params *p;
  tmqueue *stream, *decoded;
  tmmap *flows;
  int *decodes; /* per flow: times reassembled (atomic increments) */
  worker *workers;
} run;

static void parse(int argc, char **argv, params *p) {
  *p = (params){.size = STAMP_SIZE_SMALL, .attack = 10};
  tx_common_args common = {.threads = 1, .seed = 1};
  const bench_arg own[] = {
      BENCH_CHOICE("size", &p->size, stamp_size_names, STAMP_SIZE_COUNT,
                   "input preset: small (tests), medium (the study)"),
      BENCH_LONG("flows", &p->flows, 0, 1L << 24, "messages (0: from --size)"),
      BENCH_LONG("length", &p->length, 0, 1L << 16,
                 "largest message in bytes, at least 8 (0: from --size)"),
      BENCH_LONG("attack", &p->attack, 0, 100, "percentage of flows carrying the signature"),
  };
  tx_args_parse(argc, argv,
                "STAMP-style intrusion detection: packet fragments reassembled per flow in a\n"
                "shared map, decoded and freed inside transactions; prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
  stamp_size_default(&p->flows, p->size, 1024, 65536);
  stamp_size_default(&p->length, p->size, 64, 128);
  if (p->length < 8) bench_usage_error("--length %ld: at least 8 bytes", p->length);
}

/* A flow's message, regenerated from the seed whenever needed: lowercase letters, with the
 * signature at a random place when the flow is an attack. Returns its length. */
static long original(const params *p, long flow, char *out) {
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)flow + (1u << 20));
  long length = 8 + (long)bench_rng_below(&rng, (uint64_t)(p->length - 7));
  for (long i = 0; i < length; i++) out[i] = (char)('a' + bench_rng_below(&rng, 26));
  if ((long)bench_rng_below(&rng, 100) < p->attack) {
    long at = (long)bench_rng_below(&rng, (uint64_t)(length - (long)strlen(signature) + 1));
    memcpy(out + at, signature, strlen(signature));
  }
  out[length] = '\0';
  return length;
}

/* Builds the shuffled stream of every flow's fragments (alone). */
static void build_stream(run *r) {
  const params *p = r->p;
  long capacity = p->flows * MAX_FRAGMENTS, count = 0;
  packet **all = malloc((size_t)capacity * sizeof *all);
  char *text = malloc((size_t)p->length + 1);
  if (!all || !text) abort();
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, 1u << 21);
  for (long flow = 1; flow <= p->flows; flow++) {
    long length = original(p, flow, text);
    long max = length < MAX_FRAGMENTS ? length : MAX_FRAGMENTS;
    long fragments = 1 + (long)bench_rng_below(&rng, (uint64_t)max);
    for (long i = 0, at = 0; i < fragments; i++) {
      long rest = length - at, left = fragments - i;
      long size = left == 1 ? rest : 1 + (long)bench_rng_below(&rng, (uint64_t)(rest - left + 1));
      /* Freed with TM_FREE by the decoder: allocated by the same allocator. */
      packet *pk = TM_MALLOC(sizeof *pk + (size_t)size);
      if (!pk) abort();
      *pk = (packet){.flow = flow, .index = i, .fragments = fragments, .length = size};
      memcpy(pk->data, text + at, (size_t)size);
      all[count++] = pk;
      at += size;
    }
  }
  for (long i = count - 1; i > 0; i--) { /* Fisher-Yates */
    long k = (long)bench_rng_below(&rng, (uint64_t)i + 1);
    packet *t = all[i];
    all[i] = all[k];
    all[k] = t;
  }
  for (long i = 0; i < count; i++) {
    TM_BEGIN();
    TMqueue_push(TM_ARG r->stream, all[i]);
    TM_END();
  }
  free(all);
  free(text);
}

/* Files the packet under its flow; the message when the packet completed it, else NULL.
 * Inside a transaction. Packets are immutable once in the stream: plain reads. */
TM_CALLABLE static message *decode(TM_ARGDECL run *r, packet *pk) {
  tmlist *fragments = TMmap_find(TM_ARG r->flows, pk->flow);
  if (!fragments) {
    fragments = TMlist_alloc(TM_ARG_ALONE);
    TMmap_insert(TM_ARG r->flows, pk->flow, fragments);
  }
  TMlist_insert(TM_ARG fragments, pk->index, pk);
  if (TMlist_count(TM_ARG fragments) < pk->fragments) return NULL;
  TMmap_remove(TM_ARG r->flows, pk->flow);
  packet *parts[MAX_FRAGMENTS];
  long count = TMlist_values(TM_ARG fragments, (void **)parts, MAX_FRAGMENTS), length = 0;
  for (long i = 0; i < count; i++) length += parts[i]->length;
  message *msg = TM_MALLOC(sizeof *msg + (size_t)length + 1);
  if (!msg) abort();
  msg->flow = pk->flow; /* not yet published */
  msg->length = length;
  for (long i = 0, at = 0; i < count; i++) {
    memcpy(msg->data + at, parts[i]->data, (size_t)parts[i]->length);
    at += parts[i]->length;
    TM_FREE(parts[i]);
  }
  msg->data[length] = '\0';
  TMlist_free(TM_ARG fragments);
  return msg;
}

/* Outside transactions: the detector's scan and the check against the original. */
static void detect(run *r, worker *w, message *msg, char *text) {
  long length = original(r->p, msg->flow, text);
  if (msg->flow < 1 || msg->flow > r->p->flows || length != msg->length ||
      memcmp(text, msg->data, (size_t)length + 1) != 0) {
    w->wrong++;
    w->wrong_flow = msg->flow;
  } else {
    __atomic_fetch_add(&r->decodes[msg->flow], 1, __ATOMIC_RELAXED);
  }
  if (strstr(msg->data, signature)) w->attacks++;
  w->messages++;
  TM_FREE(msg);
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  worker *w = &r->workers[index];
  char *text = malloc((size_t)r->p->length + 1);
  if (!text) abort();
  TM_THREAD_ENTER();
  for (;;) {
    /* Assigned on every attempt before any read, so the committed attempt's values are
     * the ones read after TM_END. */
    packet *pk;
    message *done;
    TM_BEGIN();
    pk = TMqueue_pop(TM_ARG r->stream);
    TM_END();
    if (!pk) break;
    w->packets++;
    TM_BEGIN();
    done = decode(TM_ARG r, pk);
    if (done) TMqueue_push(TM_ARG r->decoded, done);
    TM_END();
    TM_BEGIN();
    done = TMqueue_pop(TM_ARG r->decoded);
    TM_END();
    if (done) detect(r, w, done, text);
  }
  TM_THREAD_EXIT();
  free(text);
}

static bool verify(const run *r, const worker *total, long attacks, char *err, size_t err_len) {
  const params *p = r->p;
  if (total->wrong) {
    snprintf(err, err_len, "%llu messages reassembled wrong (e.g. flow %ld)", total->wrong,
             total->wrong_flow);
    return false;
  }
  for (long f = 1; f <= p->flows; f++) {
    if (r->decodes[f] != 1) {
      snprintf(err, err_len, "flow %ld reassembled %d times", f, r->decodes[f]);
      return false;
    }
  }
  if ((long)total->attacks != attacks) {
    snprintf(err, err_len, "%llu attacks found, %ld flows carry one", total->attacks, attacks);
    return false;
  }
  if (queue_count(r->stream) || queue_count(r->decoded)) {
    snprintf(err, err_len, "a queue is not empty at the end");
    return false;
  }
  return true;
}

static bool any_entry(long key, void *value, void *arg) {
  (void)value;
  *(long *)arg = key;
  return false;
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);
  TM_STARTUP(p.threads);
  run r = {.p = &p};
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  r.decodes = calloc((size_t)p.flows + 1, sizeof *r.decodes);
  if (!r.workers || !r.decodes) {
    fprintf(stderr, "intruder: out of memory\n");
    return 1;
  }
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  r.stream = queue_alloc();
  r.decoded = queue_alloc();
  r.flows = map_alloc(p.flows / 4 + 1);
  build_stream(&r);
  char *text = malloc((size_t)p.length + 1);
  if (!text) abort();
  long attacks = 0;
  for (long f = 1; f <= p.flows; f++) {
    original(&p, f, text);
    if (strstr(text, signature)) attacks++;
  }

  tx_backend_stats_reset();
  double start = bench_now();
  double cpu_s = bench_run_threads((int)p.threads, worker_main, &r);
  double time_s = bench_now() - start;
  tx_backend_stats_snapshot();
  /* A message queued after its thread's last look is detected here. */
  worker *first = &r.workers[0];
  for (message *msg; (msg = TMqueue_pop(TM_ARG r.decoded));) detect(&r, first, msg, text);
  free(text);

  worker total = {0};
  for (long i = 0; i < p.threads; i++) {
    worker *w = &r.workers[i];
    total.packets += w->packets;
    total.messages += w->messages;
    total.attacks += w->attacks;
    total.wrong += w->wrong;
    if (w->wrong) total.wrong_flow = w->wrong_flow;
  }
  char err[256] = "";
  bool valid = verify(&r, &total, attacks, err, sizeof err);
  long stray = 0;
  if (valid && !map_for_each(r.flows, any_entry, &stray)) {
    snprintf(err, sizeof err, "flow %ld is still in the map", stray);
    valid = false;
  }

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "intruder");
  bench_json_object(&j, "params");
  bench_json_str(&j, "size", stamp_size_names[p.size]);
  bench_json_int(&j, "flows", p.flows);
  bench_json_int(&j, "length", p.length);
  bench_json_int(&j, "attack", p.attack);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, NULL);
  tx_report_results_begin(&j, total.packets, time_s, cpu_s);
  bench_json_uint(&j, "packets", total.packets);
  bench_json_uint(&j, "messages", total.messages);
  bench_json_uint(&j, "attacks", total.attacks);
  stamp_report_end(&j, valid, err);

  fprintf(stderr, "intruder: %ld threads, %.0f packets/s, allocator %s\n", p.threads,
          tx_report_rate(total.packets, time_s), bench_allocator_name());
  int status = tx_report_exit("intruder", valid, err);
  queue_free(r.stream);
  queue_free(r.decoded);
  map_free(r.flows);
  free(r.decodes);
  free(r.workers);
  TM_SHUTDOWN();
  return status;
}
