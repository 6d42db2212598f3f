/* Identifiers of the allocator's options (alloc_options.def), numbered after util's. */
#ifndef TXALLOC_ALLOC_OPTIONS_H
#define TXALLOC_ALLOC_OPTIONS_H

#include "util/options.h"

enum txalloc_alloc_option_id {
  TXALLOC_OPT_ALLOC_BEGIN_ = TXALLOC_OPT_UTIL_END_ - 1,
#define TXALLOC_OPTION TXALLOC_OPTION_ID
#include "alloc/alloc_options.def"
#undef TXALLOC_OPTION
  TXALLOC_OPT_ALLOC_END_
};

#endif
