/* tm_stress: the runtime's own exactness check, run under every design and contention
 * manager with many more threads than cores (scripts: docs/stm.md, "Stress check").
 *
 * Every thread runs --iters transactions, chosen round-robin among:
 *   counter   increments 4 shared 64-bit counters (two share a stripe), a 32-bit and an
 *             8-bit counter packed in one word, and a pair (x, y) kept equal;
 *   transfer  moves a random amount between two random accounts of a bank;
 *   audit     (read-only) sums every account inside the transaction and checks the total,
 *             and checks x == y: a doomed transaction must never see a wrong state
 *             (opacity), so a mismatch inside a transaction is an error at once;
 *   nested    a transfer in a child block that cancels itself (tm_abort) every other
 *             time; the parent's own increment of `nested_parent` must survive either way
 *             under closed nesting (under nesting=flat the cancel ends the whole block);
 *   list      pushes a tm_malloc'd node on a shared stack, pops one and tm_frees it, or
 *             privatizes the whole stack and walks it without the STM (privatization).
 * Every 97th iteration a thread also calls tm_request_validation (all running transactions
 * revalidate). At the end: counters == threads * (their share of iterations), bank total unchanged,
 * nested_parent == number of nested parents that survive, nested child transfers balanced, stack
 * length == pushes - pops. Exit 0 when everything is exact, 1 otherwise.
 * --iters is multiplied by TXALLOC_TEST_SCALE (tests/check.h: the sanitizer runs of
 * `make test` ask for less work), down to at least 1000 (or --iters, if less). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "txalloc/tm.h"

#define ACCOUNTS 64
#define START_BALANCE 1000

typedef struct node {
  struct node *next;
  uint64_t payload;
} node;

static struct {
  uint64_t c[4]; /* c[0], c[1] share a 32-byte stripe */
  char pad1[64];
  uint64_t packed; /* low 32 bits: u32 counter; byte 4: u8 counter (mod 256) */
  char pad2[64];
  uint64_t x, y;
  char pad3[64];
  int64_t accounts[ACCOUNTS];
  uint64_t nested_parent;
  node *stack;
  uint64_t stack_len;
} shared;

static int threads = 16, iters = 20000;
static uint64_t errors;
/* nesting=flat: a child's tm_abort cancels the whole block, parent's work included. */
static int flat_nesting;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

typedef struct {
  uint64_t counter_tx, nested_kept, pushes, pops;
} thread_result;

static void do_counter(int yield_inside) {
  TM_ATOMIC {
    for (int i = 0; i < 4; i++) tm_store(&shared.c[i], tm_load(&shared.c[i]) + 1);
    /* Descheduled while holding locks: the others run into them (waits, kills, extensions
     * of snapshots right after a commit: the path of an old lost-update bug). */
    if (yield_inside) sched_yield();
    uint32_t *u32 = (uint32_t *)&shared.packed;
    uint8_t *u8 = (uint8_t *)&shared.packed + 4;
    tm_store(u32, tm_load(u32) + 1);
    tm_store(u8, (uint8_t)(tm_load(u8) + 1));
    uint64_t x = tm_load(&shared.x);
    tm_store(&shared.x, x + 1);
    tm_store(&shared.y, tm_load(&shared.y) + 1);
  }
}

static void transfer(int a, int b, int64_t amount) {
  tm_store(&shared.accounts[a], tm_load(&shared.accounts[a]) - amount);
  tm_store(&shared.accounts[b], tm_load(&shared.accounts[b]) + amount);
}

static void do_transfer(uint64_t *seed) {
  volatile int a = (int)(rnd(seed) % ACCOUNTS), b = (int)(rnd(seed) % ACCOUNTS);
  volatile int64_t amount = (int64_t)(rnd(seed) % 50);
  TM_ATOMIC { transfer(a, b, amount); }
}

static void do_audit(void) {
  TM_ATOMIC_RO {
    int64_t total = 0;
    for (int i = 0; i < ACCOUNTS; i++) total += tm_load(&shared.accounts[i]);
    uint64_t x = tm_load(&shared.x), y = tm_load(&shared.y);
    if (total != (int64_t)ACCOUNTS * START_BALANCE || x != y) {
      fprintf(stderr,
              "tm_stress: inconsistent snapshot inside a transaction: total %lld, "
              "x %llu, y %llu\n",
              (long long)total, (unsigned long long)x, (unsigned long long)y);
      __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
    }
  }
}

/* The child block lives in its own function: two TM_ATOMIC in one scope shadow. */
static void nested_child(int a, int b, int64_t amount, uint64_t n) {
  TM_ATOMIC {
    transfer(a, b, amount);
    if (n & 1) tm_abort();
  }
}

static void do_nested(uint64_t *seed, uint64_t n) {
  volatile int a = (int)(rnd(seed) % ACCOUNTS), b = (int)(rnd(seed) % ACCOUNTS);
  volatile int64_t amount = (int64_t)(rnd(seed) % 50);
  TM_ATOMIC {
    tm_store(&shared.nested_parent, tm_load(&shared.nested_parent) + 1);
    nested_child(a, b, amount, n);
  }
}

static void free_one(node *n) {
  TM_ATOMIC { tm_free(n); }
}

static void free_chain(node *n) {
  while (n) {
    node *next = n->next;
    free_one(n);
    n = next;
  }
}

static void do_list(uint64_t *seed, thread_result *r) {
  if (rnd(seed) & 1) {
    volatile int pushed = 0;
    TM_ATOMIC {
      node *n = tm_malloc(sizeof *n);
      n->payload = 42;
      n->next = tm_load(&shared.stack);
      tm_store(&shared.stack, n);
      tm_store(&shared.stack_len, tm_load(&shared.stack_len) + 1);
      pushed = 1;
    }
    r->pushes += (uint64_t)pushed;
  } else if ((rnd(seed) & 3) == 0) {
    /* Privatize the whole stack, then walk it without the STM: every link written by the
     * committed pushes must be visible (privatization safety), and the chain must be as
     * long as the transactional counter said. */
    node *volatile head = NULL;
    volatile uint64_t len = 0;
    TM_ATOMIC {
      head = tm_load(&shared.stack);
      len = tm_load(&shared.stack_len);
      tm_store(&shared.stack, (node *)NULL);
      tm_store(&shared.stack_len, (uint64_t)0);
    }
    uint64_t walked = 0;
    for (node *n = head; n; n = n->next) {
      if (n->payload != 42) {
        fprintf(stderr, "tm_stress: a privatized node has payload %llu\n",
                (unsigned long long)n->payload);
        __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
      }
      walked++;
    }
    if (walked != len) {
      fprintf(stderr, "tm_stress: privatized %llu nodes, the counter said %llu\n",
              (unsigned long long)walked, (unsigned long long)len);
      __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
    }
    free_chain(head);
    r->pops += walked;
  } else {
    volatile int popped = 0;
    TM_ATOMIC {
      popped = 0;
      node *n = tm_load(&shared.stack);
      if (n) {
        if (tm_load(&n->payload) != 42) {
          fprintf(stderr, "tm_stress: a transaction read a freed node\n");
          __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
        }
        tm_store(&shared.stack, tm_load(&n->next));
        tm_store(&shared.stack_len, tm_load(&shared.stack_len) - 1);
        tm_store(&n->payload, 0);
        tm_free(n);
        popped = 1;
      }
    }
    r->pops += (uint64_t)popped;
  }
}

static pthread_barrier_t start;

static void *worker(void *arg) {
  thread_result *r = arg;
  pthread_barrier_wait(&start);
  uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)arg;
  for (int i = 0; i < iters; i++) {
    if (i % 97 == 0) tm_request_validation(); /* races with the others' snapshot extensions */
    switch (i % 5) {
    case 0:
      do_counter((i & 63) == 0);
      r->counter_tx++;
      break;
    case 1: do_transfer(&seed); break;
    case 2: do_audit(); break;
    case 3:
      do_nested(&seed, (uint64_t)i);
      r->nested_kept += !flat_nesting || !(i & 1);
      break;
    default: do_list(&seed, r); break;
    }
  }
  tm_thread_exit();
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: tm_stress [--threads N] [--iters N]\n"
                      "  TM options come from TXALLOC_* variables (tm, design, cm, ...)\n");
      return strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (threads < 1 || threads > 256 || iters < 1) {
    fprintf(stderr, "tm_stress: bad --threads or --iters\n");
    return 2;
  }
  iters = (int)check_scaled(iters, iters < 1000 ? iters : 1000);
  flat_nesting = txalloc_option_value((size_t)txalloc_option_find("nesting")) == 1;
  for (int i = 0; i < ACCOUNTS; i++) shared.accounts[i] = START_BALANCE;
  pthread_t tid[256];
  thread_result res[256];
  memset(res, 0, sizeof res);
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, &res[t]);
  uint64_t counter_tx = 0, nested_kept = 0, pushes = 0, pops = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    counter_tx += res[t].counter_tx;
    nested_kept += res[t].nested_kept;
    pushes += res[t].pushes;
    pops += res[t].pops;
  }
  int bad = errors != 0;
  for (int i = 0; i < 4; i++)
    if (shared.c[i] != counter_tx) {
      fprintf(stderr, "tm_stress: counter %d = %llu, expected %llu (lost updates)\n", i,
              (unsigned long long)shared.c[i], (unsigned long long)counter_tx);
      bad = 1;
    }
  if ((uint32_t)shared.packed != (uint32_t)counter_tx ||
      (uint8_t)(shared.packed >> 32) != (uint8_t)counter_tx || (shared.packed >> 40) != 0) {
    fprintf(stderr, "tm_stress: packed sub-word counters wrong: %#llx\n",
            (unsigned long long)shared.packed);
    bad = 1;
  }
  if (shared.x != counter_tx || shared.y != counter_tx) bad = 1;
  int64_t total = 0;
  for (int i = 0; i < ACCOUNTS; i++) total += shared.accounts[i];
  if (total != (int64_t)ACCOUNTS * START_BALANCE) {
    fprintf(stderr, "tm_stress: bank total %lld, expected %lld\n", (long long)total,
            (long long)ACCOUNTS * START_BALANCE);
    bad = 1;
  }
  if (shared.nested_parent != nested_kept) {
    fprintf(stderr, "tm_stress: nested parent count %llu, expected %llu\n",
            (unsigned long long)shared.nested_parent, (unsigned long long)nested_kept);
    bad = 1;
  }
  uint64_t len = 0;
  for (node *n = shared.stack; n; n = n->next) len++;
  if (len != pushes - pops || shared.stack_len != len) {
    fprintf(stderr, "tm_stress: stack length %llu (counter %llu), expected %llu\n",
            (unsigned long long)len, (unsigned long long)shared.stack_len,
            (unsigned long long)(pushes - pops));
    bad = 1;
  }
  tm_stats s;
  tm_stats_get(&s);
  tm_config_print_json(stdout);
  printf(" ");
  tm_stats_print_json(stdout, &s);
  printf(" %s\n", bad ? "FAILED" : "ok");
  return bad;
}
