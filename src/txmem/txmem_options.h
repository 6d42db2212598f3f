/* Identifiers of the transaction-aware allocation layer's options (txmem_options.def),
 * numbered after the bounded allocator's. */
#ifndef TXALLOC_TXMEM_OPTIONS_H
#define TXALLOC_TXMEM_OPTIONS_H

#include "thrifty/thrifty_options.h"

enum txalloc_txmem_option_id {
  TXALLOC_OPT_TXMEM_BEGIN_ = TXALLOC_OPT_THRIFTY_END_ - 1,
#define TXALLOC_OPTION TXALLOC_OPTION_ID
#include "txmem/txmem_options.def"
#undef TXALLOC_OPTION
  TXALLOC_OPT_TXMEM_END_
};

#endif
