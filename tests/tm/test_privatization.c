/* Privatization: a transaction unlinks a node and its thread then uses the node without the
 * STM. Writers keep incrementing the node's value through the published pointer; in each
 * round the privatizer publishes the node, lets the writers at it, unlinks it in a
 * transaction, and then writes and re-reads the value directly. A write-back commit that
 * took its timestamp before the unlinking one but writes back later (delayed write-back)
 * would overwrite the private value; option privatization=1 (default) makes commits wait
 * for older write-backs. Runs on etl-wb, ctl-wb and tm=lock (etl-wt is documented as not
 * privatization-safe: a doomed transaction writes in place).
 * The privatizer's direct accesses are relaxed atomics: a doomed writer may still load the
 * node transactionally after the unlink (it aborts at its next validation), which is not a
 * data race the program can see, but ThreadSanitizer would report it against plain
 * accesses. The check itself is on the values. */
#include "tm_test.h"

#define WRITERS 3

typedef struct node {
  _Alignas(64) uint64_t value;
} node;

static node the_node;
static _Alignas(64) node *published;
static int stop, rounds_lost;
static long rounds;

static TM_TEST_TX void write_through_published(void) {
  TM_ATOMIC {
    node *n = tm_load(&published);
    if (n) tm_store(&n->value, tm_load(&n->value) + 1);
  }
}

static TM_TEST_TX void publish(node *n) {
  TM_ATOMIC { tm_store(&published, n); }
}

static void privatizer(void) {
  for (long r = 0; r < rounds; r++) {
    publish(&the_node);
    yield_for(2); /* the writers get at it */
    publish(NULL);
    /* The node is private now: no committed transaction may change it any more. */
    uint64_t mine = 1000000000ull + (uint64_t)r;
    __atomic_store_n(&the_node.value, mine, __ATOMIC_RELAXED);
    yield_for(1);
    if (__atomic_load_n(&the_node.value, __ATOMIC_RELAXED) != mine) flag_add(&rounds_lost, 1);
  }
  flag_set(&stop, 1);
}

static void worker(int index, void *arg) {
  (void)arg;
  if (index == 0) {
    privatizer();
    return;
  }
  for (long i = 0; !flag_get(&stop); i++) {
    write_through_published();
    if ((i & 255) == 0) sched_yield(); /* 2 cores: the privatizer must get its turns */
  }
}

int main(void) {
  tm_test_watchdog(240);
  tm_test_print_config("privatization");
  if (tm_test_option_is("design", "etl-wt") && !tm_test_is_glock()) {
    fprintf(stderr, "etl-wt is not privatization-safe (docs/stm.md): nothing to check\n");
    return check_exit();
  }
  rounds = check_scaled(3000, 600);
  tm_test_run_threads(1 + WRITERS, worker, NULL);
  tm_stats s;
  tm_stats_get(&s);
  tm_test_print_stats("privatization", &s);
  CHECKF(rounds_lost == 0, "%d of %ld rounds: a committed write landed on the private node",
         rounds_lost, rounds);
  return check_exit();
}
