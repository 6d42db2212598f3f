/* vacation: STAMP's travel reservation system, written against STAMP's TM interface
 * (include/txalloc/stamp/tm.h). Four red-black-tree tables: cars, flights and rooms map an
 * id (1..relations) to a resource (seats used, free and in total, and a price); customers
 * map an id to a customer, who owns a sorted list of reservations. Clients run --ops
 * transactions in all, split over the threads, each one of:
 *   - a reservation (--user percent): query --queries random resources among the first
 *     --query-range percent of ids, then, for each kind, reserve the dearest one found
 *     with a free seat for a random customer (created if new): a reservation record and a
 *     list node are allocated inside the transaction;
 *   - a customer deletion (half of the rest): cancel every reservation of a random
 *     customer, freeing the records, the list and the customer inside the transaction;
 *   - a table update (the other half): for --queries random resources, add seats (creating
 *     the resource if absent) or delete the resource if nobody holds a seat.
 * Valid when the trees are red-black trees, every resource has used + free = total seats,
 * and every resource's used seats equal the customers' reservations of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stamp_like.h"
#include "tm.h"
#include "tmlist.h"
#include "tmrbtree.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

enum { CAR, FLIGHT, ROOM, KINDS };
static const char *const kind_names[KINDS] = {"car", "flight", "room"};
enum { SEATS_PER_UPDATE = 100, MAX_QUERIES = 64 };

typedef struct params {
  int size;
  long relations, queries, query_range, user, ops, threads, seed;
} params;

typedef struct resource {
  long id, used, free, total, price;
} resource;

typedef struct reservation {
  long kind, id, price;
} reservation;

typedef struct customer {
  long id;
  tmlist *reservations; /* key: kind * 2^32 + id */
} customer;

typedef struct manager {
  rbtree *table[KINDS];
  rbtree *customers;
} manager;

typedef struct worker {
  _Alignas(64) unsigned long long reservations, deletions, updates;
} worker;

typedef struct run {
  const params *p;
  manager m;
  worker *workers;
} run;

static long reservation_key(long kind, long id) { return kind * (1L << 32) + id; }

static void parse(int argc, char **argv, params *p) {
  *p = (params){.size = STAMP_SIZE_SMALL, .user = 80};
  tx_common_args common = {.threads = 1, .seed = 1};
  const bench_arg own[] = {
      BENCH_CHOICE("size", &p->size, stamp_size_names, STAMP_SIZE_COUNT,
                   "input preset: small (tests), medium (the study)"),
      BENCH_LONG("relations", &p->relations, 0, 1L << 24,
                 "resources of each kind and initial customers (0: from --size)"),
      BENCH_LONG("queries", &p->queries, 0, MAX_QUERIES,
                 "resources queried per transaction (0: from --size)"),
      BENCH_LONG("query-range", &p->query_range, 0, 100,
                 "percentage of the ids that queries touch (0: from --size)"),
      BENCH_LONG("user", &p->user, 0, 100, "percentage of transactions that reserve"),
      BENCH_LONG("ops", &p->ops, 0, 1L << 40, "transactions in all (0: from --size)"),
  };
  tx_args_parse(argc, argv,
                "STAMP-style travel reservations: red-black-tree tables, customers' reservation\n"
                "lists allocated and freed inside transactions; prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
  stamp_size_default(&p->relations, p->size, 256, 16384);
  stamp_size_default(&p->queries, p->size, 4, 4);
  stamp_size_default(&p->query_range, p->size, 90, 60);
  stamp_size_default(&p->ops, p->size, 8192, 262144);
}

/* ---- Transactions' parts (inside a transaction) ---- */

/* The resource's price when it has a free seat, else -1. */
TM_CALLABLE static long query_free(TM_ARGDECL manager *m, long kind, long id) {
  resource *r = TMrbtree_get(TM_ARG m->table[kind], id);
  if (!r || TM_SHARED_READ(r->free) <= 0) return -1;
  return TM_SHARED_READ(r->price);
}

TM_CALLABLE static customer *get_or_add_customer(TM_ARGDECL manager *m, long id) {
  customer *c = TMrbtree_get(TM_ARG m->customers, id);
  if (c) return c;
  c = TM_MALLOC(sizeof *c);
  if (!c) abort();
  c->id = id; /* not yet published */
  c->reservations = TMlist_alloc(TM_ARG_ALONE);
  TMrbtree_insert(TM_ARG m->customers, id, c);
  return c;
}

/* Takes a seat of the resource for the customer unless the customer already holds one. */
TM_CALLABLE static void reserve(TM_ARGDECL manager *m, customer *c, long kind, long id) {
  resource *r = TMrbtree_get(TM_ARG m->table[kind], id);
  tmlist *list = TM_SHARED_READ_P(c->reservations);
  long key = reservation_key(kind, id);
  if (!r || TM_SHARED_READ(r->free) <= 0 || TMlist_find(TM_ARG list, key)) return;
  reservation *rec = TM_MALLOC(sizeof *rec);
  if (!rec) abort();
  *rec = (reservation){.kind = kind, .id = id, .price = TM_SHARED_READ(r->price)};
  TMlist_insert(TM_ARG list, key, rec);
  TM_SHARED_WRITE(r->free, TM_SHARED_READ(r->free) - 1);
  TM_SHARED_WRITE(r->used, TM_SHARED_READ(r->used) + 1);
}

TM_CALLABLE static void delete_customer(TM_ARGDECL manager *m, long id) {
  customer *c = TMrbtree_remove(TM_ARG m->customers, id);
  if (!c) return;
  tmlist *list = TM_SHARED_READ_P(c->reservations);
  long key;
  for (reservation *rec; (rec = TMlist_remove_first(TM_ARG list, &key));) {
    resource *r = TMrbtree_get(TM_ARG m->table[TM_SHARED_READ(rec->kind)], TM_SHARED_READ(rec->id));
    TM_SHARED_WRITE(r->free, TM_SHARED_READ(r->free) + 1);
    TM_SHARED_WRITE(r->used, TM_SHARED_READ(r->used) - 1);
    TM_FREE(rec);
  }
  TMlist_free(TM_ARG list);
  TM_FREE(c);
}

TM_CALLABLE static void add_seats(TM_ARGDECL manager *m, long kind, long id, long price) {
  resource *r = TMrbtree_get(TM_ARG m->table[kind], id);
  if (r) {
    TM_SHARED_WRITE(r->free, TM_SHARED_READ(r->free) + SEATS_PER_UPDATE);
    TM_SHARED_WRITE(r->total, TM_SHARED_READ(r->total) + SEATS_PER_UPDATE);
    TM_SHARED_WRITE(r->price, price);
    return;
  }
  r = TM_MALLOC(sizeof *r);
  if (!r) abort();
  *r = (resource){.id = id, .free = SEATS_PER_UPDATE, .total = SEATS_PER_UPDATE, .price = price};
  TMrbtree_insert(TM_ARG m->table[kind], id, r);
}

TM_CALLABLE static void delete_unused(TM_ARGDECL manager *m, long kind, long id) {
  resource *r = TMrbtree_get(TM_ARG m->table[kind], id);
  if (!r || TM_SHARED_READ(r->used) != 0) return;
  TMrbtree_remove(TM_ARG m->table[kind], id);
  TM_FREE(r);
}

/* ---- Clients ---- */

static long random_id(bench_rng *rng, const params *p) {
  long range = p->relations * p->query_range / 100;
  return 1 + (long)bench_rng_below(rng, (uint64_t)(range > 0 ? range : 1));
}

static void make_reservation(manager *m, bench_rng *rng, const params *p) {
  long kinds[MAX_QUERIES], ids[MAX_QUERIES];
  long queries = 1 + (long)bench_rng_below(rng, (uint64_t)p->queries);
  for (long q = 0; q < queries; q++) {
    kinds[q] = (long)bench_rng_below(rng, KINDS);
    ids[q] = random_id(rng, p);
  }
  long customer_id = random_id(rng, p);
  TM_BEGIN();
  /* Declared in the block: every attempt starts from no maximum (unlike STAMP's client,
   * whose retry starts from the aborted attempt's). */
  long max_price[KINDS] = {-1, -1, -1}, max_id[KINDS] = {0, 0, 0};
  for (long q = 0; q < queries; q++) {
    long price = query_free(TM_ARG m, kinds[q], ids[q]);
    if (price > max_price[kinds[q]]) {
      max_price[kinds[q]] = price;
      max_id[kinds[q]] = ids[q];
    }
  }
  if (max_id[CAR] || max_id[FLIGHT] || max_id[ROOM]) {
    customer *c = get_or_add_customer(TM_ARG m, customer_id);
    for (long k = 0; k < KINDS; k++)
      if (max_id[k]) reserve(TM_ARG m, c, k, max_id[k]);
  }
  TM_END();
}

static void update_tables(manager *m, bench_rng *rng, const params *p) {
  long kinds[MAX_QUERIES], ids[MAX_QUERIES], prices[MAX_QUERIES];
  long updates = 1 + (long)bench_rng_below(rng, (uint64_t)p->queries);
  for (long u = 0; u < updates; u++) {
    kinds[u] = (long)bench_rng_below(rng, KINDS);
    ids[u] = random_id(rng, p);
    /* half add seats (price > 0), half delete (price 0) */
    prices[u] = bench_rng_below(rng, 2) ? 50 + 10 * (long)bench_rng_below(rng, 50) : 0;
  }
  TM_BEGIN();
  for (long u = 0; u < updates; u++) {
    if (prices[u])
      add_seats(TM_ARG m, kinds[u], ids[u], prices[u]);
    else
      delete_unused(TM_ARG m, kinds[u], ids[u]);
  }
  TM_END();
}

static void client(int index, void *arg) {
  run *r = arg;
  const params *p = r->p;
  worker *w = &r->workers[index];
  TM_THREAD_ENTER();
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)index);
  long ops = p->ops / p->threads + (index < p->ops % p->threads);
  for (long i = 0; i < ops; i++) {
    long action = (long)bench_rng_below(&rng, 100);
    if (action < p->user) {
      make_reservation(&r->m, &rng, p);
      w->reservations++;
    } else if ((action - p->user) % 2 == 0) {
      long id = random_id(&rng, p);
      TM_BEGIN();
      delete_customer(TM_ARG & r->m, id);
      TM_END();
      w->deletions++;
    } else {
      update_tables(&r->m, &rng, p);
      w->updates++;
    }
  }
  TM_THREAD_EXIT();
}

/* ---- Set-up, check, tear-down (alone) ---- */

static void populate(manager *m, const params *p) {
  for (int k = 0; k < KINDS; k++) m->table[k] = rbtree_alloc();
  m->customers = rbtree_alloc();
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, 1u << 20);
  for (long id = 1; id <= p->relations; id++) {
    TM_BEGIN();
    for (long k = 0; k < KINDS; k++)
      add_seats(TM_ARG m, k, id, 50 + 10 * (long)bench_rng_below(&rng, 50));
    get_or_add_customer(TM_ARG m, id);
    TM_END();
  }
}

typedef struct check {
  const manager *m;
  char *err;
  size_t err_len;
  unsigned long long reservations;
  /* seats held per resource, counted from the customers: kind, id -> count */
  long *held[KINDS];
  long ids;
} check;

static bool count_reservation(long key, void *value, void *arg) {
  check *c = arg;
  const reservation *rec = value;
  if (key != reservation_key(rec->kind, rec->id) || rec->kind < 0 || rec->kind >= KINDS ||
      rec->id < 1 || rec->id > c->ids) {
    snprintf(c->err, c->err_len, "a reservation record is corrupt (key %ld)", key);
    return false;
  }
  c->held[rec->kind][rec->id]++;
  c->reservations++;
  return true;
}

static bool check_customer(long key, void *value, void *arg) {
  check *c = arg;
  const customer *cu = value;
  if (cu->id != key || !list_is_sorted(cu->reservations)) {
    snprintf(c->err, c->err_len, "customer %ld is corrupt", key);
    return false;
  }
  return list_for_each(cu->reservations, count_reservation, c);
}

typedef struct resource_check {
  check *c;
  int kind;
  unsigned long long used;
} resource_check;

static bool check_resource(long key, void *value, void *arg) {
  resource_check *rc = arg;
  check *c = rc->c;
  const resource *r = value;
  if (r->id != key || r->used < 0 || r->free < 0 || r->used + r->free != r->total) {
    snprintf(c->err, c->err_len, "%s %ld: used %ld + free %ld != total %ld", kind_names[rc->kind],
             key, r->used, r->free, r->total);
    return false;
  }
  if (r->used != c->held[rc->kind][key]) {
    snprintf(c->err, c->err_len, "%s %ld: %ld seats used, customers hold %ld", kind_names[rc->kind],
             key, r->used, c->held[rc->kind][key]);
    return false;
  }
  c->held[rc->kind][key] = -1; /* seen */
  rc->used += (unsigned long long)r->used;
  return true;
}

/* The checks of the header comment; also counts what the JSON reports. */
static bool verify(const manager *m, const params *p, char *err, size_t err_len, long *customers,
                   unsigned long long *reservations) {
  long range = p->relations; /* ids never exceed the initial ones */
  check c = {.m = m, .err = err, .err_len = err_len, .ids = range};
  bool ok = true;
  for (int k = 0; k < KINDS; k++) c.held[k] = calloc((size_t)range + 1, sizeof(long));
  for (int k = 0; ok && k < KINDS; k++) {
    if (rbtree_verify(m->table[k], err, err_len) < 0) ok = false;
  }
  if (ok && (*customers = rbtree_verify(m->customers, err, err_len)) < 0) ok = false;
  if (ok) ok = rbtree_for_each(m->customers, check_customer, &c);
  unsigned long long used = 0;
  for (int k = 0; ok && k < KINDS; k++) {
    resource_check rc = {.c = &c, .kind = k};
    ok = rbtree_for_each(m->table[k], check_resource, &rc);
    used += rc.used;
    for (long id = 1; ok && id <= range; id++) {
      if (c.held[k][id] > 0) {
        snprintf(err, err_len, "customers hold %ld seats of %s %ld, which is gone", c.held[k][id],
                 kind_names[k], id);
        ok = false;
      }
    }
  }
  if (ok && used != c.reservations) {
    snprintf(err, err_len, "%llu seats used, %llu reservations", used, c.reservations);
    ok = false;
  }
  *reservations = c.reservations;
  for (int k = 0; k < KINDS; k++) free(c.held[k]);
  return ok;
}

static void free_customer(void *value) {
  customer *c = value;
  long key;
  for (void *rec; (rec = TMlist_remove_first(TM_ARG c->reservations, &key));) TM_FREE(rec);
  TMlist_free(TM_ARG c->reservations);
  TM_FREE(c);
}

static void free_resource(void *value) { TM_FREE(value); }

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);
  TM_STARTUP(p.threads);
  run r = {.p = &p};
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!r.workers) {
    fprintf(stderr, "vacation: out of memory\n");
    return 1;
  }
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  populate(&r.m, &p);
  tx_backend_stats_reset();
  double start = bench_now();
  double cpu_s = bench_run_threads((int)p.threads, client, &r);
  double time_s = bench_now() - start;
  tx_backend_stats_snapshot();

  worker total = {0};
  for (long i = 0; i < p.threads; i++) {
    total.reservations += r.workers[i].reservations;
    total.deletions += r.workers[i].deletions;
    total.updates += r.workers[i].updates;
  }
  char err[256] = "";
  long customers = 0;
  unsigned long long reservations = 0;
  bool valid = verify(&r.m, &p, err, sizeof err, &customers, &reservations);

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "vacation");
  bench_json_object(&j, "params");
  bench_json_str(&j, "size", stamp_size_names[p.size]);
  bench_json_int(&j, "relations", p.relations);
  bench_json_int(&j, "queries", p.queries);
  bench_json_int(&j, "query_range", p.query_range);
  bench_json_int(&j, "user", p.user);
  bench_json_int(&j, "ops", p.ops);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, NULL);
  tx_report_results_begin(&j, (unsigned long long)p.ops, time_s, cpu_s);
  bench_json_uint(&j, "reservation_txs", total.reservations);
  bench_json_uint(&j, "deletion_txs", total.deletions);
  bench_json_uint(&j, "update_txs", total.updates);
  bench_json_int(&j, "customers", customers);
  bench_json_uint(&j, "reservations_held", reservations);
  stamp_report_end(&j, valid, err);

  fprintf(stderr, "vacation: %ld threads, %.0f transactions/s, allocator %s\n", p.threads,
          tx_report_rate((unsigned long long)p.ops, time_s), bench_allocator_name());
  int status = tx_report_exit("vacation", valid, err);
  for (int k = 0; k < KINDS; k++) rbtree_free(r.m.table[k], free_resource);
  rbtree_free(r.m.customers, free_customer);
  free(r.workers);
  TM_SHUTDOWN();
  return status;
}
