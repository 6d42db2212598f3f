/* env_number.c: parses by hand and warns with write(2): stdio may allocate. */
#include "tools/env_number.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

uint64_t env_number(const char *name, uint64_t fallback, uint64_t min, uint64_t max) {
  const char *text = getenv(name);
  if (!text) return fallback;
  uint64_t v = 0;
  int ok = *text != '\0';
  for (const char *c = text; *c && ok; c++) {
    unsigned d = (unsigned)(*c - '0');
    if (d > 9 || v > (UINT64_MAX - d) / 10)
      ok = 0;
    else
      v = v * 10 + d;
  }
  if (ok && v >= min && v <= max) return v;
  say(name);
  say("=");
  say(text);
  say(" ignored: not a number in the accepted range; the default applies\n");
  return fallback;
}
