/* Process-wide initialisation, run by the first call into the allocator from whatever
 * thread, possibly from ld.so or another library's constructor before main. It never
 * allocates (no dlsym, no stdio buffers): options are read from environ by the options
 * table, the secret comes from the auxiliary vector. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "alloc/internal.h"
#include "util/message.h"

txa_globals txa_g;
int txa_init_state;
static __thread bool tls_initialising; /* this thread runs txa_init_slow */

static void read_options(void) {
  txa_g.secure = txalloc_opt(TXALLOC_OPT_SECURE) != 0;
  txa_g.free_check = txalloc_opt(TXALLOC_OPT_FREE_CHECK) != 0 || txa_g.secure;
  txa_g.foreign_reuse = txalloc_opt(TXALLOC_OPT_FOREIGN_REUSE) != 0 && !txa_g.secure;
  atomic_store_explicit(&txa_g.heap_colour, txalloc_opt(TXALLOC_OPT_HEAP_COLOUR) == 1,
                        memory_order_relaxed);
  txa_g.decommit_delay_ms = (uint64_t)txalloc_opt(TXALLOC_OPT_DECOMMIT_DELAY_MS);
  txa_g.decommit_threshold = (uint64_t)txalloc_opt(TXALLOC_OPT_DECOMMIT_THRESHOLD_MB) << 20;
  txa_g.large_cache_max = (uint64_t)txalloc_opt(TXALLOC_OPT_LARGE_CACHE_MB) << 20;
  txa_g.region_size = (size_t)txalloc_opt(TXALLOC_OPT_REGION_MB) << 20;
  txa_g.bin_search = (uint32_t)txalloc_opt(TXALLOC_OPT_BIN_SEARCH);
  txa_g.bin_grow_percent = (uint32_t)txalloc_opt(TXALLOC_OPT_BIN_GROW_PERCENT);
}

static uintptr_t random_secret(void) {
  uintptr_t s = (uintptr_t)&txa_g ^ UINT64_C(0x9e3779b97f4a7c15);
  const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
  if (r) {
    uint64_t v;
    memcpy(&v, r, sizeof v);
    s ^= v;
  }
  return s;
}

/* The state word: 0 none; (pid << 2) | 1 running and (pid << 2) | 2 registering the fork
 * handlers, by a thread of process `pid`; TXA_INIT_DONE. A waiter that finds a running
 * state of another pid is in a child forked while a thread of its parent initialised: that
 * thread does not exist here, so the waiter resets the state and initialises itself (every
 * step is idempotent). */
static int running_state(int phase) { return (int)((unsigned)getpid() << 2) | phase; }

static void wait_or_take_over(void) {
  for (unsigned spins = 1;; spins++) {
    int s = __atomic_load_n(&txa_init_state, __ATOMIC_ACQUIRE);
    if (s == TXA_INIT_DONE || s == 0) return;
    if (spins % 64 == 0 && (s >> 2) != (int)getpid()) {
      __atomic_compare_exchange_n(&txa_init_state, &s, 0, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE);
      return;
    }
    __builtin_ia32_pause();
  }
}

void txa_init_slow(void) {
  /* pthread_atfork below may call malloc: that nested call finds the allocator ready
   * (state 2) and must not wait for this thread to finish. */
  if (tls_initialising) return;
  for (;;) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&txa_init_state, &expected, running_state(1), false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      break;
    if (expected == TXA_INIT_DONE) return;
    wait_or_take_over(); /* another thread initialises; it never waits for us */
  }
  tls_initialising = true;
  /* The steps up to state 2 run under txa_init_lock, which fork_prepare takes: a fork never
   * copies them half done (in particular the options table's reading of environ). */
  txa_lock_acquire(&txa_init_lock);
  txalloc_options_init();
  read_options();
  txa_g.secret = random_secret();
  txa_classes_init();
  txa_runs_init();
  txa_stripe_init();
  if (pthread_key_create(&txa_g.tls_key, txa_heap_tls_destructor) != 0) {
    txalloc_message("cannot create a pthread key: thread heaps will not be handed back");
  }
  /* Programs may close stderr before exit (coreutils' close_stdout does): keep a private
   * duplicate for the statistics printed at exit. */
  txa_g.stats_fd = txalloc_opt(TXALLOC_OPT_STATS) ? fcntl(2, F_DUPFD_CLOEXEC, 64) : -1;
  if (txalloc_opt(TXALLOC_OPT_VERBOSE))
    txalloc_message("initialised: %d size classes up to %zu bytes", TXA_CLASSES, TXA_MEDIUM_MAX);
  txa_lock_release(&txa_init_lock);
  __atomic_store_n(&txa_init_state, running_state(2), __ATOMIC_RELEASE);
  /* The fork handlers are registered (if the constructor below has not done it yet) before
   * any other thread may use the allocator (they wait for TXA_INIT_DONE), so no allocator
   * lock can be held across a fork without them. */
  txa_fork_register();
  __atomic_store_n(&txa_init_state, TXA_INIT_DONE, __ATOMIC_RELEASE);
  tls_initialising = false;
}

/* Registers the fork handlers when the library is loaded, before the program can start
 * threads, so that they exist for a fork racing the first initialisation. */
__attribute__((constructor)) static void register_fork_handlers_early(void) { txa_fork_register(); }
