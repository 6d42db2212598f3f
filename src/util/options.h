/* The options mechanism: parsing, the environment, fast reads by identifier.
 *
 * util owns the mechanism and its own options, nothing more. The table of every layer's
 * options is assembled above all layers (src/options/option_table.c), which defines the
 * three objects declared here. Each layer lists its options in <layer>/<layer>_options.def,
 * one X-macro entry each:
 *
 *   TXALLOC_OPTION(ID, layer, name, type, min, max, choices, default, doc)
 *     ID       identifier; code reads the value with txalloc_opt(TXALLOC_OPT_ID)
 *     layer    "util", "alloc", ...; name: canonical, lower case, words joined by '_'
 *     type     BOOL | INT | SIZE | CHOICE
 *     choices  CHOICE: a constant expression of type const char *, "a|b|c"; the default is
 *              an index into it. Other types: NULL
 *
 * and numbers them in <layer>/<layer>_options.h after the options of the layer below it
 * (see TXALLOC_OPTION_ID): the table lists the layers in that same order, which the
 * assembly checks at compile time. */
#ifndef TXALLOC_UTIL_OPTIONS_H
#define TXALLOC_UTIL_OPTIONS_H

#include "txalloc/options.h"

/* Expands a table entry to its identifier. A layer's header numbers its options with
 *   enum { TXALLOC_OPT_<LAYER>_BEGIN_ = TXALLOC_OPT_<BELOW>_END_ - 1,
 *   #define TXALLOC_OPTION TXALLOC_OPTION_ID
 *   #include "<layer>/<layer>_options.def"
 *   #undef TXALLOC_OPTION
 *     TXALLOC_OPT_<LAYER>_END_ };
 * (BEGIN_ is one below the first identifier, so that an empty layer adds nothing). */
#define TXALLOC_OPTION_ID(ID, layer, name, type, min, max, choices, def, doc) TXALLOC_OPT_##ID,

enum txalloc_util_option_id {
#define TXALLOC_OPTION TXALLOC_OPTION_ID
#include "util/util_options.def"
#undef TXALLOC_OPTION
  TXALLOC_OPT_UTIL_END_
};

/* An option's identifier, TXALLOC_OPT_<ID> of its layer's enum: its index in the table. */
typedef int txalloc_option_id;

/* The assembled table: descriptions and current values, indexed by identifier. Values
 * are written by txalloc_options_init and txalloc_option_set only; readers see the value
 * current at their read. */
extern const txalloc_option_info txalloc_option_table[];
extern const size_t txalloc_option_table_size;
extern long txalloc_option_values[];

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
