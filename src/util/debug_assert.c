/* The failure path of TXALLOC_ASSERT (util/debug_assert.h). Compiled in every build, so that
 * objects built with and without TXALLOC_DEBUG link together. */
#include "util/debug_assert.h"

#include <stdlib.h>

#include "util/message.h"

void txalloc_assert_fail(const char *cond, const char *file, int line, const char *func) {
  txalloc_message("assertion failed: %s:%d: %s: %s", file, line, func, cond);
  abort();
}
