/* Test set-up: sets a txalloc option (before the layer that reads it first starts), and
 * ends the test with status 2 when the option is refused. Shared by the tm and txmem
 * tests. */
#ifndef TXALLOC_TESTS_SET_OPTION_H
#define TXALLOC_TESTS_SET_OPTION_H

#include <stdio.h>
#include <stdlib.h>

#include "txalloc/options.h"

static inline void test_set_option(const char *name, const char *value) {
  char err[1024];
  if (txalloc_option_set(name, value, err, sizeof err) != 0) {
    fprintf(stderr, "cannot set option %s=%s: %s\n", name, value, err);
    exit(2);
  }
}

#endif
