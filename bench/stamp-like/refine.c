/* refine: allocation-heavy long transactions in the character of STAMP's yada (Delaunay
 * mesh refinement), on a mesh reduced to its graph. Elements have an area and a list of
 * neighbours; the mesh starts as a --side x --side grid with random areas in
 * 1..--max-area, and every element larger than --threshold ("bad") is on a shared work
 * queue. Each thread repeats, until the queue is empty:
 *   1. one transaction takes an element from the queue;
 *   2. one transaction refines it: if another refinement already removed it, it is freed;
 *      else its cavity (the element and its bad neighbours) is removed from the mesh, its
 *      neighbour lists freed, and replaced by |cavity| + 1 new elements sharing the
 *      cavity's area at random, chained together and linked to the cavity's boundary; the
 *      new bad ones join the queue. Removed cavity members other than the element stay on
 *      the queue, marked garbage, until their turn frees them.
 * As in yada, a transaction frees elements that others may still be reading (a garbage
 * element, a neighbour list), and allocates dozens of objects. Elements only multiply
 * (one more per refinement) and never fall below area 1, so the refinement ends.
 * Valid when the queue is empty, every element reachable from the root is live and not
 * bad, neighbourhood is symmetric, the areas add up to the initial total, and the live
 * elements are exactly those created and not freed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stamp_like.h"
#include "tm.h"
#include "tmlist.h"
#include "tmqueue.h"
#include "tx_args.h"
#include "tx_backend.h"
#include "tx_report.h"

typedef struct params {
  int size;
  long side, max_area, threshold, threads, seed;
} params;

typedef struct element {
  long id, area, garbage;
  tmlist *neighbours; /* key: the neighbour's id; NULL once removed */
} element;

typedef struct mesh {
  element *root; /* some live element: where the check starts */
  char pad[64 - sizeof(element *)];
} mesh;

typedef struct worker {
  _Alignas(64) long created, freed, refinements, next_id;
  /* scratch for one refinement (thread-private, not transactional) */
  element **cavity, **boundary, **scan;
  long cavity_cap, boundary_cap, scan_cap;
} worker;

typedef struct run {
  const params *p;
  mesh m;
  tmqueue *work;
  worker *workers;
  long initial;
} run;

static void parse(int argc, char **argv, params *p) {
  *p = (params){.size = STAMP_SIZE_SMALL};
  tx_common_args common = {.threads = 1, .seed = 1};
  const bench_arg own[] = {
      BENCH_CHOICE("size", &p->size, stamp_size_names, STAMP_SIZE_COUNT,
                   "input preset: small (tests), medium (the study)"),
      BENCH_LONG("side", &p->side, 0, 4096, "the initial grid is side x side (0: from --size)"),
      BENCH_LONG("max-area", &p->max_area, 0, 1L << 20,
                 "initial areas are 1..max-area (0: from --size)"),
      BENCH_LONG("threshold", &p->threshold, 0, 1L << 20,
                 "elements larger than this are refined (0: from --size)"),
  };
  tx_args_parse(argc, argv,
                "yada-like refinement of a mesh graph: long transactions that free a cavity and\n"
                "allocate its replacement; prints one JSON object.",
                own, (int)(sizeof own / sizeof own[0]), &common);
  p->threads = common.threads;
  p->seed = common.seed;
  stamp_size_default(&p->side, p->size, 16, 96);
  stamp_size_default(&p->max_area, p->size, 64, 64);
  stamp_size_default(&p->threshold, p->size, 12, 12);
}

static void *grow(void *array, long *cap, long need) {
  if (need <= *cap) return array;
  long cap2 = *cap ? *cap : 16;
  while (cap2 < need) cap2 *= 2;
  void *grown = realloc(array, (size_t)cap2 * sizeof(element *));
  if (!grown) abort();
  *cap = cap2;
  return grown;
}

/* e's neighbours into w->scan; their number. Inside a transaction. */
TM_CALLABLE static long neighbours_of(TM_ARGDECL worker *w, element *e) {
  tmlist *list = TM_SHARED_READ_P(e->neighbours);
  long n = TMlist_values(TM_ARG list, (void **)w->scan, w->scan_cap);
  if (n > w->scan_cap) {
    w->scan = grow(w->scan, &w->scan_cap, n);
    TMlist_values(TM_ARG list, (void **)w->scan, w->scan_cap);
  }
  return n;
}

static bool among(element *const *set, long n, const element *e) {
  for (long i = 0; i < n; i++)
    if (set[i] == e) return true;
  return false;
}

TM_CALLABLE static void link_pair(TM_ARGDECL element *a, element *b) {
  TMlist_insert(TM_ARG TM_SHARED_READ_P(a->neighbours), TM_SHARED_READ(b->id), b);
  TMlist_insert(TM_ARG TM_SHARED_READ_P(b->neighbours), TM_SHARED_READ(a->id), a);
}

TM_CALLABLE static element *element_new(TM_ARGDECL worker *w, long area) {
  element *e = TM_MALLOC(sizeof *e);
  if (!e) abort();
  /* Ids only grow, also across aborted attempts: unique, with gaps. */
  *e = (element){.id = w->next_id++, .area = area, .neighbours = TMlist_alloc(TM_ARG_ALONE)};
  return e;
}

/* The refinement of step 2 for a live element e; returns the number of new elements.
 * Inside a transaction. */
TM_CALLABLE static long refine(TM_ARGDECL run *r, worker *w, element *e) {
  const params *p = r->p;
  long nc = 1, nb = 0, area = TM_SHARED_READ(e->area);
  long n = neighbours_of(TM_ARG w, e);
  w->cavity = grow(w->cavity, &w->cavity_cap, n + 1);
  w->cavity[0] = e;
  for (long i = 0; i < n; i++) {
    if (TM_SHARED_READ(w->scan[i]->area) > p->threshold) {
      w->cavity[nc++] = w->scan[i];
      area += TM_SHARED_READ(w->scan[i]->area);
    }
  }
  /* Unlink the cavity from its boundary, free its lists, mark the members garbage. */
  bool root_removed = false;
  element *root = TM_SHARED_READ_P(r->m.root);
  for (long c = 0; c < nc; c++) {
    element *member = w->cavity[c];
    long id = TM_SHARED_READ(member->id);
    n = neighbours_of(TM_ARG w, member);
    for (long i = 0; i < n; i++) {
      element *b = w->scan[i];
      if (among(w->cavity, nc, b)) continue;
      TMlist_remove(TM_ARG TM_SHARED_READ_P(b->neighbours), id);
      if (!among(w->boundary, nb, b)) {
        w->boundary = grow(w->boundary, &w->boundary_cap, nb + 1);
        w->boundary[nb++] = b;
      }
    }
    TMlist_free(TM_ARG TM_SHARED_READ_P(member->neighbours));
    TM_SHARED_WRITE_P(member->neighbours, NULL);
    TM_SHARED_WRITE(member->garbage, 1);
    if (member == root) root_removed = true;
  }
  /* nc + 1 children share the area, each at least 1 (every member is bad: area > nc). */
  long k = nc + 1, weights[k], sum = 0;
  bench_rng rng; /* seeded by the element: every attempt draws the same split */
  bench_rng_seed(&rng, (uint64_t)p->seed, (uint64_t)TM_SHARED_READ(e->id));
  for (long i = 0; i < k; i++) sum += weights[i] = 1 + (long)bench_rng_below(&rng, 4);
  long spare = area - k, given = 0;
  element *prev = NULL, *first = NULL;
  for (long i = 0; i < k; i++) {
    long share = 1 + spare * weights[i] / sum;
    if (i == k - 1) share = area - given;
    given += share;
    element *child = element_new(TM_ARG w, share);
    if (prev) link_pair(TM_ARG prev, child);
    if (!first) first = child;
    prev = child;
    for (long b = i; b < nb; b += k) link_pair(TM_ARG child, w->boundary[b]);
    if (share > p->threshold) TMqueue_push(TM_ARG r->work, child);
  }
  if (root_removed) TM_SHARED_WRITE_P(r->m.root, first);
  TM_FREE(e); /* taken off the queue by this thread; the others stay queued as garbage */
  return k;
}

static void worker_main(int index, void *arg) {
  run *r = arg;
  worker *w = &r->workers[index];
  w->next_id = ((long)index + 1) << 40;
  TM_THREAD_ENTER();
  /* Totals kept across transactions, updated inside them: TM_LOCAL_WRITE restores them if
   * the transaction aborts, so each refinement counts once. */
  long created = 0, freed = 0, refinements = 0;
  for (;;) {
    element *e;
    TM_BEGIN();
    e = TMqueue_pop(TM_ARG r->work);
    TM_END();
    if (!e) break;
    TM_BEGIN();
    if (TM_SHARED_READ(e->garbage)) {
      TM_FREE(e);
      TM_LOCAL_WRITE(freed, freed + 1);
    } else {
      long children = refine(TM_ARG r, w, e); /* frees e */
      TM_LOCAL_WRITE(freed, freed + 1);
      TM_LOCAL_WRITE(created, created + children);
      TM_LOCAL_WRITE(refinements, refinements + 1);
    }
    TM_END();
  }
  TM_THREAD_EXIT();
  w->created = created;
  w->freed = freed;
  w->refinements = refinements;
}

/* ---- Set-up, check, tear-down (alone) ---- */

static void build_mesh(run *r) {
  const params *p = r->p;
  long side = p->side;
  element **grid = malloc((size_t)(side * side) * sizeof *grid);
  if (!grid) abort();
  bench_rng rng;
  bench_rng_seed(&rng, (uint64_t)p->seed, 1u << 22);
  worker setup = {.next_id = 1};
  for (long i = 0; i < side * side; i++) {
    /* Drawn before the block: a restart (a refill abort, say) must not draw again. */
    long area = 1 + (long)bench_rng_below(&rng, (uint64_t)p->max_area);
    TM_BEGIN();
    grid[i] = element_new(TM_ARG & setup, area);
    if (i % side) link_pair(TM_ARG grid[i - 1], grid[i]);
    if (i >= side) link_pair(TM_ARG grid[i - side], grid[i]);
    if (grid[i]->area > p->threshold) TMqueue_push(TM_ARG r->work, grid[i]);
    TM_END();
  }
  r->m.root = grid[0];
  r->initial = side * side;
  free(grid);
}

typedef struct visit {
  element **seen; /* every element reached, in order */
  long count, cap;
  char *err;
  size_t err_len;
  const element *at;
} visit;

/* Visit state: an element is reached when its id is in the set (open addressing). */
typedef struct idset {
  long *slot;
  long mask;
} idset;

static bool idset_add(idset *s, long id) {
  for (long h = (long)(((unsigned long)id * 0x9e3779b97f4a7c15UL) >> 20) & s->mask;;
       h = (h + 1) & s->mask) {
    if (s->slot[h] == id) return false;
    if (s->slot[h] == 0) {
      s->slot[h] = id;
      return true;
    }
  }
}

static bool check_link(long key, void *value, void *arg) {
  visit *v = arg;
  const element *n = value;
  if (n->id != key || n->garbage || !n->neighbours || !list_contains(n->neighbours, v->at->id)) {
    snprintf(v->err, v->err_len, "element %ld: neighbour %ld is removed or does not link back",
             v->at->id, key);
    return false;
  }
  return true;
}

static bool push_neighbour(long key, void *value, void *arg) {
  (void)key;
  visit *v = arg;
  if (v->count == v->cap) {
    v->cap *= 2;
    v->seen = realloc(v->seen, (size_t)v->cap * sizeof *v->seen);
    if (!v->seen) abort();
  }
  v->seen[v->count++] = value;
  return true;
}

/* Walks the mesh from the root; the live elements in v->seen. */
static bool verify(run *r, long live, char *err, size_t err_len, visit *v, long *area_out) {
  const params *p = r->p;
  *v = (visit){.cap = 1024, .err = err, .err_len = err_len};
  v->seen = malloc((size_t)v->cap * sizeof *v->seen);
  long slots = 1;
  while (slots < 4 * (live + 16)) slots *= 2;
  idset ids = {.slot = calloc((size_t)slots, sizeof(long)), .mask = slots - 1};
  if (!v->seen || !ids.slot) abort();
  bool ok = true;
  if (queue_count(r->work)) {
    snprintf(err, err_len, "%ld elements left on the work queue", queue_count(r->work));
    ok = false;
  }
  long area = 0, reached = 0;
  visit walk = *v;
  walk.count = 0;
  push_neighbour(0, r->m.root, &walk);
  for (long i = 0; ok && i < walk.count; i++) {
    element *e = walk.seen[i];
    if (reached >= live + 1) {
      snprintf(err, err_len, "more elements reachable than the %ld live ones", live);
      ok = false;
      break;
    }
    if (!idset_add(&ids, e->id)) continue; /* reached before */
    walk.seen[reached++] = e;              /* compact: slots below i are consumed */
    if (e->garbage || !e->neighbours || e->area < 1 || e->area > p->threshold ||
        !list_is_sorted(e->neighbours)) {
      snprintf(err, err_len, "element %ld: removed, bad (area %ld) or with a broken list", e->id,
               e->area);
      ok = false;
      break;
    }
    area += e->area;
    walk.at = e;
    ok = list_for_each(e->neighbours, check_link, &walk) &&
         list_for_each(e->neighbours, push_neighbour, &walk);
  }
  *v = walk;
  v->count = reached;
  *area_out = area;
  if (ok && reached != live) {
    snprintf(err, err_len, "%ld elements reachable, %ld live", reached, live);
    ok = false;
  }
  free(ids.slot);
  return ok;
}

int main(int argc, char **argv) {
  params p;
  parse(argc, argv, &p);
  TM_STARTUP(p.threads);
  run r = {.p = &p};
  r.workers = aligned_alloc(64, (size_t)p.threads * sizeof(worker));
  if (!r.workers) {
    fprintf(stderr, "refine: out of memory\n");
    return 1;
  }
  memset(r.workers, 0, (size_t)p.threads * sizeof(worker));
  r.work = queue_alloc();
  build_mesh(&r);
  long total_area = 0;
  visit v;
  char err[256] = "";
  {
    /* the initial total: build_mesh's draws again */
    long sum = 0;
    bench_rng rng;
    bench_rng_seed(&rng, (uint64_t)p.seed, 1u << 22);
    for (long i = 0; i < p.side * p.side; i++)
      sum += 1 + (long)bench_rng_below(&rng, (uint64_t)p.max_area);
    total_area = sum;
  }

  tx_backend_stats_reset();
  double start = bench_now();
  double cpu_s = bench_run_threads((int)p.threads, worker_main, &r);
  double time_s = bench_now() - start;
  tx_backend_stats_snapshot();

  long created = 0, freed = 0, refinements = 0;
  for (long i = 0; i < p.threads; i++) {
    created += r.workers[i].created;
    freed += r.workers[i].freed;
    refinements += r.workers[i].refinements;
  }
  long live = r.initial + created - freed, area = 0;
  bool valid = verify(&r, live, err, sizeof err, &v, &area);
  if (valid && area != total_area) {
    snprintf(err, sizeof err, "the areas add up to %ld, not %ld", area, total_area);
    valid = false;
  }

  bench_json j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "workload", "refine");
  bench_json_object(&j, "params");
  bench_json_str(&j, "size", stamp_size_names[p.size]);
  bench_json_int(&j, "side", p.side);
  bench_json_int(&j, "max_area", p.max_area);
  bench_json_int(&j, "threshold", p.threshold);
  bench_json_int(&j, "seed", p.seed);
  bench_json_end(&j);
  tx_report_config(&j, p.threads, NULL);
  tx_report_results_begin(&j, (unsigned long long)refinements, time_s, cpu_s);
  bench_json_int(&j, "refinements", refinements);
  bench_json_int(&j, "elements_created", created);
  bench_json_int(&j, "elements_freed", freed);
  bench_json_int(&j, "elements_final", live);
  stamp_report_end(&j, valid, err);

  fprintf(stderr, "refine: %ld threads, %.0f refinements/s, allocator %s\n", p.threads,
          tx_report_rate((unsigned long long)refinements, time_s), bench_allocator_name());
  int status = tx_report_exit("refine", valid, err);
  /* Tear-down: the elements the walk reached (all of them when valid). */
  for (long i = 0; i < v.count; i++) {
    TMlist_free(TM_ARG v.seen[i]->neighbours);
    TM_FREE(v.seen[i]);
  }
  free(v.seen);
  for (long i = 0; i < p.threads; i++) {
    free(r.workers[i].cavity);
    free(r.workers[i].boundary);
    free(r.workers[i].scan);
  }
  queue_free(r.work);
  free(r.workers);
  TM_SHUTDOWN();
  return status;
}
