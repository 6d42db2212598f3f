/* Identifiers of the bounded allocator's options (thrifty_options.def), numbered after the
 * allocator's. */
#ifndef TXALLOC_THRIFTY_OPTIONS_H
#define TXALLOC_THRIFTY_OPTIONS_H

#include "alloc/alloc_options.h"

enum txalloc_thrifty_option_id {
  TXALLOC_OPT_THRIFTY_BEGIN_ = TXALLOC_OPT_ALLOC_END_ - 1,
#define TXALLOC_OPTION TXALLOC_OPTION_ID
#include "thrifty/thrifty_options.def"
#undef TXALLOC_OPTION
  TXALLOC_OPT_THRIFTY_END_
};

#endif
