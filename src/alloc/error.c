/* Bad calls (invalid or double free, corruption): one report path with a swappable hook.
 * The default prints "txalloc: <message>" to stderr and aborts; a user hook receives the
 * kind, the pointer and the message, and the bad call then does nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc/internal.h"
#include "util/message.h"

static _Atomic(txalloc_error_fn) error_hook;
static _Atomic(void *) error_arg;

TXALLOC_API txalloc_error_fn txalloc_set_error_hook(txalloc_error_fn fn, void *arg) {
  atomic_store_explicit(&error_arg, arg, memory_order_relaxed);
  return atomic_exchange_explicit(&error_hook, fn, memory_order_acq_rel);
}

void txa_error(txalloc_error_kind kind, const void *ptr, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  TXA_GCOUNT(errors, 1);
  txalloc_error_fn fn = atomic_load_explicit(&error_hook, memory_order_acquire);
  if (fn) {
    fn(kind, ptr, msg, atomic_load_explicit(&error_arg, memory_order_relaxed));
    return;
  }
  txalloc_message("%s", msg);
  abort();
}
