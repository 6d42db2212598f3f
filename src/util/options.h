/* Internal view of the options table: fast reads by identifier. */
#ifndef TXALLOC_UTIL_OPTIONS_H
#define TXALLOC_UTIL_OPTIONS_H

#include "txalloc/options.h"

typedef enum txalloc_option_id {
#define TXALLOC_OPTION(ID, layer, name, type, min, max, choices, def, doc) TXALLOC_OPT_##ID,
#include "util/option_table.def"
#undef TXALLOC_OPTION
  TXALLOC_OPT_COUNT_
} txalloc_option_id;

/* Values, indexed by txalloc_option_id. Written by txalloc_options_init and
 * txalloc_option_set only; readers see the value current at their read. */
extern long txalloc_option_values[TXALLOC_OPT_COUNT_];

/* Reads the TXALLOC_* environment variables once. Safe to call from any thread, any
 * number of times, before malloc works (it never allocates). Warns about unknown
 * TXALLOC_* variables and bad values (the default is kept). */
void txalloc_options_init(void);

/* Writes word number `index` of a CHOICE option's '|'-separated `choices` into buf ("?"
 * when there is none); returns snprintf's count. */
int txalloc_format_choice(const char *choices, long index, char *buf, size_t len);

static inline long txalloc_opt(txalloc_option_id id) {
  txalloc_options_init();
  return __atomic_load_n(&txalloc_option_values[id], __ATOMIC_RELAXED);
}

#endif
