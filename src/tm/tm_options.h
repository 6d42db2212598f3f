/* Identifiers of the transactional runtime's options (tm_options.def), numbered after the
 * txmem layer's. Whatever an entry of tm_options.def names (e.g. a `choices` string built
 * elsewhere) is declared here, before the assembly includes the .def. */
#ifndef TXALLOC_TM_OPTIONS_H
#define TXALLOC_TM_OPTIONS_H

#include "txmem/txmem_options.h"

/* TXALLOC_TM's choices, "|stm|glock|...": one word per line of tm_backends.def, each
 * after a '|' (tm_backends.c); the option takes them from the second character. */
extern const char tm_backend_choices[];

enum txalloc_tm_option_id {
  TXALLOC_OPT_TM_BEGIN_ = TXALLOC_OPT_TXMEM_END_ - 1,
#define TXALLOC_OPTION TXALLOC_OPTION_ID
#include "tm/tm_options.def"
#undef TXALLOC_OPTION
  TXALLOC_OPT_TM_END_
};

#endif
