/* The layer's configuration, read from the options table once, at the first use. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "txmem/txmem_internal.h"
#include "txmem/txmem_options.h"

txmem_config txmem_cfg;
_Atomic int txmem_cfg_ready;

static void config_read(void) {
  txmem_cfg.strategy = (int)txalloc_opt(TXALLOC_OPT_TXMEM);
  txmem_cfg.safe_reuse = txalloc_opt(TXALLOC_OPT_SAFE_REUSE) != 0;
  txmem_cfg.limbo_max = (size_t)txalloc_opt(TXALLOC_OPT_TXMEM_LIMBO_MAX);
  txmem_cfg.sticky = txmem_cfg.safe_reuse && txalloc_opt(TXALLOC_OPT_TXMEM_MEMBARRIER) &&
                     txmem_membarrier_register();
  atomic_store_explicit(&txmem_cfg_ready, 1, memory_order_release);
}

bool txmem_membarrier_register(void) {
#if defined(__SANITIZE_THREAD__) || !defined(SYS_membarrier)
  return false;
#else
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

/* pthread_once never allocates: safe before malloc works. */
void txmem_config_init_slow(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, config_read);
}

txmem_strategy txmem_get_strategy(void) { return (txmem_strategy)txmem_config_get()->strategy; }

bool txmem_safe_reuse(void) { return txmem_config_get()->safe_reuse; }

bool txmem_membarrier_in_force(void) { return txmem_config_get()->sticky; }

const char *txmem_strategy_name(txmem_strategy s) {
  switch (s) {
  case TXMEM_WRAP: return "wrap";
  case TXMEM_WRAP_CACHE: return "wrap-cache";
  case TXMEM_TXALLOC: return "txalloc";
  case TXMEM_THRIFTY: return "thrifty";
  }
  return "unknown";
}
