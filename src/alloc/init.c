/* Process-wide initialisation, run by the first call into the allocator from whatever
 * thread, possibly from ld.so or another library's constructor before main. It never
 * allocates (no dlsym, no stdio buffers): options are read from environ by the options
 * table, the secret comes from the auxiliary vector. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "alloc/internal.h"
#include "util/message.h"

txa_globals txa_g;
int txa_init_state;
static __thread bool tls_initialising; /* this thread runs txa_init_slow */

static void read_options(void) {
  txa_g.secure = txalloc_opt(TXALLOC_OPT_SECURE) != 0;
  txa_g.free_check = txalloc_opt(TXALLOC_OPT_FREE_CHECK) != 0 || txa_g.secure;
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

void txa_init_slow(void) {
  /* pthread_atfork below may call malloc: that nested call finds the allocator ready
   * (state 2) and must not wait for this thread to finish. */
  if (tls_initialising) return;
  int expected = 0;
  if (!__atomic_compare_exchange_n(&txa_init_state, &expected, 1, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    /* Another thread initialises; it never waits for us, so it finishes. */
    while (__atomic_load_n(&txa_init_state, __ATOMIC_ACQUIRE) != TXA_INIT_DONE)
      __builtin_ia32_pause();
    return;
  }
  tls_initialising = true;
  txalloc_options_init();
  read_options();
  txa_g.secret = random_secret();
  txa_classes_init();
  if (pthread_key_create(&txa_g.tls_key, txa_heap_tls_destructor) != 0) {
    txalloc_message("cannot create a pthread key: thread heaps will not be handed back");
  }
  /* Programs may close stderr before exit (coreutils' close_stdout does): keep a private
   * duplicate for the statistics printed at exit. */
  txa_g.stats_fd = txalloc_opt(TXALLOC_OPT_STATS) ? fcntl(2, F_DUPFD_CLOEXEC, 64) : -1;
  if (txalloc_opt(TXALLOC_OPT_VERBOSE))
    txalloc_message("initialised: %d size classes up to %zu bytes", TXA_CLASSES, TXA_MEDIUM_MAX);
  __atomic_store_n(&txa_init_state, 2, __ATOMIC_RELEASE);
  /* The fork handlers are registered before any other thread may use the allocator (they
   * wait for TXA_INIT_DONE), so no lock can be held across a fork without them. */
  txa_fork_register();
  __atomic_store_n(&txa_init_state, TXA_INIT_DONE, __ATOMIC_RELEASE);
  tls_initialising = false;
}
