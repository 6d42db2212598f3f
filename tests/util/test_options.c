/* The options table: lookup by every spelling, parsing of each type, range and choice
 * errors with messages that name the problem, and the environment at first use. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "txalloc/options.h"

int main(void) {
  /* Set before the first use, so txalloc_options_init reads it. */
  setenv("TXALLOC_VERBOSE", "yes", 1);
  setenv("TXALLOC_STATS", "maybe", 1); /* bad value: warned about, default kept */

  int verbose = txalloc_option_find("verbose");
  int stats = txalloc_option_find("stats");
  CHECK(verbose >= 0 && stats >= 0);
  CHECK(txalloc_option_find("VERBOSE") == verbose);
  CHECK(txalloc_option_find("TXALLOC_VERBOSE") == verbose);
  CHECK(txalloc_option_find("txalloc-verbose") == verbose);
  CHECK(txalloc_option_find("no_such_option") == -1);
  CHECK(txalloc_option_value((size_t)verbose) == 1);
  CHECK(txalloc_option_value((size_t)stats) == 0);

  char err[2048];
  CHECK(txalloc_option_set("stats", "on", err, sizeof err) == 0);
  CHECK(txalloc_option_value((size_t)stats) == 1);
  CHECK(txalloc_option_set("stats", "2", err, sizeof err) == -1);
  CHECKF(strstr(err, "stats") && strstr(err, "boolean"), "message: %s", err);
  CHECK(txalloc_option_value((size_t)stats) == 1); /* unchanged by a bad value */

  CHECK(txalloc_option_set("bogus", "1", err, sizeof err) == -1);
  CHECKF(strstr(err, "unknown option 'bogus'") && strstr(err, "verbose"), "message: %s", err);

  /* Every option's default is within its own range and formats back. */
  for (size_t i = 0; i < txalloc_option_count(); i++) {
    const txalloc_option_info *o = txalloc_option_at(i);
    CHECK(o && o->name && o->doc && o->layer);
    if (o->type == TXALLOC_OPTION_INT || o->type == TXALLOC_OPTION_SIZE)
      CHECKF(o->default_value >= o->min && o->default_value <= o->max, "%s", o->name);
    char text[128];
    CHECK(txalloc_option_format(i, text, sizeof text) > 0);
    if (o->type == TXALLOC_OPTION_CHOICE) {
      CHECK(o->choices != NULL);
      CHECKF(txalloc_option_set(o->name, text, err, sizeof err) == 0, "%s: %s", o->name, err);
      CHECK(txalloc_option_set(o->name, "not-a-choice", err, sizeof err) == -1);
      CHECKF(strstr(err, o->choices) != NULL, "message: %s", err);
    }
    if (o->type == TXALLOC_OPTION_SIZE && o->max >= 4096 && o->min <= 4096) {
      CHECK(txalloc_option_set(o->name, "4k", err, sizeof err) == 0);
      CHECK(txalloc_option_value(i) == 4096);
      CHECK(txalloc_option_set(o->name, "4q", err, sizeof err) == -1);
    }
    if (o->type == TXALLOC_OPTION_INT && o->max < LONG_MAX) {
      char above[64];
      snprintf(above, sizeof above, "%ld", o->max + 1);
      CHECK(txalloc_option_set(o->name, above, err, sizeof err) == -1);
    }
  }
  return check_exit();
}
