/* The thrifty tests' patterned objects: a header with the object's size and pattern, the
 * rest filled with the pattern's low byte. A broken pattern shows two live objects that
 * overlap, or a write into freed memory. */
#ifndef TXALLOC_TESTS_THRIFTY_TEST_OBJECT_H
#define TXALLOC_TESTS_THRIFTY_TEST_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "txalloc/thrifty.h"

typedef struct object {
  size_t size;
  unsigned pattern;
} object;

/* pre: o holds size >= sizeof *o bytes. */
static inline void object_fill(object *o, size_t size, unsigned pattern) {
  o->size = size;
  o->pattern = pattern;
  memset(o + 1, (int)(pattern & 0xff), size - sizeof *o);
}

/* Checks o's pattern, frees it with thrifty_free and says whether the pattern held. */
static inline bool object_check_and_free(object *o) {
  const unsigned char *b = (const unsigned char *)(o + 1);
  bool intact = true;
  for (size_t i = 0; i < o->size - sizeof *o && intact; i++) intact = b[i] == (o->pattern & 0xff);
  thrifty_free(o);
  return intact;
}

#endif
