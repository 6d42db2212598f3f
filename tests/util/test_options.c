/* The options table: lookup by every spelling, parsing of each type, range and choice
 * errors with messages that name the problem, the environment at first use, and the check
 * of the environment that refuses what the library would only warn about. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "txalloc/options.h"

/* txalloc_options_check_env reports each unknown variable and each bad value, lets the
 * tooling's variables pass, and applies nothing. Runs after the first use. */
static void test_check_env(int verbose) {
  char err[512];
  CHECK(txalloc_options_check_env(err, sizeof err) == 1); /* TXALLOC_STATS=maybe */
  CHECKF(strstr(err, "TXALLOC_STATS=maybe") && strstr(err, "boolean"), "message: %s", err);
  CHECKF(strchr(err, '\n') == NULL, "one line: %s", err);

  unsetenv("TXALLOC_STATS");
  setenv("TXALLOC_TEST_SCALE", "0.2", 1);
  setenv("TXALLOC_BUILD_DIR", "/nowhere", 1);
  setenv("TXALLOC_VERBOSE", "0", 1);
  setenv("TXALLOC_DECOMMIT_DELAY_MS", "1000", 1);
  CHECKF(txalloc_options_check_env(err, sizeof err) == 0, "message: %s", err);
  CHECK(err[0] == '\0');
  CHECK(txalloc_option_value((size_t)verbose) == 1); /* checked, not applied */

  setenv("TXALLOC_NO_SUCH_OPTION", "1", 1);
  CHECK(txalloc_options_check_env(err, sizeof err) == 1);
  CHECKF(strstr(err, "unknown variable TXALLOC_NO_SUCH_OPTION"), "message: %s", err);
  setenv("TXALLOC_DECOMMIT_DELAY_MS", "-5", 1);
  CHECK(txalloc_options_check_env(err, sizeof err) == 2);
  CHECK(txalloc_options_check_env(NULL, 0) == 2);
  unsetenv("TXALLOC_NO_SUCH_OPTION");
  CHECK(txalloc_options_check_env(err, sizeof err) == 1);
  CHECKF(strstr(err, "TXALLOC_DECOMMIT_DELAY_MS=-5") && strstr(err, "decommit_delay_ms"),
         "message: %s", err);
}

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
  test_check_env(verbose);
  return check_exit();
}
