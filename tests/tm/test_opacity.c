/* Opacity: even a transaction that will abort never observes an inconsistent state.
 *   pair  writers keep x == y (x is written first, y later in the same transaction, with
 *         yields in between); readers load x, yield, load y and must never see x != y —
 *         not even in an attempt that later aborts. The readers also spin while x != y
 *         (bounded): a runtime without opacity loops there (the watchdog catches it).
 *   list  a singly linked list of LIST_NODES nodes from a fixed pool; writers move a node
 *         to another position (unlink + insert, both found by walking the list). Readers
 *         walk the whole list: they must always find exactly LIST_NODES nodes (no cycle, no
 *         NULL in the middle) and the same sum of values. A runtime that lets a reader see
 *         half of a move walks off into a cycle or a truncated list.
 * Violations are counted from inside the transactions (a plain atomic counter), so even an
 * attempt that would be rolled back later is caught. Runs on every design x cm. */
#include "tm_test.h"

#define WRITERS 2
#define READERS 2
#define LIST_NODES 24

static struct {
  _Alignas(64) uint64_t x;
  _Alignas(64) uint64_t y;
} pair;

typedef struct node {
  struct node *next;
  uint64_t value;
} node;

static node *list_head; /* sentinel */
static node pool[LIST_NODES + 1] __attribute__((aligned(64)));
static uint64_t list_sum;

static long pair_iterations, list_iterations;
static int violations, zombie_spins, cycles_seen, writers_done;
static uint64_t first_bad[2]; /* the first inconsistent (x, y) a pair reader saw */

static TM_TEST_TX void pair_write(int yield_between) {
  TM_ATOMIC {
    uint64_t v = tm_load(&pair.x);
    tm_store(&pair.x, v + 1);
    if (yield_between) sched_yield(); /* widen the window between the two stores */
    tm_store(&pair.y, v + 1);
  }
}

static void pair_writer(int index) {
  uint64_t rng = (uint64_t)index * 0x9E3779B97F4A7C15ull + 1;
  for (long i = 0; i < pair_iterations; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    pair_write((rng >> 58) == 0);
    if ((i & 63) == 0) sched_yield(); /* let the readers run alongside */
  }
}

static TM_TEST_TX void pair_read(int yield_between) {
  TM_ATOMIC_RO {
    uint64_t x = tm_load(&pair.x);
    if (yield_between) sched_yield();
    uint64_t y = tm_load(&pair.y);
    if (x != y && flag_add(&violations, 1) == 1) {
      __atomic_store_n(&first_bad[0], x, __ATOMIC_SEQ_CST);
      __atomic_store_n(&first_bad[1], y, __ATOMIC_SEQ_CST);
    }
    /* A zombie that saw x != y would spin here forever. */
    for (int spin = 0; tm_load(&pair.x) != tm_load(&pair.y); spin++)
      if (spin == 1000) {
        flag_add(&zombie_spins, 1);
        break;
      }
  }
}

static void pair_reader(void) {
  long reads = 0;
  /* Bounded: readers that always win (cm=kill: the older kills the younger) could
   * otherwise keep the writers from finishing for a long time. */
  while ((!flag_get(&writers_done) || reads < 100) && reads < pair_iterations) {
    pair_read((reads & 15) == 0);
    reads++;
    sched_yield(); /* readers must not starve the writers (tm=lock is not fair) */
  }
}

/* The node at position `pos` (0 = the sentinel). */
static node *list_at(int pos) {
  node *n = list_head;
  for (int i = 0; i < pos && n; i++) n = tm_load(&n->next);
  return n;
}

/* Unlinks the node after position `from` and re-inserts it after position `to` of the
 * shortened list. */
static TM_TEST_TX void list_move(int from, int to, int yield_between) {
  TM_ATOMIC {
    node *pred = list_at(from);
    node *moved = pred ? tm_load(&pred->next) : NULL;
    if (moved) {
      tm_store(&pred->next, tm_load(&moved->next));
      if (yield_between) sched_yield(); /* the list is now one node short */
      node *after = list_at(to);
      if (after) {
        tm_store(&moved->next, tm_load(&after->next));
        tm_store(&after->next, moved);
      }
    }
  }
}

static void list_writer(int index) {
  uint64_t rng = (uint64_t)index * 0x2545F4914F6CDD1Dull + 7;
  for (long i = 0; i < list_iterations; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    list_move((int)((rng >> 33) % LIST_NODES), (int)((rng >> 13) % (LIST_NODES - 1)),
              (rng >> 60) == 0);
    if ((i & 15) == 0) sched_yield();
  }
}

static TM_TEST_TX void list_walk(long salt) {
  TM_ATOMIC_RO {
    int count = 0;
    uint64_t sum = 0;
    for (node *n = tm_load(&list_head->next); n; n = tm_load(&n->next)) {
      if (++count > LIST_NODES) {
        flag_add(&cycles_seen, 1);
        break;
      }
      sum += tm_load(&n->value);
      if (((salt + count) & 31) == 0) sched_yield();
    }
    if (count != LIST_NODES || sum != list_sum) flag_add(&violations, 1);
  }
}

static void list_reader(void) {
  long walks = 0;
  while ((!flag_get(&writers_done) || walks < 100) && walks < 2 * list_iterations) {
    list_walk(walks++);
    sched_yield();
  }
}

static int writers_running;
static void (*writer_fn)(int);
static void (*reader_fn)(void);

static void worker(int index, void *arg) {
  (void)arg;
  if (index < WRITERS) {
    writer_fn(index);
    if (flag_add(&writers_running, -1) == 0) flag_set(&writers_done, 1);
  } else {
    reader_fn();
  }
}

static void run(const char *name, void (*w)(int), void (*r)(void)) {
  writer_fn = w;
  reader_fn = r;
  violations = zombie_spins = cycles_seen = writers_done = 0;
  writers_running = WRITERS;
  tm_stats_reset();
  tm_test_run_threads(WRITERS + READERS, worker, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats(name, &s);
  CHECKF(violations == 0, "%s: %d inconsistent snapshots observed (pair: first x=%llu y=%llu)",
         name, violations, (unsigned long long)first_bad[0], (unsigned long long)first_bad[1]);
  CHECKF(zombie_spins == 0, "%s: %d transactions spun on x != y", name, zombie_spins);
  CHECKF(cycles_seen == 0, "%s: %d walks found a cycle", name, cycles_seen);
  if (tm_test_option_is("tm", "glock")) CHECK(s.aborts == 0);
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("opacity");
  pair_iterations = check_scaled(100000, 10000);
  list_iterations = check_scaled(20000, 2000);

  run("pair", pair_writer, pair_reader);
  CHECK(pair.x == pair.y && pair.x == (uint64_t)(WRITERS * pair_iterations));

  list_head = &pool[0];
  for (int i = 0; i < LIST_NODES; i++) {
    pool[i].next = &pool[i + 1];
    pool[i + 1].value = (uint64_t)(i + 1) * 3;
    list_sum += pool[i + 1].value;
  }
  pool[LIST_NODES].next = NULL;
  run("list", list_writer, list_reader);
  int count = 0;
  uint64_t sum = 0;
  for (node *n = list_head->next; n && count <= LIST_NODES; n = n->next) count++, sum += n->value;
  CHECK(count == LIST_NODES && sum == list_sum);
  return check_exit();
}
