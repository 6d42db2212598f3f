/* The options table of the whole library, assembled from every layer's
 * <layer>_options.def (all_layers.def). It sits above all layers so that none of them knows
 * the options of a layer above it; util's mechanism reads it through util/options.h. */
#include "alloc/alloc_options.h"
#include "thrifty/thrifty_options.h"
#include "tm/tm_options.h"
#include "txmem/txmem_options.h"
#include "util/options.h"

const txalloc_option_info txalloc_option_table[] = {
#define TXALLOC_OPTION(ID, layer_, name_, type_, min_, max_, choices_, def_, doc_)                 \
  {.name = name_,                                                                                  \
   .layer = layer_,                                                                                \
   .doc = doc_,                                                                                    \
   .type = TXALLOC_OPTION_##type_,                                                                 \
   .min = min_,                                                                                    \
   .max = max_,                                                                                    \
   .choices = choices_,                                                                            \
   .default_value = def_},
#include "options/all_layers.def"
#undef TXALLOC_OPTION
};

const size_t txalloc_option_table_size =
    sizeof txalloc_option_table / sizeof txalloc_option_table[0];

long txalloc_option_values[] = {
#define TXALLOC_OPTION(ID, layer, name, type, min, max, choices, def, doc) def,
#include "options/all_layers.def"
#undef TXALLOC_OPTION
};

/* Each identifier a layer's header computed is the position of its option in this table. */
enum assembled_position {
#define TXALLOC_OPTION(ID, layer, name, type, min, max, choices, def, doc) POSITION_##ID,
#include "options/all_layers.def"
#undef TXALLOC_OPTION
  POSITION_END_
};
#define TXALLOC_OPTION(ID, layer, name, type, min, max, choices, def, doc)                         \
  _Static_assert((int)TXALLOC_OPT_##ID == (int)POSITION_##ID,                                      \
                 "option " #ID " is out of the layers' order");
#include "options/all_layers.def"
#undef TXALLOC_OPTION
_Static_assert((int)TXALLOC_OPT_TM_END_ == (int)POSITION_END_, "the table lacks a layer's options");
_Static_assert(sizeof txalloc_option_values / sizeof txalloc_option_values[0] == POSITION_END_,
               "one value per option");
